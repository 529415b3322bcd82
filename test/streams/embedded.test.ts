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
});
