import { expect } from "chai";
import { describeEachBackend } from "../support/backends.js";
import { adminServer } from "../support/server.js";

const T0 = Date.UTC(2025, 0, 1);
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

describeEachBackend("events API: latest, delete a range, export", (ctx) => {
  const suite = adminServer(ctx);
  const headers = () => ({ authorization: `Bearer ${suite.token}`, "x-tenant-id": ctx.tenant });
  const item = async (attributes: Record<string, unknown> = { itemAction: "INGEST" }) => {
    const res = await suite.server.app.inject({ method: "POST", url: "/graph/entities", headers: headers(), payload: { entities: [{ type: "Item", key: `i-${Math.random()}`, attributes }] } });
    return (res.json() as { entities: { id: string }[] }).entities[0]!.id;
  };
  const ingest = (id: string, events: unknown[]) => suite.server.app.inject({ method: "POST", url: `/items/${id}/events`, headers: headers(), payload: { events } });
  const allRange = { eventDateRange: { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2026-01-01T00:00:00Z" } };

  it("answers the latest event of one item, null for an item without events, 404 for an unknown one", async () => {
    const a = await item();
    const empty = await item();
    await ingest(a, [{ timestamp: at(5), value: 5, sourceId: "s" }, { timestamp: at(1), value: 1 }, { timestamp: at(3), value: 3 }]);
    const latest = await suite.server.app.inject({ method: "GET", url: `/items/${a}/events/latest`, headers: headers() });
    expect(latest.json()).to.deep.equal({ event: { timestamp: at(5), value: 5, sourceId: "s" } });
    expect((await suite.server.app.inject({ method: "GET", url: `/items/${empty}/events/latest`, headers: headers() })).json()).to.deep.equal({ event: null });
    const unknown = await suite.server.app.inject({ method: "GET", url: `/items/00000000-0000-4000-8000-000000000000/events/latest`, headers: headers() });
    expect(unknown.statusCode).to.equal(404);
    expect(unknown.json()).to.include({ code: "INVALID_REQUEST" });
  });

  it("answers the latest event of each item of a list", async () => {
    const a = await item();
    const b = await item();
    await ingest(a, [{ timestamp: at(1), value: 1 }, { timestamp: at(2), value: 2 }]);
    const res = await suite.server.app.inject({ method: "POST", url: "/events/latest", headers: headers(), payload: { itemIds: [a, b] } });
    expect(res.json()).to.deep.equal({ latest: [{ itemId: a, event: { timestamp: at(2), value: 2 } }, { itemId: b, event: null }] });
  });

  it("deletes an item's events in a half-open range and no other item's", async () => {
    const a = await item();
    const b = await item();
    await ingest(a, [0, 1, 2, 3, 4].map((s) => ({ timestamp: at(s), value: s })));
    await ingest(b, [{ timestamp: at(2), value: 9 }]);
    const res = await suite.server.app.inject({ method: "DELETE", url: `/items/${a}/events?from=${at(1)}&to=${at(3)}`, headers: headers() });
    expect(res.json()).to.deep.equal({ deleted: 2 });
    const left = await suite.server.app.inject({ method: "POST", url: `/items/${a}/events/query`, headers: headers(), payload: allRange });
    expect((left.json() as { events: { value: number }[] }).events.map((e) => e.value)).to.deep.equal([0, 3, 4]);
    const other = await suite.server.app.inject({ method: "POST", url: `/items/${b}/events/query`, headers: headers(), payload: allRange });
    expect((other.json() as { events: unknown[] }).events).to.have.length(1);
    const bad = await suite.server.app.inject({ method: "DELETE", url: `/items/${a}/events?from=${at(3)}&to=${at(1)}`, headers: headers() });
    expect(bad.statusCode).to.equal(400);
  });

  it("exports every raw event as NDJSON or CSV by Accept, beyond the JSON page limit", async () => {
    const a = await item();
    const n = 2500;
    await ingest(a, Array.from({ length: n }, (_, s) => ({ timestamp: at(s), value: s, ...(s === 0 ? { tags: ["x", "y"], sourceId: "a,b" } : {}) })));
    const ndjson = await suite.server.app.inject({ method: "POST", url: `/items/${a}/events/query`, headers: { ...headers(), accept: "application/x-ndjson" }, payload: allRange });
    expect(ndjson.headers["content-type"]).to.equal("application/x-ndjson");
    const lines = ndjson.body.trim().split("\n").map((l) => JSON.parse(l) as { value: number });
    expect(lines.map((e) => e.value)).to.deep.equal(Array.from({ length: n }, (_, s) => s));
    expect(lines[0]).to.deep.equal({ timestamp: at(0), value: 0, sourceId: "a,b", tags: ["x", "y"] });
    const csv = await suite.server.app.inject({ method: "POST", url: `/items/${a}/events/query`, headers: { ...headers(), accept: "text/csv" }, payload: allRange });
    const rows = csv.body.trim().split("\r\n");
    expect(rows[0]).to.equal("timestamp,value,sourceId,tags,entry,exit,from,to");
    expect(rows[1]).to.equal(`${at(0)},0,"a,b",x|y,,,,`);
    expect(rows).to.have.length(n + 1);
    // The export is an upload's input: it stores the same events again.
    const b = await item();
    const again = await suite.server.app.inject({ method: "POST", url: `/items/${b}/events`, headers: { ...headers(), "content-type": "text/csv" }, payload: csv.body });
    expect(again.json()).to.deep.equal({ stored: n });
  });

  it("exports text cells that a spreadsheet would run as formulas with a leading ', and an upload of the export stores them exactly as they were", async () => {
    const a = await item();
    const texts = ["=HYPERLINK(\"http://evil\",\"x\")", "+1+1", "-2", "@SUM(A1)", "\tcmd", "\rcmd", "'quoted", "''", "plain"];
    await ingest(a, texts.map((sourceId, s) => ({ timestamp: at(s), value: -1.5 - s, sourceId, tags: [sourceId.replace(/\r/g, "r"), "=x"] })));
    const csv = await suite.server.app.inject({ method: "POST", url: `/items/${a}/events/query`, headers: { ...headers(), accept: "text/csv" }, payload: allRange });
    const rows = csv.body.split("\r\n");
    expect(rows.slice(1, 5)).to.deep.equal([
      `${at(0)},-1.5,"'=HYPERLINK(""http://evil"",""x"")","'=HYPERLINK(""http://evil"",""x"")|=x",,,,`,
      `${at(1)},-2.5,'+1+1,'+1+1|=x,,,,`,
      `${at(2)},-3.5,'-2,'-2|=x,,,,`,
      `${at(3)},-4.5,'@SUM(A1),'@SUM(A1)|=x,,,,`,
    ]);
    // No cell of a text column begins with a formula character.
    for (const row of rows.slice(1, -1)) expect(row.split(",")[2]).to.match(/^("')|'|[a-z]/);
    const b = await item();
    const again = await suite.server.app.inject({ method: "POST", url: `/items/${b}/events`, headers: { ...headers(), "content-type": "text/csv" }, payload: csv.body });
    expect(again.json()).to.deep.equal({ stored: texts.length });
    const exported = async (id: string) =>
      (await suite.server.app.inject({ method: "POST", url: `/items/${id}/events/query`, headers: { ...headers(), accept: "application/x-ndjson" }, payload: allRange })).body;
    expect(await exported(b)).to.equal(await exported(a));
    expect((JSON.parse((await exported(b)).split("\n")[6]!) as { sourceId: string }).sourceId).to.equal("'quoted");
  });

  it("refuses an export sorted otherwise than by time, before anything is sent", async () => {
    const a = await item();
    const res = await suite.server.app.inject({
      method: "POST",
      url: `/items/${a}/events/query`,
      headers: { ...headers(), accept: "application/x-ndjson" },
      payload: { ...allRange, queryOptions: { sorting: { order: ["value"] } } },
    });
    expect(res.statusCode).to.equal(400);
    expect(res.json()).to.include({ code: "INVALID_REQUEST" });
  });
});
