import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { brotliCompressSync, constants, deflateSync, gzipSync } from "node:zlib";
import { expect } from "chai";
import type { LightMyRequestResponse } from "fastify";
import { loadConfig } from "../../src/config.js";
import { MAX_JSON_DEPTH, TEXT_MAX_BYTES } from "../../src/input.js";
import { describeEachBackend } from "../support/backends.js";
import { adminServer, testServer, type TestServer } from "../support/server.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";

/**
 * Issue 24 items 5, 6 and 8: text bounded in UTF-8 bytes by its index, JSON bounded in depth,
 * upload lines bounded while they stream, CSV headers without repeats, bodies in a Content-Encoding.
 */

type Problem = { status: number; code: string; detail: string; errors?: { path?: string; message: string; line?: number }[] };

function expectProblem(res: LightMyRequestResponse, status: number): Problem {
  expect(res.statusCode, res.body.slice(0, 500)).to.equal(status);
  expect(res.headers["content-type"]).to.match(/^application\/problem\+json/);
  const body = res.json() as Problem;
  expect(body).to.include({ status, code: "INVALID_REQUEST" });
  return body;
}

/** `count` characters drawn at random from [from, to] (code points): text no compression shortens. */
function randomText(count: number, from: number, to: number): string {
  let text = "";
  for (let i = 0; i < count; i++) text += String.fromCodePoint(from + Math.floor(Math.random() * (to - from + 1)));
  return text;
}
const cjk = (count: number) => randomText(count, 0x4e00, 0x9fff); // 3 bytes each
const emoji = (count: number) => randomText(count, 0x1f300, 0x1f5ff); // 4 bytes each
const twoByte = (count: number) => randomText(count, 0x0400, 0x04ff); // 2 bytes each (Cyrillic)

/** A value nested `depth` levels: arrays, or objects under the key `k`. */
function nested(depth: number, kind: "array" | "object" = "array"): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = kind === "array" ? [value] : { k: value };
  return value;
}
/** The same as JSON text, written without recursion (JSON.stringify cannot write 20,000 levels). */
function nestedText(depth: number, kind: "array" | "object" = "array"): string {
  return kind === "array" ? `${"[".repeat(depth)}1${"]".repeat(depth)}` : `${'{"k":'.repeat(depth)}1${"}".repeat(depth)}`;
}

const RANGE = { period: "Custom range", from: "1000-01-01T00:00:00Z", to: "9999-12-31T23:59:59.999Z", timeZone: "UTC" };

describeEachBackend("input limits: bytes of indexed text, JSON depth, upload lines, CSV headers, encodings", (ctx) => {
  const suite = adminServer(ctx);
  const headers = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${suite.token}`, "x-tenant-id": ctx.tenant, ...extra });
  const call = (method: "POST" | "PUT" | "GET", url: string, payload?: unknown, extra: Record<string, string> = {}) =>
    suite.server.app.inject({ method, url, payload: payload as string, headers: headers(extra) });
  const item = async (key = "m1") => {
    const res = await call("POST", "/graph/entities", { entities: [{ type: "Item", key, attributes: { itemAction: "INGEST" } }] });
    expect(res.statusCode, res.body).to.equal(200);
    return res.json<{ entities: { id: string }[] }>().entities[0]!.id;
  };
  const stored = async (id: string) =>
    (await call("POST", `/items/${id}/events/query`, { eventDateRange: RANGE })).json<{ events: { timestamp: string; sourceId?: string }[] }>().events;
  const entityCount = async () => (await call("GET", "/graph/entities")).json<{ total: number }>().total;

  describe("indexed text is bounded in UTF-8 bytes (item 5)", () => {
    it("refuses a 3,000-character sourceId with a 400 naming the field and the limit, and stores nothing of the upload", async () => {
      const id = await item();
      const events = [
        { timestamp: "2024-01-01T00:00:00Z", value: 1 },
        { timestamp: "2024-01-01T01:00:00Z", value: 2, sourceId: "s".repeat(3000) },
        { timestamp: "2024-01-01T02:00:00Z", value: 3 },
      ];
      const body = expectProblem(await call("POST", `/items/${id}/events`, { events }), 400);
      expect(body.errors).to.deep.include({ path: "events[1].sourceId", row: 1, message: `sourceId is 3000 bytes in UTF-8, longer than the ${TEXT_MAX_BYTES.sourceId} bytes allowed` });
      expect(await stored(id)).to.deep.equal([]);
      // The same upload in NDJSON and CSV, and with ?partial=true the good rows only.
      const ndjson = events.map((e) => JSON.stringify(e)).join("\n");
      expect(expectProblem(await call("POST", `/items/${id}/events`, ndjson, { "content-type": "application/x-ndjson" }), 400).errors![0]!.path).to.equal("events[1].sourceId");
      const csv = ["timestamp,value,sourceId", ...events.map((e) => `${e.timestamp},${e.value},${e.sourceId ?? ""}`)].join("\n");
      expect(expectProblem(await call("POST", `/items/${id}/events`, csv, { "content-type": "text/csv" }), 400).errors![0]!.path).to.equal("events[1].sourceId");
      const partial = await call("POST", `/items/${id}/events?partial=true`, { events });
      expect(partial.statusCode, partial.body).to.equal(200);
      expect(partial.json()).to.deep.include({ stored: 2, rejectedTotal: 1 });
    });

    it("stores a sourceId of exactly 2,000 bytes of incompressible multi-byte text, and refuses one byte more", async () => {
      const id = await item();
      const longest = `${cjk(666)}ab`; // 1,998 + 2 bytes
      const res = await call("POST", `/items/${id}/events`, { events: [{ timestamp: "2024-01-01T00:00:00Z", value: 1, sourceId: longest }] });
      expect(res.statusCode, res.body).to.equal(200);
      expect((await stored(id)).map((e) => e.sourceId)).to.deep.equal([longest]);
      const body = expectProblem(await call("POST", `/items/${id}/events`, { events: [{ timestamp: "2024-01-01T00:00:00Z", value: 1, sourceId: `${longest}x` }] }), 400);
      expect(body.errors![0]).to.include({ path: "events[0].sourceId", message: "sourceId is 2001 bytes in UTF-8, longer than the 2000 bytes allowed" });
    });

    it("refuses an entity key of 1,000 CJK characters (3,000 bytes), naming the key and the limit; stores nothing", async () => {
      const body = expectProblem(await call("POST", "/graph/entities", { entities: [{ type: "Meter", key: "ok" }, { type: "Meter", key: cjk(1000) }] }), 400);
      expect(body.errors).to.deep.include({ path: "body.entities.1.key", message: `must be at most ${TEXT_MAX_BYTES.key} bytes in UTF-8` });
      expect(await entityCount()).to.equal(0);
    });

    it("refuses a type or a relation over 400 bytes and a link end's key over 2,000 bytes, naming each", async () => {
      const type = expectProblem(await call("POST", "/graph/entities", { entities: [{ type: twoByte(201), key: "k" }] }), 400);
      expect(type.errors).to.deep.include({ path: "body.entities.0.type", message: "must be at most 400 bytes in UTF-8" });
      const link = expectProblem(await call("POST", "/graph/links", { links: [{ from: { type: "A", key: emoji(501) }, relation: twoByte(201), to: { type: "B", key: "b" } }] }), 400);
      const paths = link.errors!.map((e) => e.path);
      expect(paths).to.include("body.links.0.relation");
      expect(paths.some((p) => p?.startsWith("body.links.0.from"))).to.equal(true);
    });

    it("stores the longest key of every index beside the longest tenant (128 characters): entity, link and event", async () => {
      const tenant = `${ctx.tenant}-`.padEnd(128, "t");
      const as = { "x-tenant-id": tenant };
      const type = twoByte(200); // 400 bytes
      const key = emoji(500); // 2,000 bytes
      const entities = await suite.server.app.inject({
        method: "POST",
        url: "/graph/entities",
        headers: headers(as),
        payload: { entities: [{ type, key }, { type, key: emoji(500) }, { type: "Item", key, attributes: { itemAction: "INGEST" } }] },
      });
      expect(entities.statusCode, entities.body.slice(0, 300)).to.equal(200);
      const [a, b, meter] = entities.json<{ entities: { id: string; key: string }[] }>().entities;
      expect(a!.key).to.equal(key);
      const link = await suite.server.app.inject({ method: "POST", url: "/graph/links", headers: headers(as), payload: { links: [{ from: { id: a!.id }, relation: twoByte(200), to: { type, key: b!.key } }] } });
      expect(link.statusCode, link.body.slice(0, 300)).to.equal(200);
      const sourceId = cjk(666) + "ab";
      const events = await suite.server.app.inject({ method: "POST", url: `/items/${meter!.id}/events`, headers: headers(as), payload: { events: [{ timestamp: "2024-01-01T00:00:00Z", value: 1, sourceId }] } });
      expect(events.statusCode, events.body).to.equal(200);
    });
  });

  describe("JSON nests at most MAX_JSON_DEPTH levels, in every body (item 5)", () => {
    for (const depth of [5_000, 10_000, 20_000]) {
      it(`refuses a calculation's inputDefinitions nested ${depth} levels with a 400 naming the path`, async () => {
        const text = `{"externalId":"deep","calculationType":"EXPRESSION","data":{"inputDefinitions":${nestedText(depth)},"calculation":{"expression":"1"}}}`;
        const body = expectProblem(await call("POST", "/calculation-definitions", text, { "content-type": "application/json" }), 400);
        const path = `body.data.inputDefinitions${"[0]".repeat(MAX_JSON_DEPTH - 2)}`;
        expect(body.errors).to.deep.equal([{ path, message: `nests deeper than ${MAX_JSON_DEPTH} levels of objects and arrays, the most a JSON value may` }]);
        expect(body.detail).to.equal(`the request is not valid: ${path} nests deeper than ${MAX_JSON_DEPTH} levels of objects and arrays, the most a JSON value may`);
      });
    }

    it("refuses an API Definition's data nested 10,000 levels (create, replace and test), and an event's keyValues, a date range and a timeline query's options", async () => {
      const deep = nestedText(10_000, "object");
      const api = `{"externalId":"deep","query":"Item ?i.","transform":"$","data":{"x":${deep}}}`;
      for (const [method, url] of [
        ["POST", "/api-definitions"],
        ["PUT", "/api-definitions/deep"],
      ] as const) {
        const body = expectProblem(await call(method, url, api, { "content-type": "application/json" }), 400);
        expect(body.errors![0]!.path).to.match(/^body\.data\.x(\.k)+$/);
      }
      const bodies: [string, string][] = [
        ["/api-definitions/test", `{"definition":{"externalId":"t","query":"Item ?i.","transform":"$","data":${deep}},"queryParameters":{}}`],
        ["/events", `{"events":[{"itemId":"3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b","timestamp":"2024-01-01T00:00:00Z","value":1,"keyValues":${deep}}]}`],
        ["/timeline/query", `{"itemIds":[],"eventDateRange":${deep}}`],
        ["/graph/entities", `{"entities":[{"type":"A","key":"a","attributes":{"x":${deep}}}]}`],
      ];
      for (const [url, text] of bodies) {
        const body = expectProblem(await call("POST", url, text, { "content-type": "application/json" }), 400);
        expect(body.errors![0]!.message, url).to.match(/nests deeper than 64 levels/);
      }
      expect(await entityCount()).to.equal(0);
    });

    it("refuses an NDJSON line nested 10,000 levels as a bad row, naming its place", async () => {
      const id = await item();
      const line = `{"timestamp":"2024-01-01T00:00:00Z","value":1,"entityReferences":[{"type":"a","id":"b","role":${nestedText(10_000)}}]}`;
      const body = expectProblem(await call("POST", `/items/${id}/events`, line, { "content-type": "application/x-ndjson" }), 400);
      expect(body.errors![0]!.path).to.match(/^events\[0\]\.entityReferences\[0\]\.role(\[0\])+$/);
      expect(body.errors![0]!.message).to.match(/nests deeper than 64 levels/);
    });

    it("accepts exactly MAX_JSON_DEPTH levels and stores them as sent", async () => {
      // The body, `data` and `x` are three levels: the value under x takes the rest.
      const data = { x: nested(MAX_JSON_DEPTH - 2, "object") };
      const res = await call("POST", "/api-definitions", { externalId: "deepest", query: "Item ?i.", transform: "$", data });
      expect(res.statusCode, res.body).to.equal(201);
      expect((await call("GET", "/api-definitions/deepest")).json<{ data: unknown }>().data).to.deep.equal(data);
      const over = await call("POST", "/api-definitions", { externalId: "deeper", query: "Item ?i.", transform: "$", data: { x: nested(MAX_JSON_DEPTH - 1, "object") } });
      expectProblem(over, 400);
    });
  });

  describe("CSV headers name each column once (item 8)", () => {
    it("refuses timestamp,value,value with a 400 naming the repeated column, and stores nothing", async () => {
      const id = await item();
      const body = expectProblem(await call("POST", `/items/${id}/events`, "timestamp,value,value\n2024-01-01T00:00:00Z,1,2\n", { "content-type": "text/csv" }), 400);
      expect(body.errors![0]!.message).to.equal("the CSV header names the column value more than once; each column may appear once: timestamp,value,value");
      expect(await stored(id)).to.deep.equal([]);
    });
  });

  describe("Content-Encoding (item 8)", () => {
    const events = { events: [{ timestamp: "2024-01-01T00:00:00Z", value: 1 }, { timestamp: "2024-01-01T01:00:00Z", value: 2 }] };
    for (const [name, encode] of [
      ["gzip", gzipSync],
      ["deflate", deflateSync],
      ["br", brotliCompressSync],
    ] as const) {
      it(`decodes a ${name} JSON body, and a ${name} NDJSON and CSV upload`, async () => {
        const id = await item();
        const json = await call("POST", `/items/${id}/events`, encode(JSON.stringify(events)), { "content-type": "application/json", "content-encoding": name });
        expect(json.statusCode, json.body).to.equal(200);
        expect(json.json()).to.deep.equal({ stored: 2 });
        const ndjson = encode('{"timestamp":"2024-01-01T02:00:00Z","value":3}\n{"timestamp":"2024-01-01T03:00:00Z","value":4}\n');
        expect((await call("POST", `/items/${id}/events`, ndjson, { "content-type": "application/x-ndjson", "content-encoding": name })).json()).to.deep.equal({ stored: 2 });
        const csv = encode("timestamp,value\n2024-01-01T04:00:00Z,5\n");
        expect((await call("POST", `/items/${id}/events`, csv, { "content-type": "text/csv", "content-encoding": name })).json()).to.deep.equal({ stored: 1 });
        expect((await stored(id)).length).to.equal(5);
      });
    }

    it("decodes several encodings in the order they were applied (gzip, then br)", async () => {
      const id = await item();
      const res = await call("POST", `/items/${id}/events`, brotliCompressSync(gzipSync(JSON.stringify(events))), { "content-type": "application/json", "content-encoding": "gzip, br" });
      expect(res.json()).to.deep.equal({ stored: 2 });
    });

    it("answers a zip bomb (11 MB of JSON in 11 kB of gzip) with a 413 naming BODY_LIMIT_BYTES", async () => {
      const bomb = gzipSync(`{"events":[],"x":"${" ".repeat(11 * 1024 * 1024)}"}`);
      expect(bomb.length).to.be.below(100_000);
      const body = expectProblem(await call("POST", "/events", bomb, { "content-type": "application/json", "content-encoding": "gzip" }), 413);
      expect(body.detail).to.match(/BODY_LIMIT_BYTES/);
    });

    it("answers an unknown encoding with a 415 naming Content-Encoding, and a body that does not decode with a 400", async () => {
      const unknown = expectProblem(await call("POST", "/events", JSON.stringify(events), { "content-type": "application/json", "content-encoding": "compress" }), 415);
      expect(unknown.errors).to.deep.equal([{ path: "headers.content-encoding", message: '"compress" is not supported; only gzip, deflate and br' }]);
      const id = await item();
      for (const type of ["application/json", "application/x-ndjson", "text/csv"]) {
        const broken = expectProblem(await call("POST", `/items/${id}/events`, "this is not gzip", { "content-type": type, "content-encoding": "gzip" }), 400);
        expect(broken.errors![0]!.path, type).to.equal("headers.content-encoding");
      }
      expect(await stored(id)).to.deep.equal([]);
    });
  });

  describe("BODY_LIMIT_BYTES holds for the decoded bytes of an encoded upload, blank lines counted (item 8)", () => {
    const LIMIT = 1024 * 1024;
    let small: TestServer;
    before(async () => {
      small = await testServer(ctx.db, { BODY_LIMIT_BYTES: String(LIMIT) });
    });
    after(() => small.app.close());
    const upload = (url: string, payload: Buffer, type: string, coding: string) =>
      small.app.inject({ method: "POST", url, payload, headers: headers({ "content-type": type, "content-encoding": coding }) });
    /** NDJSON events an hour apart from 2024-01-01, at least `bytes` of them. */
    const ndjson = (bytes: number) => {
      const lines: string[] = [];
      let size = 0;
      for (let i = 0; size < bytes; i++) {
        const line = `{"timestamp":"${new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString()}","value":${i}}\n`;
        lines.push(line);
        size += line.length;
      }
      return lines.join("");
    };

    it("reads exactly the limit decoded, blank lines and all, and refuses one byte more with a 413 naming BODY_LIMIT_BYTES", async () => {
      const id = await item();
      for (const [type, text] of [
        ["application/x-ndjson", (n: number) => "\n".repeat(n)],
        ["text/csv", (n: number) => `timestamp,value\n${" ".repeat(n - 17)}\n`],
      ] as const) {
        expect(Buffer.byteLength(text(LIMIT)), type).to.equal(LIMIT);
        const exact = await upload(`/items/${id}/events`, gzipSync(text(LIMIT)), type, "gzip");
        expect(exact.statusCode, `${type}: ${exact.body}`).to.equal(200);
        const over = expectProblem(await upload(`/items/${id}/events`, gzipSync(text(LIMIT + 1)), type, "gzip"), 413);
        expect(over.detail, type).to.equal(`the request body, decoded from its Content-Encoding, is larger than ${LIMIT} bytes, the most BODY_LIMIT_BYTES allows; nothing was stored`);
        expect(over.errors, type).to.deep.equal([{ path: "body", message: `decoded, it is larger than ${LIMIT} bytes, the most BODY_LIMIT_BYTES allows` }]);
      }
    });

    it("stores nothing of an upload refused part-way, after batches of it were written, with ?partial=true too; the same within the limit is stored", async () => {
      const id = await item();
      // Rows past the limit (1 MiB for the test): more than two batches of 5,000 are written before it is reached.
      const text = ndjson(LIMIT * 1.2);
      expect(text.slice(0, LIMIT).split("\n").length).to.be.above(10_000);
      const br = (data: string) => brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } });
      const withItemIds = text.replaceAll('{"timestamp"', `{"itemId":"${id}","timestamp"`);
      for (const [url, coding, body] of [
        [`/items/${id}/events`, "gzip", gzipSync(text)],
        [`/items/${id}/events?partial=true`, "deflate", deflateSync(text)],
        ["/events", "br", br(withItemIds)],
      ] as const) {
        const res = expectProblem(await upload(url, body, "application/x-ndjson", coding), 413);
        expect(res.detail, url).to.match(/BODY_LIMIT_BYTES allows; nothing was stored$/);
      }
      expect(await stored(id)).to.deep.equal([]);
      // A legitimate encoded upload within the limit is read whole.
      const within = ndjson(LIMIT - 200);
      expect(within.length).to.be.at.most(LIMIT);
      const ok = await upload(`/items/${id}/events`, br(within), "application/x-ndjson", "br");
      expect(ok.json()).to.deep.equal({ stored: within.split("\n").length - 1 });
    });
  });

  describe("encoded bombs of blank lines over a real socket (item 8)", () => {
    let base: { port: number };
    let server: TestServer;
    // 30 M blank lines (or 15 M lines of a space): a few kilobytes encoded, 30 MB decoded, three times the default limit.
    const blank = Buffer.from("\n".repeat(30_000_000));
    const spaces = Buffer.from(`timestamp,value\n${" \n".repeat(15_000_000)}`);
    const fast = { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } };
    const bombs = [
      ["gzip", "application/x-ndjson", gzipSync(blank)],
      ["br", "application/x-ndjson", brotliCompressSync(blank, fast)],
      ["deflate", "application/x-ndjson", deflateSync(blank)],
      ["gzip", "text/csv", gzipSync(spaces)],
    ] as const;
    before(async () => {
      server = await testServer(ctx.db);
      await server.app.listen({ port: 0, host: "127.0.0.1" });
      base = { port: (server.app.server.address() as AddressInfo).port };
    });
    after(() => server.app.close());

    /** A request over the socket: its status, body and how long it took (ms). */
    const send = (method: string, path: string, body?: Buffer, extra: Record<string, string> = {}) =>
      new Promise<{ status: number; body: string; ms: number }>((resolve, reject) => {
        const start = performance.now();
        const req = httpRequest({ host: "127.0.0.1", port: base.port, method, path, headers: { ...headers(), ...extra } }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString(), ms: performance.now() - start }));
        });
        req.on("error", reject);
        req.end(body);
      });

    for (const [coding, type, bomb] of bombs) {
      it(`answers a ${coding} ${type} bomb (${bomb.length} bytes, 30 MB of blank lines) with a 413 in a time bounded by the limit's, /health answering meanwhile`, async function () {
        this.timeout(120_000);
        expect(bomb.length).to.be.below(64 * 1024);
        const id = await item();
        const path = `/items/${id}/events`;
        // A normal small upload, in the same encoding: the measure of time on this machine now.
        const small = type === "text/csv" ? "timestamp,value\n2024-01-01T00:00:00Z,1\n" : '{"timestamp":"2024-01-01T00:00:00Z","value":1}\n';
        const encode = coding === "gzip" ? gzipSync : coding === "br" ? brotliCompressSync : deflateSync;
        const normal: number[] = [];
        for (let i = 0; i < 3; i++) {
          const res = await send("POST", path, encode(small), { "content-type": type, "content-encoding": coding });
          expect(res.status, res.body).to.equal(200);
          normal.push(res.ms);
        }
        const healths: number[] = [];
        let polling = true;
        const poll = (async () => {
          while (polling) {
            healths.push((await send("GET", "/health")).ms);
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        })();
        const res = await send("POST", path, bomb, { "content-type": type, "content-encoding": coding });
        polling = false;
        await poll;
        expect(res.status, res.body.slice(0, 300)).to.equal(413);
        expect((JSON.parse(res.body) as Problem).detail).to.match(/BODY_LIMIT_BYTES/);
        // Decoding stops at the limit (10 MiB of 30 MB) and blank lines cost a scan of their bytes:
        // a few hundred ms here, against ~30 s when every one of the 30 M lines was read as a row.
        const median = normal.sort((x, y) => x - y)[1]!;
        expect(res.ms, `the bomb took ${Math.round(res.ms)} ms, a small upload ${Math.round(median)} ms`).to.be.below(Math.max(median, 5) * 400);
        expect(Math.max(...healths), `/health took ${healths.map(Math.round).join(", ")} ms`).to.be.below(1000);
        expect(await stored(id)).to.have.length(1);
      });
    }
  });

  describe("UPLOAD_LINE_LIMIT_BYTES: the longest NDJSON line and CSV row (item 6)", () => {
    let small: TestServer;
    before(async () => {
      small = await testServer(ctx.db, { UPLOAD_LINE_LIMIT_BYTES: "2048" });
    });
    after(() => small.app.close());
    const upload = (id: string, text: string, type: string) => small.app.inject({ method: "POST", url: `/items/${id}/events`, payload: text, headers: headers({ "content-type": type }) });

    it("is a setting: 1 MiB by default, from 1,024 bytes", () => {
      expect(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }).uploadLineLimitBytes).to.equal(1024 * 1024);
      expect(loadConfig({ JWT_SECRET: TEST_JWT_SECRET, UPLOAD_LINE_LIMIT_BYTES: "4096" }).uploadLineLimitBytes).to.equal(4096);
      expect(() => loadConfig({ JWT_SECRET: TEST_JWT_SECRET, UPLOAD_LINE_LIMIT_BYTES: "100" })).to.throw(/UPLOAD_LINE_LIMIT_BYTES/);
    });

    it("stores a line of exactly the limit and refuses one byte more with a 413 naming the setting and the line; nothing stored", async () => {
      const id = await item();
      const line = (bytes: number, hour: string) => {
        const head = `{"timestamp":"2024-01-01T${hour}:00:00Z","value":1,"keyValues":{"pad":"`;
        const pad = bytes - head.length - 3;
        return `${head}${"é".repeat(Math.floor(pad / 2))}${pad % 2 === 1 ? "a" : ""}"}}`;
      };
      const exact = line(2048, "00");
      expect(Buffer.byteLength(exact)).to.equal(2048);
      const ok = await upload(id, `${exact}\r\n`, "application/x-ndjson");
      expect(ok.json()).to.deep.equal({ stored: 1 });
      const longer = `${line(2048, "01").slice(0, -3)}x"}}`;
      expect(Buffer.byteLength(longer)).to.equal(2049);
      const body = expectProblem(await upload(id, `{"timestamp":"2024-01-01T02:00:00Z","value":1}\n\n${longer}\n`, "application/x-ndjson"), 413);
      expect(body.errors).to.deep.equal([{ path: "body", line: 3, message: "line 3 of the upload is longer than 2048 bytes, the most UPLOAD_LINE_LIMIT_BYTES allows" }]);
      expect((await stored(id)).length).to.equal(1);
    });

    it("refuses a CSV row over the limit (one field of it) with a 413 naming the setting", async () => {
      const id = await item();
      const body = expectProblem(await upload(id, `timestamp,value,sourceId\n2024-01-01T00:00:00Z,1,"${"x".repeat(3000)}"\n`, "text/csv"), 413);
      expect(body.detail).to.match(/^row 2 of the upload is longer than 2048 bytes, the most UPLOAD_LINE_LIMIT_BYTES allows/);
      expect(await stored(id)).to.deep.equal([]);
    });

    it("reads a CSV row whose fields are exactly the limit in bytes, and refuses one whose last character crosses it", async () => {
      const id = await item();
      // Fields: 20 + 1 bytes, then the tags padded to the rest (tags are not bounded but by the row).
      const row = (padBytes: number, last: string) => `2024-01-01T00:00:00Z,1,"${"x".repeat(padBytes - Buffer.byteLength(last))}${last}"`;
      const exact = await upload(id, `timestamp,value,tags\n${row(2048 - 21, "中")}\n`, "text/csv");
      expect(exact.json()).to.deep.equal({ stored: 1 });
      const over = expectProblem(await upload(id, `timestamp,value,tags\n${row(2049 - 21, "中")}\n`, "text/csv"), 413);
      expect(over.errors![0]).to.include({ path: "body", line: 2 });
    });
  });

  describe("a 50 MB line over a real socket (item 6)", () => {
    let base: { port: number };
    let server: TestServer;
    before(async () => {
      server = await testServer(ctx.db);
      await server.app.listen({ port: 0, host: "127.0.0.1" });
      base = { port: (server.app.server.address() as AddressInfo).port };
    });
    after(() => server.app.close());

    /** GET /health: its status. */
    const health = () =>
      new Promise<number>((resolve, reject) => {
        httpRequest({ host: "127.0.0.1", port: base.port, path: "/health" }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        })
          .on("error", reject)
          .end();
      });

    /**
     * Starts an upload of `head`, then one line or field of `size` bytes written in 1 MiB pieces, and
     * resolves with the answer as soon as it comes — before the body is over, if the server answers
     * while it streams. `sent`: the bytes written by then.
     */
    const stream = (id: string, type: string, head: string, size: number) =>
      new Promise<{ status: number; body: Problem; sent: number; healthy: number[] }>((resolve, reject) => {
        let sent = 0;
        const healthy: number[] = [];
        const req = httpRequest(
          { host: "127.0.0.1", port: base.port, method: "POST", path: `/items/${id}/events`, headers: { ...headers(), "content-type": type, "transfer-encoding": "chunked" } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString()) as Problem, sent, healthy }));
          },
        );
        req.on("error", reject);
        req.write(head);
        const piece = Buffer.alloc(1024 * 1024, "x");
        const next = async () => {
          // /health is asked while the upload is open, and answers.
          if (sent === 0) healthy.push(await health());
          if (sent >= size) {
            req.end();
            return;
          }
          sent += piece.length;
          if (req.write(piece)) setImmediate(() => void next());
          else req.once("drain", () => void next());
        };
        void next();
      });

    it("answers a 50 MB NDJSON line with a 413 naming UPLOAD_LINE_LIMIT_BYTES while it streams, and /health meanwhile", async function () {
      this.timeout(60_000);
      const id = await item();
      const res = await stream(id, "application/x-ndjson", '{"timestamp":"2024-01-01T00:00:00Z","value":1}\n{"timestamp":"2024-01-01T01:00:00Z","value":1,"sourceId":"', 50 * 1024 * 1024);
      expect(res.status).to.equal(413);
      expect(res.body.detail).to.match(/^line 2 of the upload is longer than 1048576 bytes, the most UPLOAD_LINE_LIMIT_BYTES allows/);
      // Answered before the line was over: not buffered whole first.
      expect(res.sent).to.be.below(50 * 1024 * 1024);
      expect(res.healthy).to.deep.equal([200]);
      expect(await health()).to.equal(200);
      expect(await stored(id)).to.deep.equal([]);
    });

    it("answers a 50 MB CSV field with a 413 naming UPLOAD_LINE_LIMIT_BYTES while it streams", async function () {
      this.timeout(60_000);
      const id = await item();
      const res = await stream(id, "text/csv", 'timestamp,value,sourceId\n2024-01-01T00:00:00Z,1,"', 50 * 1024 * 1024);
      expect(res.status).to.equal(413);
      expect(res.body.detail).to.match(/UPLOAD_LINE_LIMIT_BYTES/);
      expect(res.sent).to.be.below(50 * 1024 * 1024);
      expect(await health()).to.equal(200);
    });
  });
});
