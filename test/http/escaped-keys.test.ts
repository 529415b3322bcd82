import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { parseJson } from "../../src/json.js";
import { describeEachBackend } from "../support/backends.js";
import { adminServer } from "../support/server.js";

/**
 * Keys holding `"` and `\` through HTTP body → jsonb → response, after decoys that make V8's
 * JSON.parse misread them (docs/decisions/2026-11-23-json-parser-for-escaped-keys.md). Decoys for a key must come after
 * the same keys in their object and stay alive (a full GC forgets them), so the test keeps them,
 * as a library or an earlier request's objects would. jsonb orders keys by length, then bytes:
 * the keys have lengths 3 < 4 < 5, so the database sends them back in the order they were sent.
 */
describeEachBackend("escaped object keys through HTTP and the database", (ctx) => {
  const suite = adminServer(ctx);
  const headers = () => ({ authorization: `Bearer ${suite.token}`, "x-tenant-id": ctx.tenant });
  const decoys: unknown[] = [];

  /** Attributes whose later keys V8 would misread after {@link plantDecoys}: `k"ey` as `k\"e`, `ke\y"` as `ke\\y`. */
  function attributes(): Record<string, number> {
    const first = `q${randomBytes(1).toString("hex")}`; // few objects start with it, as the defect needs
    return { [first]: 0, 'k"ey': 1, 'ke\\y"': 2 };
  }

  /** For each escaped key, an object (kept) with the same keys before it and its raw characters as a key. */
  function plantDecoys(attrs: Record<string, number>): void {
    const keys = Object.keys(attrs);
    keys.forEach((key, i) => {
      const raw = JSON.stringify(key).slice(1, -1);
      if (raw === key) return;
      const before = keys.slice(0, i).map((k) => `${JSON.stringify(k)}:0,`);
      decoys.push(JSON.parse(`{${before.join("")}${JSON.stringify(raw.slice(0, key.length))}:0}`));
    });
  }

  it("reads a JSON body that starts with a byte order mark, as fastify's own parser did", async () => {
    const body = `\uFEFF${JSON.stringify({ entities: [{ type: "Marked", key: "bom1", attributes: { a: 1 } }] })}`;
    const stored = await suite.server.app.inject({ method: "POST", url: "/graph/entities", payload: body, headers: { ...headers(), "content-type": "application/json" } });
    expect(stored.statusCode, stored.body).to.equal(200);
    expect((parseJson(stored.body) as { entities: { key: string }[] }).entities.map((e) => e.key)).to.deep.equal(["bom1"]);
  });

  it("stores and reads back an entity's attribute keys holding quotes and backslashes", async () => {
    const attrs = attributes();
    plantDecoys(attrs);
    const body = JSON.stringify({ entities: [{ type: "Escaped", key: "e1", attributes: attrs }] });
    const stored = await suite.server.app.inject({ method: "POST", url: "/graph/entities", payload: body, headers: { ...headers(), "content-type": "application/json" } });
    expect(stored.statusCode, stored.body).to.equal(200);
    const id = (parseJson(stored.body) as { entities: { id: string }[] }).entities[0]!.id;

    // What the database holds, as text (no JSON parser involved): the keys arrived right.
    const row = (await ctx.db.knex("entities").where({ id }).first(ctx.db.knex.raw("attributes::text as attributes"))) as { attributes: string };
    expect(row.attributes).to.equal(`{${Object.entries(attrs).map(([k, v]) => `${JSON.stringify(k)}: ${v}`).join(", ")}}`);

    // Read back: jsonb parsed by the driver, the answer written by JSON.stringify, read here by parseJson.
    const read = await suite.server.app.inject({ method: "GET", url: `/graph/entities/${id}`, headers: headers() });
    expect(read.statusCode, read.body).to.equal(200);
    expect(parseJson(read.body)).to.deep.equal({ id, type: "Escaped", key: "e1", ...attrs });
  });

  it("stores an NDJSON event's keyValues keys holding quotes and backslashes as sent", async () => {
    const item = await suite.server.app.inject({
      method: "POST",
      url: "/graph/entities",
      payload: { entities: [{ type: "Item", key: "m1", attributes: { itemAction: "INGEST" } }] },
      headers: headers(),
    });
    const itemId = (parseJson(item.body) as { entities: { id: string }[] }).entities[0]!.id;
    const keyValues = Object.fromEntries(Object.entries(attributes()).map(([k, v]) => [k, String(v)]));
    plantDecoys(keyValues as unknown as Record<string, number>);
    const line = JSON.stringify({ timestamp: "2024-01-01T00:00:00Z", value: 1, keyValues });
    const upload = await suite.server.app.inject({ method: "POST", url: `/items/${itemId}/events`, payload: `${line}\n`, headers: { ...headers(), "content-type": "application/x-ndjson" } });
    expect(upload.statusCode, upload.body).to.equal(200);
    const query = await suite.server.app.inject({
      method: "POST",
      url: `/items/${itemId}/events/query`,
      payload: { eventDateRange: { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00Z", timeZone: "UTC" } },
      headers: headers(),
    });
    expect(query.statusCode, query.body).to.equal(200);
    const events = (parseJson(query.body) as { events: { keyValues?: Record<string, string> }[] }).events;
    expect(events.map((e) => e.keyValues)).to.deep.equal([keyValues]);
  });

  it("reads json and jsonb columns with escaped keys right (the driver's type parsers)", async () => {
    const attrs = attributes();
    plantDecoys(attrs);
    const text = JSON.stringify(attrs);
    const result = (await ctx.db.knex.raw("select ?::jsonb as b, ?::json as j", [text, text])) as { rows: { b: unknown; j: unknown }[] };
    expect(result.rows[0]).to.deep.equal({ b: attrs, j: attrs });
  });
});
