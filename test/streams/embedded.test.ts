import { expect } from "chai";
import { backend, randomTenant } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { call, createItem, eventsFrom, StreamClient } from "../support/streams.js";
import { adminToken } from "../support/tokens.js";

describe("live streams on the embedded database (one process)", function () {
  this.timeout(30_000);
  let server: TestServer;
  let base: string;

  before(async () => {
    server = await testServer(await backend("embedded"));
    base = await server.app.listen({ port: 0, host: "127.0.0.1" });
  });
  after(() => server.app.close());

  it("pushes committed events and STREAM events through PGlite's own LISTEN", async () => {
    const token = await adminToken();
    const tenant = randomTenant();
    const stored = await createItem(base, token, tenant);
    const live = await createItem(base, token, tenant, { itemAction: "STREAM" });
    const sub = new StreamClient(`${base.replace("http", "ws")}/streams?itemIds=${stored},${live}`, { token, tenant });
    try {
      await sub.subscribed();
      await call(base, token, tenant, "POST", `/items/${stored}/events`, { events: eventsFrom(Date.UTC(2025, 0, 1), 3, 0) });
      expect((await call(base, token, tenant, "POST", `/items/${live}/events`, { events: eventsFrom(Date.UTC(2025, 0, 1), 1, 7) })).body).to.deep.equal({ stored: 0, streamed: 1 });
      await sub.until((c) => c.events.length === 4, "four events");
      expect(sub.messages.filter((m) => m.type === "event").map((m) => [m.itemId, m.event!.value])).to.deep.equal([[stored, 0], [stored, 1], [stored, 2], [live, 7]]);
    } finally {
      sub.close();
    }
  });

  it("pushes a CALCULATE item's recomputed latest bucket when one of its inputs receives an event", async () => {
    const token = await adminToken();
    const tenant = randomTenant();
    const ok = (res: { status: number; body: unknown }) => expect(res.status, JSON.stringify(res.body)).to.be.oneOf([200, 201]);
    ok(await call(base, token, tenant, "POST", "/graph/entities", { entities: [{ type: "Site", key: "S1" }, { type: "Item", key: "cons", attributes: { itemAction: "INGEST" } }, { type: "Item", key: "net", attributes: { itemAction: "CALCULATE" } }, { type: "ItemDefinition", key: "net-definition", attributes: { calculationDefinition: "doubled" } }] }));
    ok(await call(base, token, tenant, "POST", "/graph/links", { links: [{ from: { type: "Site", key: "S1" }, relation: "consumption", to: { type: "Item", key: "cons" } }, { from: { type: "Item", key: "net" }, relation: "definedBy", to: { type: "ItemDefinition", key: "net-definition" } }] }));
    const calculation = {
      select: 'Site ?site; entity:key "S1"; link:consumption Item:?cons.',
      expression: "a * 2",
      eventDateRange: { period: "Custom range", from: "2024-01-01T10:00:00Z", to: "2024-01-01T11:15:00Z", timeZone: "UTC" },
      queryOptions: { aggregation: { metric: "sum", interval: "15 minute" } },
      scope: { a: { type: "TIMESERIES", timeseries: { selectVariable: "{{?cons}}" } } },
    };
    ok(await call(base, token, tenant, "POST", "/calculation-definitions", { externalId: "doubled", calculationType: "EXPRESSION", data: { calculation } }));
    const items = (await call(base, token, tenant, "GET", "/graph/entities?type=Item", undefined)).body as { entities: { id: string; key: string }[] };
    const id = (key: string) => items.entities.find((e) => e.key === key)!.id;
    ok(await call(base, token, tenant, "POST", `/items/${id("cons")}/events`, { events: [{ timestamp: "2024-01-01T11:00:00Z", value: 4 }] }));
    const sub = new StreamClient(`${base.replace("http", "ws")}/items/${id("net")}/stream`, { token, tenant });
    try {
      await sub.subscribed();
      ok(await call(base, token, tenant, "POST", `/items/${id("cons")}/events`, { events: [{ timestamp: "2024-01-01T11:05:00Z", value: 10 }] }));
      await sub.until((c) => c.messages.some((m) => m.type === "bucket"), "a bucket");
      expect(sub.messages.filter((m) => m.type === "bucket")[0]).to.deep.equal({ type: "bucket", itemId: id("net"), bucket: { timestamp: "2024-01-01T11:00:00.000Z", value: 28 } });
    } finally {
      sub.close();
    }
  });
});
