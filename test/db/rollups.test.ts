import { expect } from "chai";
import fc from "fast-check";
import { DateTime } from "luxon";
import { deleteEntity, upsertEntities } from "../../src/graph/entities.js";
import { migrations } from "../../src/db/migrations.js";
import { INTERVALS, type Interval } from "../../src/timeseries/buckets.js";
import { deleteEvents } from "../../src/timeseries/export.js";
import { ingestEvents } from "../../src/timeseries/ingest.js";
import { aggregateEvents, METRICS, type BucketJson, type Metric, type Timeline } from "../../src/timeseries/query.js";
import { rollupPlan } from "../../src/timeseries/rollup-plan.js";
import { Pace } from "../../src/timeseries/rollup-pace.js";
import { drainMarks, reconcile } from "../../src/timeseries/rollup-store.js";
import { ensureZone } from "../../src/timeseries/rollup-zones.js";
import { TimeSeries } from "../../src/timeseries/service.js";
import { bucketStarts } from "../../src/timeseries/bucket-range.js";
import { backend, backendNames, describeEachBackend } from "../support/backends.js";

/**
 * Differential tests of the rollups (issue 27, point 5): after random writes — late events,
 * re-sent ones (their value replaced), deleted ranges, a deleted Item, a STREAM item with
 * `persist` — every aggregation answered from the rollups equals the raw answer, bucket by bucket,
 * in zones of offsets +5:30, +5:45, −3:30 (with DST) and Europe/Brussels (DST) as well as UTC.
 * Values are multiples of 1/1024 within ±1e6, so every sum is exact in a double whatever the
 * order of the additions: sums and averages must then agree to 1e-9 of their size.
 */

const ZONES = ["UTC", "Asia/Kolkata", "Asia/Kathmandu", "America/St_Johns", "Europe/Brussels"];
/** The zones whose days and months the rollups hold here; the others read the cells. */
const ROLLUP_ZONES = ["UTC", "Europe/Brussels", "Asia/Kathmandu", "America/St_Johns"];
const WINDOW_FROM = Date.parse("2026-02-20T00:00:00Z");
const WINDOW_TO = Date.parse("2026-04-08T00:00:00Z");
const SOURCES = ["", "a", "b"];

interface Ev {
  item: number;
  t: number;
  sourceId: string;
  value: number;
}

type Op = { kind: "ingest"; events: Ev[] } | { kind: "delete"; item: number; from: number; to: number } | { kind: "query"; query: Query } | { kind: "drain" };

interface Query {
  zone: string;
  interval: Interval;
  metric: Metric;
  single: boolean;
  from: number;
  to: number;
  /** A plan of cells alone read from the cells rather than from the kept raw events (both must answer alike). */
  cellsOverRaw: boolean;
}

// Instants on a 7-minute grid, so that re-sent events (same item, instant and source) happen often.
const instant = fc.integer({ min: 0, max: Math.floor((WINDOW_TO - WINDOW_FROM) / 420_000) - 1 }).map((k) => WINDOW_FROM + k * 420_000);
const event = fc.record({
  item: fc.integer({ min: 0, max: 2 }),
  t: instant,
  sourceId: fc.constantFrom(...SOURCES),
  value: fc.integer({ min: -1_000_000_000, max: 1_000_000_000 }).map((n) => n / 1024),
});

/** A bound: a local midnight, first of a month, quarter hour, or any millisecond of the window. */
function bound(zone: string) {
  return fc.tuple(fc.integer({ min: WINDOW_FROM - 5 * 86_400_000, max: WINDOW_TO + 5 * 86_400_000 }), fc.constantFrom("day", "month", "quarter-hour", "ms")).map(([t, snap]) => {
    if (snap === "ms") return t;
    if (snap === "quarter-hour") return Math.floor(t / 900_000) * 900_000;
    return DateTime.fromMillis(t, { zone }).startOf(snap as "day" | "month").toMillis();
  });
}

const query: fc.Arbitrary<Query> = fc.constantFrom(...ZONES).chain((zone) =>
  fc
    .record({
      interval: fc.constantFrom(...INTERVALS.filter((i) => i !== "5 minute" && i !== "10 minute")),
      metric: fc.constantFrom(...METRICS),
      single: fc.boolean(),
      a: bound(zone),
      b: bound(zone),
      cellsOverRaw: fc.boolean(),
    })
    .map(({ interval, metric, single, a, b, cellsOverRaw }) => ({ zone, interval, metric, single, from: Math.min(a, b), to: Math.max(a, b) + 1, cellsOverRaw })),
);

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.array(event, { minLength: 1, maxLength: 40 }).map((events) => ({ kind: "ingest" as const, events })) },
  {
    weight: 1,
    arbitrary: fc.tuple(fc.integer({ min: 0, max: 2 }), instant, fc.integer({ min: 0, max: 3 * 86_400_000 })).map(([item, from, length]) => ({ kind: "delete" as const, item, from, to: from + length })),
  },
  { weight: 3, arbitrary: query.map((q) => ({ kind: "query" as const, query: q })) },
  { weight: 1, arbitrary: fc.constant({ kind: "drain" as const }) },
);

function close(actual: BucketJson[], expected: BucketJson[], metric: Metric, label: string): void {
  expect(actual.map((b) => b.timestamp), label).to.deep.equal(expected.map((b) => b.timestamp));
  expected.forEach((b, i) => {
    const a = actual[i]!.value;
    if (metric !== "sum" && metric !== "avg") expect(a, `${label} ${b.timestamp}`).to.equal(b.value);
    else if (b.value === null) expect(a, `${label} ${b.timestamp}`).to.equal(null);
    else expect(Math.abs(a! - b.value), `${label} ${b.timestamp}: ${a} vs ${b.value}`).to.be.at.most(1e-9 * (Math.abs(b.value) + 1));
  });
}

describe("the pace of a bounded reconcile", () => {
  const spanAfter = async (boundMs: number | undefined, slowest: number[]) => {
    const pace = new Pace(boundMs);
    const spans = [];
    for (const ms of slowest) {
      // A statement as slow as asked: the pace times what it runs.
      await pace.run(async () => {
        const started = performance.now();
        while (performance.now() - started < ms);
      });
      pace.adapt();
      spans.push(pace.span);
    }
    return spans;
  };

  it("starts at one 15-minute cell a statement, grows a step while statements take under a quarter of the bound (to whole days, then 4, 16, … days), and goes down as far as a slow one asks", async () => {
    expect(new Pace(50).span).to.deep.equal({ marks: 1, slices: 96 });
    // Bounds and times far from the thresholds (a quarter of the bound, the bound, four times it): a loaded machine stretches a timed statement.
    const fast = [0, 0, 0, 0, 0, 0];
    expect(await spanAfter(200, fast)).to.deep.equal([
      { marks: 1, slices: 24 },
      { marks: 1, slices: 8 },
      { marks: 1, slices: 2 },
      { marks: 1, slices: 1 },
      { marks: 4, slices: 1 },
      { marks: 16, slices: 1 },
    ]);
    // At 4 days a statement: twice the bound, one step down (a day); eight times, two steps (half a day).
    expect((await spanAfter(40, [0, 0, 0, 0, 0, 80])).at(-1)).to.deep.equal({ marks: 1, slices: 1 });
    expect((await spanAfter(40, [0, 0, 0, 0, 0, 320])).at(-1)).to.deep.equal({ marks: 1, slices: 2 });
    // At one cell already: no further down.
    expect(await spanAfter(40, [400, 400])).to.deep.equal([
      { marks: 1, slices: 96 },
      { marks: 1, slices: 96 },
    ]);
    // Between a quarter of the bound and the bound: it stays.
    expect((await spanAfter(100, [0, 0, 0, 0, 50])).at(-1)).to.deep.equal({ marks: 1, slices: 1 });
  });

  it("without a bound, takes every mark at once, a day a statement", async () => {
    expect(await spanAfter(undefined, [500, 0])).to.deep.equal([{ marks: Number.POSITIVE_INFINITY, slices: 1 }, { marks: Number.POSITIVE_INFINITY, slices: 1 }]);
  });
});

describe("which source a rollup plan reads", () => {
  const JULY = Date.parse("2025-07-01T00:00:00Z");
  const AUGUST = Date.parse("2025-08-01T00:00:00Z");
  const plan = (interval: Interval, zone: string, from: number, to: number, extra: { floor?: number; cellsOverRaw?: boolean } = {}) =>
    rollupPlan({ from, to, zone, interval, metric: "sum", filtered: false, starts: bucketStarts(from, to, interval, zone), zones: ["UTC"], ...extra });

  it("answers a plan of 15-minute cells alone from the raw events while they are kept, from the cells once they are not", () => {
    // One item Hourly over a month: cells alone (as many rows as 15-minute events).
    expect(plan("Hourly", "UTC", JULY, AUGUST)).to.equal(undefined);
    expect(plan("Hourly", "UTC", JULY, AUGUST, { floor: JULY })).to.equal(undefined);
    expect(plan("Hourly", "UTC", JULY, AUGUST, { floor: JULY + 86_400_000 })).to.deep.equal([{ from: JULY, to: AUGUST, source: "cells" }]);
    expect(plan("Hourly", "UTC", JULY, AUGUST, { cellsOverRaw: true })).to.deep.equal([{ from: JULY, to: AUGUST, source: "cells" }]);
    // Daily in a zone the rollups hold no days of: cells alone too.
    expect(plan("Daily", "Europe/Brussels", JULY, AUGUST)).to.equal(undefined);
  });

  it("keeps the days and months, with the cells at their edges, where the raw events are kept", () => {
    const from = JULY + 6 * 3_600_000;
    expect(plan("Daily", "UTC", from, AUGUST)).to.deep.equal([
      { from, to: JULY + 86_400_000, source: "cells" },
      { from: JULY + 86_400_000, to: AUGUST, source: "days" },
    ]);
    expect(plan("Monthly", "UTC", JULY, AUGUST)).to.deep.equal([{ from: JULY, to: AUGUST, source: "months" }]);
  });
});

// The databases opened before the suites' own hooks: PGlite takes most of a minute to start on a loaded machine.
before(async function () {
  this.timeout(300_000);
  await Promise.all(backendNames.map((name) => backend(name)));
});

describeEachBackend("rollups answer as the raw events do", (ctx) => {
  const rollups = { zones: ROLLUP_ZONES };

  async function items(): Promise<string[]> {
    const made = await upsertEntities(ctx.db.knex, ctx.tenant, [
      { type: "Item", key: "a", attributes: { itemAction: "INGEST" } },
      { type: "Item", key: "b", attributes: { itemAction: "INGEST" } },
      { type: "Item", key: "c", attributes: { itemAction: "STREAM", persist: true } },
    ]);
    return made.map((m) => m.id);
  }

  async function compare(ids: string[], q: Query): Promise<boolean> {
    const range = { from: DateTime.fromMillis(q.from, { zone: q.zone }), to: DateTime.fromMillis(q.to, { zone: q.zone }), zone: q.zone };
    const options = { aggregation: { metric: q.metric, interval: q.interval } };
    const timeline: Timeline = { kind: q.single ? "single" : "each", itemIds: ids };
    let raw: Map<string, BucketJson[]>;
    try {
      raw = await aggregateEvents(ctx.db.knex, ctx.tenant, timeline, range, options);
    } catch (err) {
      // Too many buckets for the range: both refuse it alike.
      expect((err as Error).message).to.match(/more than \d+ .* buckets/);
      return false;
    }
    const rolled = await aggregateEvents(ctx.db.knex, ctx.tenant, timeline, range, options, { ...rollups, cellsOverRaw: q.cellsOverRaw });
    const label = `${q.metric} ${q.interval} ${q.zone} ${new Date(q.from).toISOString()}..${new Date(q.to).toISOString()} ${q.single ? "single" : "each"}${q.cellsOverRaw ? " cells" : ""}`;
    expect([...rolled.keys()], label).to.deep.equal([...raw.keys()]);
    for (const [key, buckets] of raw) close(rolled.get(key)!, buckets, q.metric, `${label} ${key}`);
    const starts = bucketStarts(q.from, q.to, q.interval, q.zone);
    return rollupPlan({ from: q.from, to: q.to, zone: q.zone, interval: q.interval, metric: q.metric, filtered: false, starts, zones: ROLLUP_ZONES, cellsOverRaw: q.cellsOverRaw }) !== undefined;
  }

  async function apply(ids: string[], o: Op): Promise<void> {
    if (o.kind === "ingest") {
      const rows = o.events.map((e) => ({ itemId: ids[e.item], timestamp: new Date(e.t).toISOString(), sourceId: e.sourceId === "" ? undefined : e.sourceId, value: e.value }));
      await ingestEvents(ctx.db.knex, ctx.tenant, rows);
    } else if (o.kind === "delete") await deleteEvents(ctx.db.knex, ctx.tenant, ids[o.item]!, new Date(o.from), new Date(o.to));
    else if (o.kind === "drain") await drainMarks(ctx.db.knex);
  }

  it("after random writes, in every zone, interval and metric (fast-check)", async function () {
    this.timeout(600_000);
    let tiled = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 3, maxLength: 12 }), fc.array(query, { minLength: 2, maxLength: 4 }), async (ops, finals) => {
        ctx.tenant = `rollups-${Math.random().toString(36).slice(2)}`;
        const ids = await items();
        for (const o of ops) {
          if (o.kind === "query") tiled += (await compare(ids, o.query)) ? 1 : 0;
          else await apply(ids, o);
        }
        for (const q of finals) tiled += (await compare(ids, q)) ? 1 : 0;
      }),
      { numRuns: ctx.name === "embedded" ? 25 : 40 },
    );
    // Most queries were answered from the rollups, not all from raw events.
    expect(tiled).to.be.greaterThan(20);
  });

  it("rebuilt in statements as small as one 15-minute cell (a bound of 0 ms), the rollups are those rebuilt in one statement", async () => {
    const ids = await items();
    for (const zone of ["Europe/Brussels", "Asia/Kathmandu"]) await ensureZone(ctx.db.knex, ctx.tenant, zone);
    // Three days of two items, an event every 7 minutes from two sources, and a sparse third item.
    const events = Array.from({ length: 3 * 24 * 60 / 7 }, (_, k) => [
      { itemId: ids[0], timestamp: new Date(WINDOW_FROM + k * 420_000).toISOString(), sourceId: "a", value: ((k * 37) % 101) / 4 },
      { itemId: ids[1], timestamp: new Date(WINDOW_FROM + 86_400_000 / 2 + k * 420_000).toISOString(), sourceId: "b", value: -k / 8 },
      { itemId: ids[0], timestamp: new Date(WINDOW_FROM + k * 420_000).toISOString(), sourceId: "b", value: k % 7 },
    ]).flat();
    await ingestEvents(ctx.db.knex, ctx.tenant, [...events, { itemId: ids[2], timestamp: new Date(WINDOW_FROM + 40 * 86_400_000).toISOString(), value: 1 }]);
    const snapshot = async () => ({
      cells: await ctx.db.knex("rollup_cells").where({ tenant: ctx.tenant }).orderBy(["item_id", "cell"]).select("*"),
      periods: await ctx.db.knex("rollup_periods").where({ tenant: ctx.tenant }).orderBy(["item_id", "zone", "grain", "period"]).select("*"),
      packs: await ctx.db.knex("rollup_day_packs").where({ tenant: ctx.tenant }).orderBy(["item_id", "zone", "half"]).select("*"),
    });
    // A service of another test may drain the same database meanwhile: what is checked is that no
    // mark of this tenant is left once a drain returns, and the rows, whoever rebuilt them.
    const marksLeft = async () => Number((await ctx.db.knex("rollup_dirty").where({ tenant: ctx.tenant }).count("* as n"))[0]!.n);
    // This tenant's marks only: a cell a statement over every tenant's marks of the whole suite would take minutes.
    await reconcile(ctx.db.knex, ctx.tenant, {}, undefined, 0);
    expect(await marksLeft()).to.equal(0);
    const sliced = await snapshot();
    expect(sliced.cells.length).to.be.greaterThan(3 * 96);
    // A half-year's packed days, one entry (a count of 4 bytes) per day of January to June 2026, of each item and zone.
    expect(sliced.packs.map((p: { n: Uint8Array }) => p.n.length / 4)).to.deep.equal([181, 181, 181, 181, 181, 181]);
    // Migration 014 packs the day rows stored before it as the reconcile does (run into a temporary table of the same name, which it then reads).
    const backfilled = await ctx.db.knex.transaction(async (trx) => {
      await trx.raw("create temporary table rollup_day_packs (like rollup_day_packs) on commit drop");
      await trx.raw(migrations.find((m) => m.id === "014_rollup_day_packs")!.statements[1]!);
      return trx("rollup_day_packs").where({ tenant: ctx.tenant }).orderBy(["item_id", "zone", "half"]).select("*");
    });
    expect(backfilled).to.deep.equal(sliced.packs);
    // The rows spoiled, then the same days marked again and rebuilt without a bound: one statement for each step.
    await ctx.db.knex("rollup_cells").where({ tenant: ctx.tenant }).update({ n: 0 });
    await ctx.db.knex("rollup_periods").where({ tenant: ctx.tenant }).update({ n: 0 });
    await ctx.db.knex("rollup_day_packs").where({ tenant: ctx.tenant }).update({ n: Buffer.alloc(4) });
    await ctx.db.knex.raw("insert into rollup_dirty (tenant, item_id, day) select tenant, item_id, (cell at time zone 'UTC')::date from rollup_cells where tenant = ? group by 1, 2, 3", [ctx.tenant]);
    await reconcile(ctx.db.knex, ctx.tenant, {}, undefined, Number.POSITIVE_INFINITY);
    expect(await marksLeft()).to.equal(0);
    expect(await snapshot()).to.deep.equal(sliced);
    const q: Query = { zone: "Europe/Brussels", interval: "Hourly", metric: "close", single: false, from: WINDOW_FROM, to: WINDOW_FROM + 4 * 86_400_000, cellsOverRaw: true };
    expect(await compare(ids, q)).to.equal(true);
  });

  it("rebuilds only the quarter hours a write touched, not its whole day; a mark without its span (written before migration 012), the whole day", async () => {
    const ids = await items();
    const day = WINDOW_FROM;
    await ingestEvents(ctx.db.knex, ctx.tenant, Array.from({ length: 96 }, (_, k) => ({ itemId: ids[0], timestamp: new Date(day + k * 900_000).toISOString(), value: k })));
    await drainMarks(ctx.db.knex);
    const cell = (t: number) => ctx.db.knex("rollup_cells").where({ tenant: ctx.tenant, item_id: ids[0], cell: new Date(t) }).first<{ n: number } | undefined>();
    // A cell changed behind the reconcile's back: rebuilt only if a mark's span covers it.
    await ctx.db.knex("rollup_cells").where({ tenant: ctx.tenant, item_id: ids[0], cell: new Date(day) }).update({ n: 12345 });
    await ingestEvents(ctx.db.knex, ctx.tenant, [{ itemId: ids[0], timestamp: new Date(day + 12 * 3_600_000 + 7 * 60_000).toISOString(), value: 1 }]);
    await deleteEvents(ctx.db.knex, ctx.tenant, ids[0]!, new Date(day + 3 * 3_600_000), new Date(day + 3.5 * 3_600_000));
    await drainMarks(ctx.db.knex);
    expect((await cell(day))?.n).to.equal(12345);
    expect((await cell(day + 12 * 3_600_000))?.n).to.equal(2);
    expect(await cell(day + 3 * 3_600_000)).to.equal(undefined);
    expect(await cell(day + 3.25 * 3_600_000)).to.equal(undefined);
    expect((await cell(day + 3.5 * 3_600_000))?.n).to.equal(1);
    await ctx.db.knex("rollup_dirty").insert({ tenant: ctx.tenant, item_id: ids[0], day: new Date(day).toISOString().slice(0, 10) });
    await drainMarks(ctx.db.knex);
    expect((await cell(day))?.n).to.equal(1);
  });

  it("rolls up the last day the service takes, 9999-12-31 (its end, 10000-01-01, bound as PostgreSQL reads it)", async () => {
    const ids = await items();
    const last = Date.parse("9999-12-31T23:59:59.998Z"); // the last instant an event may have
    await ingestEvents(ctx.db.knex, ctx.tenant, [
      { itemId: ids[0], timestamp: new Date(last).toISOString(), value: 2 },
      { itemId: ids[0], timestamp: "9999-12-31T00:00:00.000Z", value: 3 },
    ]);
    await ctx.db.knex("rollup_dirty").insert({ tenant: ctx.tenant, item_id: ids[0], day: "9999-12-31" });
    for (const boundMs of [undefined, 0]) {
      await reconcile(ctx.db.knex, ctx.tenant, {}, undefined, boundMs);
      expect(Number((await ctx.db.knex("rollup_dirty").where({ tenant: ctx.tenant }).count("* as n"))[0]!.n)).to.equal(0);
      const cells = await ctx.db.knex("rollup_cells").where({ tenant: ctx.tenant, item_id: ids[0] }).orderBy("cell").select("n", "sum");
      expect(cells.map((c: { n: number; sum: number }) => [Number(c.n), c.sum])).to.deep.equal([
        [1, 3],
        [1, 2],
      ]);
      await ctx.db.knex("rollup_dirty").insert({ tenant: ctx.tenant, item_id: ids[0], day: "9999-12-31" });
    }
  });

  it("a deleted Item leaves no rollups; its events answered again once re-sent", async () => {
    const ids = await items();
    const events = Array.from({ length: 200 }, (_, k) => ({ itemId: ids[0], timestamp: new Date(WINDOW_FROM + k * 900_000).toISOString(), value: k }));
    await ingestEvents(ctx.db.knex, ctx.tenant, events);
    const q: Query = { zone: "Europe/Brussels", interval: "Daily", metric: "sum", single: true, from: WINDOW_FROM, to: WINDOW_FROM + 10 * 86_400_000, cellsOverRaw: false };
    await compare(ids, q);
    await drainMarks(ctx.db.knex);
    expect(await deleteEntity(ctx.db.knex, ctx.tenant, ids[0]!)).to.equal(true);
    for (const table of ["rollup_cells", "rollup_periods", "rollup_day_packs", "rollup_dirty"]) {
      expect((await ctx.db.knex(table).where({ tenant: ctx.tenant, item_id: ids[0] }).count("* as n"))[0]!.n, table).to.satisfy((n: unknown) => Number(n) === 0);
    }
    await compare(ids, q);
    const again = await items();
    await ingestEvents(ctx.db.knex, ctx.tenant, events.map((e) => ({ ...e, itemId: again[0] })));
    await compare(again, q);
  });

  it("answers from the rollups past the retention horizon once the raw month is dropped, and 422 where they do not tile", async () => {
    const ids = await items();
    const month = Date.UTC(1990, 0, 1);
    await ctx.db.knex.raw("select events_month_partition(?::timestamp)", ["1990-01-01T00:00:00"]);
    const events = Array.from({ length: 31 * 24 }, (_, k) => ({ itemId: ids[k % 2], timestamp: new Date(month + k * 3_600_000).toISOString(), value: k / 4 }));
    await ingestEvents(ctx.db.knex, ctx.tenant, events);
    // Rolled up while the events were within retention (a reader without one), then read under a retention of 30 days.
    const forever = new TimeSeries(ctx.db.knex, "UTC", undefined, undefined, undefined, ["UTC", "Europe/Brussels"]);
    const kept = new TimeSeries(ctx.db.knex, "UTC", undefined, undefined, 30, ["UTC", "Europe/Brussels"]);
    let reader = forever;
    const ask = (zone: string, interval: Interval, metric: Metric, from = "1990-01-01T00:00:00Z") =>
      reader.singleTimeline(ctx.tenant, ids, { eventDateRange: { period: "Custom range", from, to: "1990-02-01T00:00:00Z", timeZone: zone }, queryOptions: { aggregation: { metric, interval } } });
    const before = [await ask("UTC", "Monthly", "sum"), await ask("UTC", "Daily", "diff"), await ask("Europe/Brussels", "Hourly", "max", "1990-01-05T00:00:00Z")];
    expect(before[0]![0]!.value).to.equal(events.reduce((a, e) => a + e.value, 0));
    await drainMarks(ctx.db.knex);
    // What the upkeep does past the horizon: the month's table dropped whole.
    await ctx.db.knex.raw("drop table events_y1990m01");
    reader = kept;
    expect(await ask("UTC", "Monthly", "sum")).to.deep.equal(before[0]);
    expect(await ask("UTC", "Daily", "diff")).to.deep.equal(before[1]);
    expect(await ask("Europe/Brussels", "Hourly", "max", "1990-01-05T00:00:00Z")).to.deep.equal(before[2]);
    // Not on the quarter hour, or cardinality: raw events are needed, and they are gone.
    for (const [from, metric] of [["1990-01-01T00:00:01Z", "sum"], ["1990-01-01T00:00:00Z", "cardinality"]] as const) {
      const refused = await ask("UTC", "Daily", metric, from).then(
        () => undefined,
        (err: unknown) => err as { status?: number; message: string },
      );
      expect(refused?.status, `${metric} from ${from}`).to.equal(422);
      expect(refused!.message).to.match(/retention horizon/);
    }
  });
});
