import { expect } from "chai";
import { openDatabase, type Database } from "../../src/db/database.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";

async function estimatedRows(db: Database, table: string): Promise<number> {
  const { rows } = (await db.knex.raw("select reltuples::float8 as n from pg_class where relname = ? and relkind = 'r'", [table])) as { rows: { n: number }[] };
  return Number(rows[0]?.n);
}

async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect.fail("the condition never held");
}

describe("statistics of the embedded database", function () {
  this.timeout(60_000);
  let db: Database;
  before(async () => {
    db = await openDatabase({ databaseUrl: undefined, dataDir: "memory://", poolSize: 1 });
  });
  after(async () => {
    await db.close();
  });

  it("are taken at start and renewed after bulk writes past the threshold, not after small ones", async () => {
    // Analysed at start: an empty table counts 0 rows, never analysed would be -1.
    expect(await estimatedRows(db, "entities")).to.equal(0);
    const stored = await upsertEntities(db.knex, "t", [{ type: "T", key: "one" }]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await estimatedRows(db, "entities")).to.equal(0);

    const many = await upsertEntities(db.knex, "t", Array.from({ length: 600 }, (_, i) => ({ type: "T", key: `k${i}` })));
    await eventually(async () => (await estimatedRows(db, "entities")) === 601);
    await createLinks(db.knex, "t", many.map((e) => ({ from: { id: stored[0]!.id }, relation: "r", to: { id: e.id } })));
    await eventually(async () => (await estimatedRows(db, "links")) === 600);
  });

  it("empty the attribute index's pending list with them, which a small write leaves filled", async () => {
    // How many pages of the pending list this call moved into the index (and so emptied).
    const cleaned = async () => {
      const { rows } = (await db.knex.raw("select gin_clean_pending_list('entities_scoped_attributes'::regclass)::int as pages")) as { rows: { pages: number }[] };
      return rows[0]!.pages;
    };
    await cleaned();
    const before = await estimatedRows(db, "entities");
    await upsertEntities(db.knex, "p", [{ type: "P", key: "one", attributes: { city: "C1" } }]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Below the threshold: no renewal, the new entry waits in the pending list.
    expect(await estimatedRows(db, "entities")).to.equal(before);
    expect(await cleaned()).to.be.greaterThan(0);

    await upsertEntities(db.knex, "p", Array.from({ length: 700 }, (_, i) => ({ type: "P", key: `k${i}`, attributes: { city: `C${i % 7}`, tags: [`t${i}`] } })));
    // The list is emptied before the ANALYZE, so new statistics mean an empty list.
    await eventually(async () => (await estimatedRows(db, "entities")) === before + 701);
    expect(await cleaned()).to.equal(0);
  });
});
