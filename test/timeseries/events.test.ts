import { expect } from "chai";
import type { LightMyRequestResponse } from "fastify";
import { upsertEntities } from "../../src/graph/entities.js";
import { describeEachBackend } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken } from "../support/tokens.js";

const SPRING = { period: "Custom range", from: "2024-03-30T23:00:00Z", to: "2024-04-01T22:00:00Z", timeZone: "Europe/Brussels" };

describeEachBackend("time series over REST", (ctx) => {
  let server: TestServer;
  let token: string;
  let item: string;
  before(async () => {
    server = await testServer(ctx.db);
    token = await adminToken();
  });
  after(() => server.app.close());
  beforeEach(async () => {
    const [stored] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "meter-1", attributes: { itemAction: "INGEST" } }]);
    item = stored!.id;
  });

  const headers = () => ({ authorization: `Bearer ${token}`, "x-tenant-id": ctx.tenant });
  const post = (url: string, payload: unknown, extra: Record<string, string> = {}) =>
    server.app.inject({ method: "POST", url, payload: payload as string, headers: { ...headers(), ...extra } });
  const ingest = (events: unknown[], query = "") => post(`/items/${item}/events${query}`, { events });
  const query = (body: unknown) => post(`/items/${item}/events/query`, body);
  const values = (res: LightMyRequestResponse) => (res.json() as { buckets: { value: number | null }[] }).buckets.map((b) => b.value);

  const springEvents = [
    { timestamp: "2024-03-30T22:30:00Z", value: 100 },
    { timestamp: "2024-03-30T23:00:00Z", value: 1 },
    { timestamp: "2024-03-31T05:00:00Z", value: 3 },
    { timestamp: "2024-03-31T21:59:00Z", value: 2 },
    { timestamp: "2024-03-31T22:00:00Z", value: 10 },
    { timestamp: "2024-04-01T12:00:00Z", value: 10, sourceId: "s1" },
    { timestamp: "2024-04-01T12:00:00Z", value: 7, sourceId: "s2" },
  ];

  it("ingests, then aggregates every metric into Brussels days, the spring-forward day 23 hours long", async () => {
    expect((await ingest(springEvents)).json()).to.deep.equal({ stored: 7 });
    const expected: Record<string, [number, number]> = {
      avg: [2, 9],
      count: [3, 3],
      min: [1, 7],
      max: [3, 10],
      sum: [6, 27],
      open: [1, 10],
      close: [2, 7],
      cardinality: [3, 2],
      diff: [2 - 100, 7 - 2],
    };
    for (const [metric, want] of Object.entries(expected)) {
      const res = await query({ eventDateRange: SPRING, queryOptions: { aggregation: { metric, interval: "Daily" } } });
      expect(res.statusCode, res.body).to.equal(200);
      expect((res.json() as { buckets: unknown[] }).buckets, metric).to.deep.equal([
        { timestamp: "2024-03-30T23:00:00.000Z", value: want[0] },
        { timestamp: "2024-03-31T22:00:00.000Z", value: want[1] },
      ]);
    }
  });

  it("emits all 23 Hourly buckets of the spring-forward day, empty ones counted 0 or null", async () => {
    await ingest(springEvents);
    const range = { ...SPRING, to: "2024-03-31T22:00:00Z" };
    const counts = values(await query({ eventDateRange: range, queryOptions: { aggregation: { metric: "count", interval: "Hourly" } } }));
    expect(counts).to.have.length(23);
    expect(counts.map((c, i) => (c ? i : -1)).filter((i) => i >= 0)).to.deep.equal([0, 6, 22]);
    const sums = values(await query({ eventDateRange: range, queryOptions: { aggregation: { metric: "sum", interval: "Hourly" } } }));
    expect(sums[0]).to.equal(1);
    expect(sums[1]).to.equal(null);
  });

  it("fills gaps with the strategy asked for", async () => {
    await ingest([
      { timestamp: "2024-01-01T10:00:00Z", value: 1 },
      { timestamp: "2024-01-01T10:45:00Z", value: 4 },
    ]);
    const range = { period: "Custom range", from: "2024-01-01T10:00:00Z", to: "2024-01-01T11:15:00Z" };
    const with15 = (gapStrategy?: unknown) => query({ eventDateRange: range, queryOptions: { aggregation: { metric: "avg", interval: "15 minute", gapStrategy } } });
    expect(values(await with15())).to.deep.equal([1, null, null, 4, null]);
    expect(values(await with15({ type: "push" }))).to.deep.equal([1, 1, 1, 4, 4]);
    expect(values(await with15({ type: "pull" }))).to.deep.equal([1, 4, 4, 4, null]);
    expect(values(await with15({ type: "meet", config: { meet: 0.5 } }))).to.deep.equal([1, 1, 4, 4, null]);
    expect(values(await with15({ type: "interpolate", config: { algorithm: "linear" } }))).to.deep.equal([1, 2, 3, 4, null]);
    const bad = await with15({ type: "interpolate", config: { algorithm: "cubist" } });
    expect(bad.statusCode).to.equal(400);
    expect(bad.json()).to.include({ code: "INVALID_REQUEST" });
  });

  it("returns raw events sorted and paged, with their metadata", async () => {
    await ingest([
      { timestamp: "2024-01-01T00:00:00Z", value: 1, tags: ["a", 'b"q'], keyValues: { k: "v" }, entry: "2024-01-01T00:00:00+01:00" },
      { timestamp: "2024-01-01T01:00:00Z", value: 2 },
      { timestamp: "2024-01-01T02:00:00Z", value: 3, sourceId: "x" },
    ]);
    const range = { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00Z" };
    const all = (await query({ eventDateRange: range })).json() as { events: unknown[] };
    expect(all.events).to.deep.equal([
      { timestamp: "2024-01-01T00:00:00.000Z", value: 1, tags: ["a", 'b"q'], keyValues: { k: "v" }, entry: "2023-12-31T23:00:00.000Z" },
      { timestamp: "2024-01-01T01:00:00.000Z", value: 2 },
      { timestamp: "2024-01-01T02:00:00.000Z", value: 3, sourceId: "x" },
    ]);
    const page = (await query({ eventDateRange: range, queryOptions: { sorting: { order: ["timestamp-"] }, pagination: { limit: 2, offset: 1 } } })).json() as {
      events: { value: number }[];
    };
    expect(page.events.map((e) => e.value)).to.deep.equal([2, 1]);
  });

  it("replaces an event sent again: (item, timestamp, sourceId) is its key", async () => {
    await ingest([{ timestamp: "2024-01-01T00:00:00Z", value: 1 }]);
    await ingest([{ timestamp: "2024-01-01T00:00:00.000+00:00", value: 5 }]);
    const { rows } = (await ctx.db.knex.raw("select value from events where tenant = ?", [ctx.tenant])) as { rows: { value: number }[] };
    expect(rows).to.deep.equal([{ value: 5 }]);
  });

  it("refuses bad rows, listing each, and stores nothing", async () => {
    const res = await ingest([
      { timestamp: "2024-01-01T00:00:00Z", value: 1 },
      { timestamp: "yesterday", value: 2 },
      { timestamp: "2024-01-01T02:00:00Z", value: "3" },
      { timestamp: "2024-01-01T03:00:00Z", value: 4 },
    ]);
    expect(res.statusCode).to.equal(400);
    const body = res.json() as { code: string; detail: string; errors: { path: string; row: number }[] };
    expect(body.code).to.equal("INVALID_REQUEST");
    expect(body.detail).to.equal("2 of 4 events are not valid; nothing was stored");
    expect(body.errors.map((e) => e.path)).to.deep.equal(["events[1].timestamp", "events[2].value"]);
    const { rows } = (await ctx.db.knex.raw("select count(*)::int as n from events where tenant = ?", [ctx.tenant])) as { rows: { n: number }[] };
    expect(rows[0]?.n).to.equal(0);
  });

  it("stores the good rows and reports the bad ones when asked to", async () => {
    const res = await ingest([{ timestamp: "2024-01-01T00:00:00Z", value: 1 }, { timestamp: "2024-01-01T01:00:00Z", value: null }], "?partial=true");
    expect(res.json()).to.deep.equal({ stored: 1, rejected: [{ path: "events[1].value", row: 1, message: "value null is not a finite number" }], rejectedTotal: 1 });
  });

  it("refuses events for a derived item and for an item of no tenant of ours", async () => {
    const [derived] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "derived", attributes: { itemAction: "CALCULATE" } }]);
    const res = await post(`/items/${derived!.id}/events`, { events: [{ timestamp: "2024-01-01T00:00:00Z", value: 1 }] });
    expect(res.statusCode).to.equal(400);
    expect((res.json() as { errors: { message: string }[] }).errors[0]?.message).to.match(/is derived \(itemAction CALCULATE\)/);
    const foreign = await server.app.inject({
      method: "POST",
      url: `/items/${item}/events`,
      payload: { events: [{ timestamp: "2024-01-01T00:00:00Z", value: 1 }] },
      headers: { authorization: `Bearer ${token}`, "x-tenant-id": `${ctx.tenant}-other` },
    });
    expect((foreign.json() as { errors: { message: string }[] }).errors[0]?.message).to.equal(`there is no Item ${item} in this tenant`);
  });

  it("names the row of each event for an unknown item, in row order whatever the ids", async () => {
    const [high, low] = ["ffffffff-ffff-4fff-bfff-ffffffffffff", "00000000-0000-4000-8000-000000000000"];
    const res = await post(`/events`, {
      events: [
        { itemId: item, timestamp: "2024-01-01T00:00:00Z", value: 1 },
        { itemId: high, timestamp: "2024-01-01T00:00:00Z", value: 2 },
        { itemId: low, timestamp: "2024-01-01T00:00:00Z", value: 3 },
      ],
    });
    expect(res.statusCode).to.equal(400);
    const body = res.json() as { errors: { path: string; row: number; message: string }[] };
    expect(body.errors).to.deep.equal([
      { path: "events[1].itemId", row: 1, message: `there is no Item ${high} in this tenant` },
      { path: "events[2].itemId", row: 2, message: `there is no Item ${low} in this tenant` },
    ]);
  });

  it("reads CSV as RFC 4180 has it: a line break, a comma and a doubled quote inside a quoted field, CRLF line ends, a byte order mark", async () => {
    const text = `\uFEFFtimestamp,value,sourceId\r\n2024-02-01T00:00:00Z,1,"meter ""A""\r\nsecond line, still the field"\r\n\r\n2024-02-01T01:00:00Z,2,plain\r\n`;
    const res = await post(`/items/${item}/events`, text, { "content-type": "text/csv" });
    expect(res.json()).to.deep.equal({ stored: 2 });
    const rows = (await ctx.db.knex("events").where({ tenant: ctx.tenant }).orderBy("ts").select("source_id", "value")) as { source_id: string; value: number }[];
    expect(rows).to.deep.equal([
      { source_id: 'meter "A"\r\nsecond line, still the field', value: 1 },
      { source_id: "plain", value: 2 },
    ]);
  });

  it("names a CSV line of the wrong width, and where text stops being CSV at all; nothing stored", async () => {
    const wide = await post(`/items/${item}/events`, `timestamp,value\n2024-02-01T00:00:00Z,1\n2024-02-01T01:00:00Z,2,extra\n`, { "content-type": "text/csv" });
    expect(wide.statusCode).to.equal(400);
    expect((wide.json() as { errors: { path: string; message: string }[] }).errors).to.deep.equal([{ path: "events[1]", row: 1, message: "line 3 has 3 fields where the header has 2" }]);
    const open = await post(`/items/${item}/events`, `timestamp,value,sourceId\n2024-02-01T00:00:00Z,1,"never closed\n2024-02-01T01:00:00Z,2,x\n`, { "content-type": "text/csv" });
    expect(open.statusCode).to.equal(400);
    expect((open.json() as { errors: { message: string }[] }).errors[0]?.message).to.match(/^the CSV cannot be read from line \d+ on: /);
    const { rows } = (await ctx.db.knex.raw("select count(*)::int as n from events where tenant = ?", [ctx.tenant])) as { rows: { n: number }[] };
    expect(rows[0]?.n).to.equal(0);
  });

  it("streams NDJSON and CSV uploads in batches", async () => {
    const lines = Array.from({ length: 12_001 }, (_, i) => JSON.stringify({ timestamp: new Date(Date.UTC(2024, 0, 1) + i * 60_000).toISOString(), value: i }));
    const ndjson = await post(`/items/${item}/events`, lines.join("\n"), { "content-type": "application/x-ndjson" });
    expect(ndjson.json()).to.deep.equal({ stored: 12_001 });
    const csv = await post(`/events`, `timestamp,value,itemId,sourceId,tags\n2024-02-01T00:00:00Z,1.5,${item},"src,1",a|b\n2024-02-01T01:00:00Z,2,${item},,\n`, {
      "content-type": "text/csv",
    });
    expect(csv.json()).to.deep.equal({ stored: 2 });
    const { rows } = (await ctx.db.knex.raw("select count(*)::int as n, sum(value) as s from events where tenant = ?", [ctx.tenant])) as { rows: { n: number; s: number }[] };
    expect(rows[0]?.n).to.equal(12_003);
    expect(Number(rows[0]?.s)).to.equal((12_000 * 12_001) / 2 + 3.5);
    const tagged = (await ctx.db.knex("events").where({ tenant: ctx.tenant, source_id: "src,1" }).first("tags")) as { tags: string[] };
    expect(tagged.tags).to.deep.equal(["a", "b"]);
    const broken = await post(`/items/${item}/events`, '{"timestamp":"2024-03-01T00:00:00Z","value":1}\n{not json\n', { "content-type": "application/x-ndjson" });
    expect(broken.statusCode).to.equal(400);
    expect((broken.json() as { errors: { path: string }[] }).errors[0]?.path).to.equal("events[1]");
  });

  it("keeps one tenant's events from another", async () => {
    await ingest([{ timestamp: "2024-01-01T00:00:00Z", value: 1 }]);
    const other = await server.app.inject({
      method: "POST",
      url: `/items/${item}/events/query`,
      payload: { eventDateRange: { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00Z" } },
      headers: { authorization: `Bearer ${token}`, "x-tenant-id": `${ctx.tenant}-other` },
    });
    expect(other.statusCode).to.equal(404);
  });
});
