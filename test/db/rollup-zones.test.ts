import { expect } from "chai";
import { upsertEntities } from "../../src/graph/entities.js";
import { ingestEvents } from "../../src/timeseries/ingest.js";
import { reconcile } from "../../src/timeseries/rollup-store.js";
import { ensureZone } from "../../src/timeseries/rollup-zones.js";
import { describeEachBackend } from "../support/backends.js";

/**
 * A zone's first build (src/timeseries/rollup-zones.ts) against the reconcile that keeps it
 * afterwards: the same day, month and pack rows, whether the build ran in one statement a step or
 * in statements the pace sizes (as on the embedded database), and in the latter the event loop turns.
 */

const FROM = Date.parse("2026-01-30T00:00:00Z");

describeEachBackend("a zone's first build of the rollups", (ctx) => {
  it("in steps (a bound of 0 ms) or at once, makes the rows a reconcile of every day makes", async function () {
    this.timeout(120_000);
    const ids = (
      await upsertEntities(ctx.db.knex, ctx.tenant, [
        { type: "Item", key: "a", attributes: { itemAction: "INGEST" } },
        { type: "Item", key: "b", attributes: { itemAction: "INGEST" } },
      ])
    ).map((e) => e.id);
    // Five days across a month's end, an event every 37 minutes from two sources, and one event of
    // the second item 200 days later (another half-year, the days between empty).
    const events = Array.from({ length: Math.floor((5 * 86_400_000) / 2_220_000) }, (_, k) => [
      { itemId: ids[0], timestamp: new Date(FROM + k * 2_220_000).toISOString(), sourceId: "a", value: ((k * 37) % 101) / 4 },
      { itemId: ids[1], timestamp: new Date(FROM + 43_200_000 + k * 2_220_000).toISOString(), sourceId: "b", value: -k / 8 },
    ]).flat();
    await ingestEvents(ctx.db.knex, ctx.tenant, [...events, { itemId: ids[1], timestamp: new Date(FROM + 200 * 86_400_000).toISOString(), value: 2 }]);
    await reconcile(ctx.db.knex, ctx.tenant, {}, undefined, Number.POSITIVE_INFINITY);

    // The loop's turns while each zone is built (a timer of the next turn, set again at each).
    const turnsDuring = async (build: Promise<void>) => {
      let turns = 0;
      let done = false;
      const turn = () => {
        turns++;
        if (!done) setImmediate(turn);
      };
      setImmediate(turn);
      await build;
      done = true;
      return turns;
    };
    const stepped = await turnsDuring(ensureZone(ctx.db.knex, ctx.tenant, "Asia/Kathmandu", 0));
    await ensureZone(ctx.db.knex, ctx.tenant, "America/St_Johns", Number.POSITIVE_INFINITY);
    await ensureZone(ctx.db.knex, ctx.tenant, "Europe/Brussels");
    // In steps, a statement at a time with a turn of the loop before each: the first item's days one
    // at a time while the pace grows, and each day three statements or more.
    expect(stepped).to.be.greaterThan(20);

    const snapshot = async () => ({
      periods: await ctx.db.knex("rollup_periods").where({ tenant: ctx.tenant }).orderBy(["item_id", "zone", "grain", "period"]).select("*"),
      packs: await ctx.db.knex("rollup_day_packs").where({ tenant: ctx.tenant }).orderBy(["item_id", "zone", "half"]).select("*"),
    });
    const built = await snapshot();
    // Days of both items in three zones, their months, and packs of two half-years for the second item.
    expect(new Set(built.periods.map((p: { zone: string }) => p.zone))).to.deep.equal(new Set(["Asia/Kathmandu", "America/St_Johns", "Europe/Brussels"]));
    expect(built.packs.filter((p: { item_id: string }) => p.item_id === ids[1]).length).to.equal(6);

    // The same rows from the reconcile: spoiled, every day with a cell marked, rebuilt in one statement a step.
    await ctx.db.knex("rollup_periods").where({ tenant: ctx.tenant }).update({ n: 0, sum: 0 });
    await ctx.db.knex("rollup_day_packs").where({ tenant: ctx.tenant }).update({ n: Buffer.alloc(4) });
    await ctx.db.knex.raw(
      "insert into rollup_dirty (tenant, item_id, day) select tenant, item_id, (cell at time zone 'UTC')::date from rollup_cells where tenant = ? group by 1, 2, 3",
      [ctx.tenant],
    );
    await reconcile(ctx.db.knex, ctx.tenant, {}, undefined, Number.POSITIVE_INFINITY);
    expect(await snapshot()).to.deep.equal(built);
  });
});

describeEachBackend("the reconcile's cells statements", (ctx) => {
  it("read each marked range by an index range scan, also once the tables have statistics", async function () {
    this.timeout(120_000);
    const ids = (
      await upsertEntities(
        ctx.db.knex,
        ctx.tenant,
        ["a", "b", "c"].map((key) => ({ type: "Item", key, attributes: { itemAction: "INGEST" } })),
      )
    ).map((e) => e.id);
    // 40 days of quarter hours of three items, rolled up and analysed; then one event more on each of 20 of those days.
    const quarterHours = Array.from({ length: 40 * 96 }, (_, q) => FROM + q * 900_000);
    await ingestEvents(ctx.db.knex, ctx.tenant, ids.flatMap((itemId, k) => quarterHours.map((t) => ({ itemId, timestamp: new Date(t).toISOString(), value: k }))));
    await reconcile(ctx.db.knex, ctx.tenant, {}, undefined, Number.POSITIVE_INFINITY);
    await ctx.db.knex.raw("analyze rollup_cells, events");
    await ingestEvents(ctx.db.knex, ctx.tenant, ids.flatMap((itemId) => Array.from({ length: 20 }, (_, d) => ({ itemId, timestamp: new Date(FROM + d * 2 * 86_400_000 + 60_000).toISOString(), value: 9 }))));
    const statements: { sql: string; bindings: unknown[] }[] = [];
    const capture = (query: { sql: string; bindings: unknown[] }) => {
      if (/^\s*(delete from rollup_cells|insert into rollup_cells)/.test(query.sql)) statements.push(query);
    };
    ctx.db.knex.on("query", capture);
    try {
      await reconcile(ctx.db.knex, ctx.tenant, {}, undefined, Number.POSITIVE_INFINITY);
    } finally {
      ctx.db.knex.removeListener("query", capture);
    }
    expect(new Set(statements.map((s) => s.sql.trim().slice(0, 6)))).to.deep.equal(new Set(["delete", "insert"]));
    for (const { sql, bindings } of statements) {
      const plan = await ctx.db.knex.transaction(async (trx) => {
        const { rows } = (await trx.raw(`explain ${sql.replace(/\$\d+/g, "?")}`, bindings as never[])) as { rows: { "QUERY PLAN": string }[] };
        return rows.map((r) => r["QUERY PLAN"]).join("\n");
      });
      // The ranges probed one by one (a nested loop, its inner side each range's scan), never hashed
      // or merged against the tenant's whole cells or events; the cells through their key. (A month's
      // partition of a row or two may be scanned whole within the loop: cheaper than its index.)
      expect(plan, plan).not.to.match(/Hash Join|Merge Join|Seq Scan on rollup_cells /);
      expect(plan, plan).to.match(/Nested Loop/);
      if (sql.trim().startsWith("delete")) expect(plan, plan).to.match(/Index (Only )?Scan using rollup_cells_pkey/);
    }
  });
});
