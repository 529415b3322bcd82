import { expect } from "chai";
import { describeEachBackend } from "../support/backends.js";

/**
 * The keys and indexes that do not begin with `tenant`, each with why (docs/explanations/distribution.md):
 * none of them holds a tenant's data, so none is distributed by tenant.
 */
const NOT_BY_TENANT = new Map<string, string>([
  ["schema_migrations_pkey", "the schema's own record of its migrations, one row per migration"],
  ["tasks_in_hand_pkey", "engine tasks are taken before their tenant is known: keyed by the engine's own key"],
  ["stream_payloads_pkey", "a live-stream message too long for a notification, read by every process and dropped within minutes"],
  ["stream_payloads_created_at", "the same rows, dropped by age across tenants"],
  ["stream_watchers_pkey", "which process watches which tenant: one row per process and tenant, renewed by the process"],
]);

/** A column, or an expression whose first argument is the column (the attribute index, migration 006). */
const leadsWithTenant = (first: string) => first === "tenant" || /^\w+\(tenant\b/.test(first);

/** The indexes that neither begin with tenant nor are listed in {@link NOT_BY_TENANT}. */
function offenders(all: IndexRow[]): string[] {
  return all.filter((r) => !leadsWithTenant(r.first) && !NOT_BY_TENANT.has(r.index)).map((r) => `${r.table}.${r.index} (${r.first})`);
}

interface IndexRow {
  table: string;
  index: string;
  first: string;
  primary: boolean;
  unique: boolean;
}

describeEachBackend("every key begins with the tenant, the distribution column", (ctx) => {
  /** Every index of every table of the schema (the partitions' own left out: they are their parent's), with its first key. */
  async function indexes(): Promise<IndexRow[]> {
    const { rows } = (await ctx.db.knex.raw(
      `select c.relname as "table", i.relname as "index", pg_get_indexdef(x.indexrelid, 1, true) as first, x.indisprimary as "primary", x.indisunique as "unique"
         from pg_index x
         join pg_class c on c.oid = x.indrelid
         join pg_class i on i.oid = x.indexrelid
        where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
        order by 1, 2`,
    )) as { rows: IndexRow[] };
    return rows;
  }

  it("gives every table a primary key", async () => {
    const { rows } = (await ctx.db.knex.raw(
      `select c.relname as "table" from pg_class c
        where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
          and not exists (select 1 from pg_index x where x.indrelid = c.oid and x.indisprimary)`,
    )) as { rows: { table: string }[] };
    expect(rows).to.deep.equal([]);
  });

  it("begins every primary key, unique key and index with tenant, but for the exceptions listed", async () => {
    const all = await indexes();
    expect(all.map((r) => r.index)).to.include.members(["events_pkey", "entities_pkey", "links_pkey", "links_reverse", ...NOT_BY_TENANT.keys()]);
    expect(offenders(all), "every key must begin with tenant, or be listed with its reason in NOT_BY_TENANT").to.deep.equal([]);
    // An exception that starts to lead with tenant, or no longer exists, is taken off the list.
    const stale = [...NOT_BY_TENANT.keys()].filter((name) => !all.some((r) => r.index === name && !leadsWithTenant(r.first)));
    expect(stale).to.deep.equal([]);
  });

  it("fails on a planted table keyed without the tenant", async () => {
    await ctx.db.knex.raw("create table planted_no_tenant (id uuid primary key, tenant text not null, key text not null, unique (tenant, key))");
    await ctx.db.knex.raw("create unique index planted_by_key on planted_no_tenant (key, tenant)");
    try {
      expect(offenders(await indexes())).to.deep.equal(["planted_no_tenant.planted_by_key (key)", "planted_no_tenant.planted_no_tenant_pkey (id)"]);
    } finally {
      await ctx.db.knex.raw("drop table planted_no_tenant");
    }
  });
});
