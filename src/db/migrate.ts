import type { Knex } from "knex";
import { migrations as allMigrations, type Migration } from "./migrations.js";

/** Arbitrary constant naming this service's migration lock among PostgreSQL advisory locks. */
const MIGRATION_LOCK = 7_246_311_905;

/**
 * Brings the schema up to date. Idempotent, and safe when several processes start at once: the
 * whole run is one transaction holding a transaction-scoped advisory lock, so a second process
 * waits, then finds every migration recorded and does nothing. A failing migration rolls back
 * entirely (PostgreSQL DDL is transactional).
 */
export async function migrate(knex: Knex, migrations: Migration[] = allMigrations): Promise<string[]> {
  return knex.transaction(async (trx) => {
    await trx.raw("select pg_advisory_xact_lock(?)", [MIGRATION_LOCK]);
    await trx.raw(`create table if not exists schema_migrations (
      id text primary key,
      applied_at timestamptz not null default now()
    )`);
    const rows: { id: string }[] = await trx("schema_migrations").select("id");
    const done = new Set(rows.map((r) => r.id));
    const applied: string[] = [];
    for (const migration of migrations) {
      if (done.has(migration.id)) continue;
      for (const statement of migration.statements) await trx.raw(statement);
      await trx("schema_migrations").insert({ id: migration.id });
      applied.push(migration.id);
    }
    return applied;
  });
}
