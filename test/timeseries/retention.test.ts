import { expect } from "chai";
import { upsertEntities } from "../../src/graph/entities.js";
import { describeEachBackend } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken } from "../support/tokens.js";

const DAY_MS = 86_400_000;

describeEachBackend("reads over a range reaching before the retention horizon", (ctx) => {
  let kept: TestServer;
  let forever: TestServer;
  let token: string;
  let item: string;
  before(async () => {
    kept = await testServer(ctx.db, { EVENTS_RETENTION_DAYS: "30" });
    forever = await testServer(ctx.db);
    token = await adminToken();
  });
  after(async () => {
    await kept.app.close();
    await forever.app.close();
  });
  beforeEach(async () => {
    const [stored] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "meter", attributes: { itemAction: "INGEST" } }]);
    item = stored!.id;
    // Not yet dropped: the answers below come from the check, not from missing rows.
    const events = [40, 10].map((days) => ({ timestamp: new Date(Date.now() - days * DAY_MS).toISOString(), value: days }));
    const res = await post(kept, `/items/${item}/events`, { events });
    expect(res.statusCode, res.body).to.equal(200);
  });

  const post = (server: TestServer, url: string, payload: unknown, accept?: string) =>
    server.app.inject({
      method: "POST",
      url,
      payload: payload as string,
      headers: { authorization: `Bearer ${token}`, "x-tenant-id": ctx.tenant, ...(accept === undefined ? {} : { accept }) },
    });
  const daysAgo = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString();
  const range = (fromDays: number, toDays: number) => ({ eventDateRange: { period: "Custom range", from: daysAgo(fromDays), to: daysAgo(toDays), timeZone: "UTC" } });

  it("answers a range wholly before the horizon with a 422 naming it, never an empty answer", async () => {
    for (const [url, body, accept] of [
      [`/items/${item}/events/query`, range(50, 35)],
      [`/items/${item}/events/query`, { ...range(50, 35), queryOptions: { aggregation: { metric: "sum", interval: "Daily" } } }],
      [`/items/${item}/events/query`, range(50, 35), "application/x-ndjson"],
      ["/timeline/query", { ...range(50, 35), itemIds: [item] }],
    ] as [string, object, string?][]) {
      const res = await post(kept, url, body, accept);
      expect(res.statusCode, `${url} ${accept ?? ""}: ${res.body}`).to.equal(422);
      const problem = res.json() as { detail: string; errors: { path: string }[] };
      expect(problem.detail).to.match(/^the range ends before \d{4}-\d\d-\d\dT[\d:.]+Z, the retention horizon \(events are kept 30 days, EVENTS_RETENTION_DAYS\)/);
      expect(problem.errors[0]!.path).to.equal("eventDateRange");
    }
    // Without a retention the same range answers its events.
    const res = await post(forever, `/items/${item}/events/query`, range(50, 35));
    expect((res.json() as { events: unknown[] }).events).to.have.length(1);
  });

  it("answers a range that starts before the horizon, saying where the kept events start", async () => {
    const res = await post(kept, `/items/${item}/events/query`, range(50, 0));
    expect(res.statusCode, res.body).to.equal(200);
    const from = Date.parse(res.headers["events-retained-from"] as string);
    expect(Math.abs(from - (Date.now() - 30 * DAY_MS))).to.be.lessThan(60_000);
    const timeline = await post(kept, "/timeline/query", { ...range(50, 0), itemIds: [item] });
    expect(timeline.headers["events-retained-from"]).to.be.a("string");
    const exported = await post(kept, `/items/${item}/events/query`, range(50, 0), "text/csv");
    expect(exported.statusCode).to.equal(200);
    expect(exported.headers["events-retained-from"]).to.be.a("string");
    // Within the horizon, or without a retention: no header.
    expect((await post(kept, `/items/${item}/events/query`, range(20, 0))).headers["events-retained-from"]).to.equal(undefined);
    expect((await post(forever, `/items/${item}/events/query`, range(50, 0))).headers["events-retained-from"]).to.equal(undefined);
  });
});
