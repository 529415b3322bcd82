import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import knexFactory, { type Knex } from "knex";
import { openDatabase } from "../../src/db/database.js";
import { migrate } from "../../src/db/migrate.js";
import { migrations } from "../../src/db/migrations.js";
import { describeEachBackend, TEST_DATABASE_URL } from "../support/backends.js";

async function indexDefinitions(knex: Knex, table: string): Promise<string[]> {
  const { rows } = (await knex.raw("select indexdef from pg_indexes where tablename = ? and schemaname = current_schema()", [table])) as {
    rows: { indexdef: string }[];
  };
  return rows.map((r) => r.indexdef.replace(/^.* USING /, "USING "));
}

describeEachBackend("schema", (ctx) => {
  it("creates every table of the data model", async () => {
    const { rows } = (await ctx.db.knex.raw(
      "select table_name from information_schema.tables where table_schema = current_schema() order by table_name",
    )) as { rows: { table_name: string }[] };
    expect(rows.map((r) => r.table_name)).to.include.members([
      "api_definitions",
      "calculation_definitions",
      "entities",
      "events",
      "links",
      "schema_migrations",
      "tasks_in_hand",
    ]);
  });

  it("leads every key with the tenant and indexes what the queries need", async () => {
    const knex = ctx.db.knex;
    expect(await indexDefinitions(knex, "entities")).to.have.members([
      "USING btree (tenant, id)",
      "USING btree (tenant, type, key)",
      // Attributes under their tenant and type: a lookup reads one tenant's matches only (migration
      // 006); new entries wait in a pending list of at most 64 kB, which every lookup reads (015).
      "USING gin (graph_scoped_attributes(tenant, type, attributes) jsonb_path_ops) WITH (gin_pending_list_limit='64')",
    ]);
    expect(await indexDefinitions(knex, "links")).to.have.members([
      "USING btree (tenant, from_id, relation, to_id)",
      "USING btree (tenant, to_id, relation, from_id)",
    ]);
    expect(await indexDefinitions(knex, "events")).to.have.members(["USING btree (tenant, item_id, ts, source_id)"]);
    expect(await indexDefinitions(knex, "api_definitions")).to.have.members(["USING btree (tenant, id)", "USING btree (tenant, external_id)"]);
    expect(await indexDefinitions(knex, "calculation_definitions")).to.have.members([
      "USING btree (tenant, id)",
      "USING btree (tenant, external_id)",
    ]);
    // Engine tasks are taken before their tenant is known: keyed by the engine's own key.
    expect(await indexDefinitions(knex, "tasks_in_hand")).to.have.members(["USING btree (engine, task_key)"]);
  });

  it("records every migration once and does nothing on a second run", async () => {
    expect(await migrate(ctx.db.knex)).to.deep.equal([]);
    const rows: { id: string }[] = await ctx.db.knex("schema_migrations").select("id").orderBy("id");
    expect(rows.map((r) => r.id)).to.deep.equal(migrations.map((m) => m.id));
  });

  it("keeps entities unique on (tenant, type, key), but not across tenants", async () => {
    const knex = ctx.db.knex;
    const row = { tenant: ctx.tenant, type: "Agreement", key: "A-1" };
    await knex("entities").insert({ ...row, id: randomUUID() });
    let error: unknown;
    await knex("entities")
      .insert({ ...row, id: randomUUID() })
      .catch((err: unknown) => (error = err));
    expect((error as { code?: string }).code).to.equal("23505");
    await knex("entities").insert({ ...row, tenant: `${ctx.tenant}-other`, id: randomUUID() });
    const [{ n }] = (await knex("entities").where({ type: "Agreement", key: "A-1" }).whereIn("tenant", [ctx.tenant, `${ctx.tenant}-other`]).select(knex.raw("count(*)::int as n"))) as { n: number }[];
    expect(n).to.equal(2);
  });

  it("keys events by (tenant, item, timestamp, source)", async () => {
    const knex = ctx.db.knex;
    const event = { tenant: ctx.tenant, item_id: randomUUID(), ts: "2024-03-31T00:00:00Z", source_id: "s1", value: 1 };
    await knex("events").insert(event);
    await knex("events").insert({ ...event, source_id: "s2", value: 2 });
    await knex("events").insert({ ...event, value: 3 }).onConflict(["tenant", "item_id", "ts", "source_id"]).merge();
    const rows: { source_id: string; value: number }[] = await knex("events").where({ tenant: ctx.tenant }).orderBy("source_id").select("source_id", "value");
    expect(rows).to.deep.equal([
      { source_id: "s1", value: 3 },
      { source_id: "s2", value: 2 },
    ]);
  });
});

describe("migrations on a fresh PostgreSQL schema", function () {
  this.timeout(30_000);
  const schema = `migrate_${randomUUID().replace(/-/g, "")}`;
  const knexes: Knex[] = [];
  const connect = () => {
    const knex = knexFactory({ client: "pg", connection: TEST_DATABASE_URL, searchPath: [schema], pool: { min: 0, max: 2 } });
    knexes.push(knex);
    return knex;
  };

  before(async () => {
    await connect().raw(`create schema ${schema}`);
  });
  after(async () => {
    await knexes[0]?.raw(`drop schema ${schema} cascade`);
    await Promise.all(knexes.map((k) => k.destroy()));
  });

  it("apply once when two processes start at the same moment", async () => {
    const results = await Promise.all([migrate(connect()), migrate(connect()), migrate(connect())]);
    const applied = results.flat();
    expect(applied).to.deep.equal(migrations.map((m) => m.id));
    const { rows } = (await knexes[0]!.raw(`select count(*)::int as n from ${schema}.schema_migrations`)) as { rows: { n: number }[] };
    expect(rows[0]?.n).to.equal(migrations.length);
  });

  it("roll back a failing migration entirely", async () => {
    const broken = [...migrations, { id: "999_broken", statements: ["create table half_done (x int)", "select * from no_such_table"] }];
    let error: unknown;
    await migrate(connect(), broken).catch((err: unknown) => (error = err));
    expect(error).to.be.instanceOf(Error);
    const { rows } = (await knexes[0]!.raw("select to_regclass(?) as t", [`${schema}.half_done`])) as { rows: { t: string | null }[] };
    expect(rows[0]?.t).to.equal(null);
  });
});

describe("embedded database directory", function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "embedded-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps its data across a restart", async () => {
    const first = await openDatabase({ databaseUrl: undefined, dataDir: dir, poolSize: 1 });
    await first.knex("entities").insert({ tenant: "t", id: randomUUID(), type: "T", key: "kept" });
    await first.close();
    const second = await openDatabase({ databaseUrl: undefined, dataDir: dir, poolSize: 1 });
    try {
      const rows: { key: string }[] = await second.knex("entities").where({ tenant: "t" }).select("key");
      expect(rows).to.deep.equal([{ key: "kept" }]);
    } finally {
      await second.close();
    }
  });

  it("refuses a second opener while the first one holds it", async () => {
    const first = await openDatabase({ databaseUrl: undefined, dataDir: dir, poolSize: 1 });
    try {
      let error: unknown;
      await openDatabase({ databaseUrl: undefined, dataDir: dir, poolSize: 1 }).catch((err: unknown) => (error = err));
      expect((error as Error).message).to.match(/^DATA_DIR .* is in use by process \d+/);
    } finally {
      await first.close();
    }
  });
});
