import { expect } from "chai";
import { describeEachBackend } from "../support/backends.js";
import { adminServer } from "../support/server.js";

/**
 * A range bound with digits finer than a millisecond is the first whole millisecond at or after it
 * (found by the review of issue 24: cut to the millisecond, DELETE removed an event before `from`).
 */
describeEachBackend("range bounds with digits finer than a millisecond", (ctx) => {
  const suite = adminServer(ctx);

  const call = (method: "POST" | "DELETE", url: string, payload?: unknown) =>
    suite.server.app.inject({ method, url, ...(payload === undefined ? {} : { payload: payload as object }), headers: { authorization: `Bearer ${suite.token}`, "x-tenant-id": ctx.tenant } });

  async function itemWithEventAt(timestamp: string): Promise<string> {
    const created = await call("POST", "/graph/entities", { entities: [{ type: "Item", key: "m", attributes: { itemAction: "INGEST" } }] });
    const id = (created.json() as { entities: { id: string }[] }).entities[0]!.id;
    expect((await call("POST", `/items/${id}/events`, { events: [{ timestamp, value: 1 }] })).statusCode).to.equal(200);
    return id;
  }

  it("a query whose from has sub-millisecond digits does not answer an event before from", async () => {
    const id = await itemWithEventAt("2025-03-02T00:00:00.123Z");
    const answer = await call("POST", `/items/${id}/events/query`, {
      eventDateRange: { period: "Custom range", from: "2025-03-02T00:00:00.123456Z", to: "2025-03-03T00:00:00Z" },
    });
    // The event at .123 lies before .123456.
    expect(answer.statusCode, answer.body).to.equal(200);
    expect((answer.json() as { events: unknown[] }).events, answer.body).to.deep.equal([]);
  });

  it("a query whose to has sub-millisecond digits answers the event just before to", async () => {
    const id = await itemWithEventAt("2025-03-02T00:00:00.123Z");
    const answer = await call("POST", `/items/${id}/events/query`, {
      eventDateRange: { period: "Custom range", from: "2025-03-02T00:00:00Z", to: "2025-03-02T00:00:00.123456Z" },
    });
    expect(answer.statusCode, answer.body).to.equal(200);
    expect((answer.json() as { events: { timestamp: string }[] }).events.map((e) => e.timestamp)).to.deep.equal(["2025-03-02T00:00:00.123Z"]);
  });

  it("DELETE whose from has sub-millisecond digits does not delete an event before from", async () => {
    const id = await itemWithEventAt("2025-03-02T00:00:00.123Z");
    const answer = await call("DELETE", `/items/${id}/events?from=2025-03-02T00:00:00.1239Z&to=2025-03-02T00:00:01Z`);
    expect(answer.json(), answer.body).to.deep.equal({ deleted: 0 });
    const left = await call("POST", `/items/${id}/events/query`, {
      eventDateRange: { period: "Custom range", from: "2025-03-02T00:00:00Z", to: "2025-03-03T00:00:00Z" },
    });
    expect((left.json() as { events: unknown[] }).events, "the event at .123 is still stored").to.have.length(1);
  });
});
