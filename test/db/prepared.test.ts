import { expect } from "chai";
import { openDatabase, PREPARED_PER_CONNECTION, preparedName, runPrepared, type Database } from "../../src/db/database.js";
import { TEST_DATABASE_URL } from "../support/backends.js";

/**
 * Graph walks run as named statements on PostgreSQL ({@link runPrepared}): parsed once per
 * connection, not at every request. A connection keeps a bounded number of them, and a statement
 * whose table changed under its plan is prepared afresh rather than failing.
 */
describe("prepared statements on PostgreSQL (graph session)", function () {
  let db: Database;
  const table = `prepared_probe_${process.pid}`;

  before(async () => {
    // One connection: every statement below meets the same server session.
    db = await openDatabase({ databaseUrl: TEST_DATABASE_URL, dataDir: "", poolSize: 1 });
    await db.knex.raw(`drop table if exists ${table}`);
    await db.knex.raw(`create table ${table} (id int primary key, label text)`);
    await db.knex(table).insert([{ id: 1, label: "one" }, { id: 2, label: "two" }]);
  });
  after(async () => {
    await db?.knex.raw(`drop table if exists ${table}`);
    await db?.close();
  });

  const named = async (sql: string, bindings: unknown[] = []) => ({ rows: await runPrepared(db.graph.knex, sql, bindings) });
  const preparedOnConnection = async () =>
    ((await db.graph.knex.raw("select name, statement from pg_prepared_statements order by prepare_time")) as { rows: { name: string; statement: string }[] }).rows;

  it("names a statement by its text and prepares it once on the connection", async () => {
    const sql = `select label from ${table} where id = ?`;
    expect(preparedName(sql)).to.equal(preparedName(`select label from ${table} where id = ?`));
    expect(preparedName(sql)).not.to.equal(preparedName(`${sql} `));
    const first = (await named(sql, [1])) as { rows: { label: string }[] };
    const second = (await named(sql, [2])) as { rows: { label: string }[] };
    expect(first.rows).to.deep.equal([{ label: "one" }]);
    expect(second.rows).to.deep.equal([{ label: "two" }]);
    const statements = (await preparedOnConnection()).filter((s) => s.name === preparedName(sql));
    expect(statements).to.have.length(1);
    expect(statements[0]!.statement).to.include(`from ${table} where id = $1`);
  });

  it("takes plain placeholders only: an identifier binding or an escaped one is refused before anything runs", async () => {
    for (const sql of [`select ?? from ${table}`, `select label from ${table} where label = '\\?' and id = ?`]) {
      let refused: unknown;
      await runPrepared(db.graph.knex, sql, [1]).catch((err: unknown) => (refused = err));
      expect(refused, sql).to.be.instanceOf(Error);
      expect((refused as Error).message).to.match(/plain `\?` placeholders only/);
    }
    expect((await preparedOnConnection()).map((s) => s.statement).filter((s) => s.includes("??") || s.includes("\\?"))).to.deep.equal([]);
  });

  it(`keeps at most ${PREPARED_PER_CONNECTION} per connection, the most recently used`, async () => {
    const texts = Array.from({ length: PREPARED_PER_CONNECTION + 10 }, (_, i) => `select ${i}::int as n, label from ${table} where id = ?`);
    for (const [i, sql] of texts.entries()) {
      const result = (await named(sql, [1])) as { rows: { n: number; label: string }[] };
      expect(result.rows).to.deep.equal([{ n: i, label: "one" }]);
    }
    const names = new Set((await preparedOnConnection()).map((s) => s.name));
    expect(names.size).to.be.at.most(PREPARED_PER_CONNECTION);
    // The latest ones are kept, the first ones were deallocated, and an evicted one runs again.
    for (const sql of texts.slice(-PREPARED_PER_CONNECTION + 1)) expect(names.has(preparedName(sql)), sql).to.equal(true);
    expect(names.has(preparedName(texts[0]!))).to.equal(false);
    expect(((await named(texts[0]!, [2])) as { rows: unknown[] }).rows).to.deep.equal([{ n: 0, label: "two" }]);
  });

  it("plans the walks once per statement on the graph pool, never by a scan of every tenant's rows", async () => {
    // Why these plans are safe for every tenant: test/db/plan-safety.test.ts.
    const shown = (await db.graph.knex.raw(
      "select current_setting('plan_cache_mode') as mode, current_setting('enable_seqscan') as seqscan, current_setting('join_collapse_limit') as collapse",
    )) as { rows: { mode: string; seqscan: string; collapse: string }[] };
    expect(shown.rows[0]).to.deep.equal({ mode: "force_generic_plan", seqscan: "off", collapse: "1" });
    // The main pool keeps PostgreSQL's defaults.
    const main = (await db.knex.raw("select current_setting('plan_cache_mode') as mode, current_setting('enable_seqscan') as seqscan")) as { rows: unknown[] };
    expect(main.rows[0]).to.deep.equal({ mode: "auto", seqscan: "on" });
  });

  it("prepares a statement afresh when its table changed under the plan", async () => {
    const sql = `select * from ${table} where id = ?`;
    expect(((await named(sql, [1])) as { rows: unknown[] }).rows).to.deep.equal([{ id: 1, label: "one" }]);
    await db.knex.raw(`alter table ${table} add column extra text default 'x'`);
    // Without the retry PostgreSQL answers "cached plan must not change result type".
    expect(((await named(sql, [1])) as { rows: unknown[] }).rows).to.deep.equal([{ id: 1, label: "one", extra: "x" }]);
  });
});
