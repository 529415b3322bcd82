import { randomUUID } from "node:crypto";
import { Ajv, type ValidateFunction } from "ajv";
import ajvFormats from "ajv-formats";
import { expect } from "chai";
import fc from "fast-check";
import { SignJWT } from "jose";
import { INTERVALS } from "../../src/timeseries/buckets.js";
import { PERIODS } from "../../src/timeseries/periods.js";
import { METRICS } from "../../src/timeseries/query.js";
import { describeEachBackend, randomTenant } from "../support/backends.js";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import {
  anyValue,
  arbitraryOf,
  hostileDates,
  hostileNumbers,
  hostileString,
  hostileStrings,
  deepValue,
  jsonText,
  sizedText,
  type Hints,
  type JsonSchema,
} from "../support/schema-arbitrary.js";
import { adminServer, type TestServer, withoutRequestId } from "../support/server.js";
import { hsToken, TEST_JWT_SECRET, unsignedToken } from "../support/tokens.js";

/**
 * Issue 13 §6a: a fuzzer driven by the OpenAPI description. For every operation of /openapi.json it
 * builds requests from the schemas of its parameters and body (test/support/schema-arbitrary.ts),
 * mixed with hostile strings, numbers, dates, keys, headers, bodies and tokens, and checks each answer:
 * a status the description documents for that operation, never a 5xx, problem+json on every error,
 * a 2xx body that matches its documented schema, and no row of another tenant. The server must
 * answer /health after every batch.
 *
 * Issue 24 widened it: text sized in UTF-8 bytes on either side of every limit (wide characters),
 * JSON nested up to 20,000 levels anywhere a value goes, and uploads (test/http/fuzz.test.ts
 * `uploadAttacks`) whose answer the contract fixes: lines and CSV fields past
 * UPLOAD_LINE_LIMIT_BYTES (413), CSV headers naming a column twice (400), bodies in a
 * Content-Encoding (answered as the same body sent plain), an unknown encoding (415), one that
 * does not decode (400), a zip bomb (413) — JSON, or an NDJSON or CSV upload of blank lines that
 * decodes past BODY_LIMIT_BYTES, in gzip, deflate or br.
 *
 * FUZZ_CASES (per backend, default 10,000) and FUZZ_SEED (printed on every run) reproduce a run.
 */

const CASES = Number(process.env.FUZZ_CASES ?? 10_000);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
const BATCH = 250;

type Json = Record<string, unknown>;
interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  schema: JsonSchema;
}
interface Operation {
  operationId: string;
  security?: unknown;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { content?: Record<string, { schema: JsonSchema }> }>;
}
interface Route {
  method: string;
  path: string;
  op: Operation;
  /** Documented 2xx answers, by status, checked against their schema. */
  success: Map<number, ValidateFunction | undefined>;
}

interface Case {
  route: number;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
  /** The statuses the contract allows for this very request, and why (uploads of issue 24). */
  expected?: { statuses: number[]; reason: string };
  /** The same request sent plain (no Content-Encoding): the case must be answered as it is. */
  twin?: { headers: Record<string, string>; payload: string };
}

/** What the second tenant holds: none of it may appear in any answer to the first. */
interface Secrets {
  tenant: string;
  values: string[];
}

const RANGE = { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00Z", timeZone: "UTC" };

const addFormats = ajvFormats.default;

describeEachBackend("OpenAPI-driven fuzzer", (ctx) => {
  // The operator token (every tenant) seeds both tenants; the fuzzer itself never carries it.
  const suite = adminServer(ctx);
  let server: TestServer;
  let operator: string;
  before(() => {
    server = suite.server;
    operator = suite.token;
  });

  async function call(token: string, tenant: string, method: string, url: string, payload?: unknown): Promise<Json> {
    const res = await server.app.inject({
      method: method as "POST",
      url,
      headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenant },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
    expect(res.statusCode, `${method} ${url}: ${res.body}`).to.be.oneOf([200, 201]);
    return res.json() as Json;
  }

  /** Entities, a link, events, an API definition and a calculation definition, each named with `mark`. */
  async function seed(tenant: string, mark: string) {
    const key = `${mark}-${randomUUID()}`;
    const secretValue = `${mark}-attribute-${randomUUID()}`;
    const source = `${mark}-source-${randomUUID()}`;
    const { entities } = (await call(operator, tenant, "POST", "/graph/entities", {
      entities: [
        { type: "Agreement", key, attributes: { secret: secretValue, publicId: `${mark}-public-${randomUUID()}` } },
        { type: "Item", key: `${key}-item`, attributes: { unit: `${mark}-unit` } },
      ],
    })) as { entities: { id: string; key: string }[] };
    const [agreement, item] = [entities[0]!.id, entities[1]!.id];
    await call(operator, tenant, "POST", "/graph/links", { links: [{ from: { id: agreement }, relation: "meter", to: { id: item } }] });
    await call(operator, tenant, "POST", `/items/${item}/events`, {
      events: [0, 1, 2, 3].map((h) => ({ timestamp: `2024-01-01T0${h}:30:00Z`, value: h + 0.5, sourceId: source, tags: [`${mark}-tag`], keyValues: { owner: mark } })),
    });
    const api = `${mark}-api-${randomUUID()}`;
    const apiBody = {
      name: `${mark} walk`,
      externalId: api,
      active: true,
      data: { queryParameters: [{ name: "key", type: "string" }] },
      query: 'Agreement ?a; entity:key "${key}"; link:meter Item:?i.',
      transform: "$",
    };
    await call(operator, tenant, "POST", "/api-definitions", apiBody);
    // A caller's parameter handed to a bound function: requested (by tokens without any role too) with hostile ids.
    const eventsApi = `${mark}-events-${randomUUID()}`;
    const eventsApiBody = {
      name: `${mark} events`,
      externalId: eventsApi,
      active: true,
      data: { queryParameters: [{ name: "id", type: "string" }] },
      query: `Agreement ?a; entity:key "${key}".`,
      transform: "$events(${id}, {})",
    };
    await call(operator, tenant, "POST", "/api-definitions", eventsApiBody);
    const calculation = `${mark}-calc-${randomUUID()}`;
    const calculationBody = {
      externalId: calculation,
      calculationType: "EXPRESSION",
      data: {
        calculation: {
          select: `Agreement ?ag; entity:key "${key}"; link:meter Item:?cons.`,
          expression: "a * 2",
          eventDateRange: RANGE,
          queryOptions: { aggregation: { metric: "sum", interval: "Hourly" } },
          scope: { a: { type: "TIMESERIES", timeseries: { selectVariable: "{{?cons}}" } } },
        },
      },
    };
    await call(operator, tenant, "POST", "/calculation-definitions", calculationBody);
    return { apiBody, eventsApiBody, calculationBody, key, agreement, item, api, eventsApi, calculation, values: [key, secretValue, source, api, eventsApi, calculation, agreement, item, `${mark}-unit`, `${mark}-tag`] };
  }

  /**
   * Puts the first tenant's seeded rows back as they were (same ids), so later batches still reach
   * rows the fuzzer deleted or changed. What it answers is not checked: a row the fuzzer renamed into
   * the way is fine to leave.
   */
  async function restore(tenant: string, seeded: Awaited<ReturnType<typeof seed>>): Promise<void> {
    const send = (method: string, url: string, payload: object) =>
      server.app.inject({ method: method as "POST", url, headers: { authorization: `Bearer ${operator}`, "x-tenant-id": tenant }, payload });
    await send("POST", "/graph/entities", { entities: [{ type: "Agreement", key: seeded.key, id: seeded.agreement }, { type: "Item", key: `${seeded.key}-item`, id: seeded.item }] });
    await send("POST", "/graph/links", { links: [{ from: { id: seeded.agreement }, relation: "meter", to: { id: seeded.item } }] });
    await send("POST", `/items/${seeded.item}/events`, { events: [0, 1, 2, 3].map((h) => ({ timestamp: `2024-01-01T0${h}:30:00Z`, value: h + 0.5 })) });
    for (const [path, body] of [
      ["/api-definitions", seeded.apiBody],
      ["/api-definitions", seeded.eventsApiBody],
      ["/calculation-definitions", seeded.calculationBody],
    ] as const) {
      const res = await send("PUT", `${path}/${body.externalId}`, body);
      if (res.statusCode === 404) await send("POST", path, body);
    }
  }

  it("answers ≥ FUZZ_CASES generated requests over every operation with a documented status, problem+json errors, no 5xx and nothing of another tenant", async function () {
    this.timeout(600_000);
    const [tenantA, tenantB] = [randomTenant(), randomTenant()];
    const a = await seed(tenantA, "alpha");
    const b = await seed(tenantB, "bravo");
    const secrets: Secrets = { tenant: tenantB, values: [tenantB, ...b.values] };

    const doc = (await server.app.inject({ method: "GET", url: "/openapi.json" })).json() as { paths: Record<string, Record<string, Operation>> };
    const ajv = new Ajv({ strict: false, allErrors: false });
    addFormats(ajv);
    const routes: Route[] = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => {
        const success = new Map<number, ValidateFunction | undefined>();
        for (const [status, response] of Object.entries(op.responses)) {
          if (!status.startsWith("2")) continue;
          const schema = response.content?.["application/json"]?.schema;
          success.set(Number(status), schema === undefined ? undefined : ajv.compile(schema));
        }
        return { method: method.toUpperCase(), path, op, success };
      }),
    );
    expect(routes.length).to.be.greaterThan(25);

    const tokens = await tokenChoices(tenantA);
    const lineLimit = (server.config as { uploadLineLimitBytes?: number }).uploadLineLimitBytes ?? DEFAULT_LINE_LIMIT;
    // The uploads whose answer is fixed go to an item of their own, which no other case names (and so deletes).
    const uploads = (await call(operator, tenantA, "POST", "/graph/entities", { entities: [{ type: "Item", key: `uploads-${randomUUID()}` }] })) as { entities: { id: string }[] };
    const cases = caseArbitrary(routes, tokens, { tenantA, tenantB, a, uploadItem: uploads.entities[0]!.id }, { line: lineLimit, body: server.config.bodyLimitBytes });
    const statuses = new Map<string, number>();
    const failures = new Map<string, { count: number; example: string }>();
    let count = 0;
    let ownRows = 0;

    for (let batch = 0; count < CASES; batch++) {
      const generated = fc.sample(cases, { seed: SEED + batch, numRuns: Math.min(BATCH, CASES - count) });
      for (const [index, c] of generated.entries()) {
        count++;
        const route = routes[c.route]!;
        const twin = c.twin === undefined ? undefined : await server.app.inject({ method: c.method as "POST", url: c.url, headers: c.twin.headers, payload: c.twin.payload });
        const res = await server.app.inject({ method: c.method as "GET", url: c.url, headers: c.headers, ...(c.payload === undefined ? {} : { payload: c.payload }) });
        const tally = `${route.op.operationId} ${res.statusCode}`;
        statuses.set(tally, (statuses.get(tally) ?? 0) + 1);
        const problem = check(route, res, secrets) ?? checkExpected(c, res, twin);
        // The control: answers do carry the first tenant's rows, so the absence of the second's means something.
        if (res.statusCode < 300 && a.values.some((v) => res.body.includes(v))) ownRows++;
        if (problem !== undefined) {
          // One example of each kind of failure, with how often it happened.
          const kind = `${route.op.operationId} ${res.statusCode} ${problem.replace(/[0-9a-f-]{36}/g, "…").slice(0, 80)}`;
          const seen = failures.get(kind);
          if (seen !== undefined) seen.count++;
          else {
            // For a 5xx, what the server logged about it (the error and where it was thrown).
            const logged = res.statusCode >= 500 ? server.logs.entries.filter((e) => e.message === "request failed").at(-1) : undefined;
            const cause = logged === undefined ? "" : `\n    logged ${String(logged.error)} ${String(logged.stack ?? "").split("\n").slice(1, 4).join(" ").slice(0, 400)}`;
            const body = typeof c.payload === "string" ? c.payload.slice(0, 600) : c.payload === undefined ? "(none)" : `${c.payload.length} bytes encoded of: ${c.twin?.payload.slice(0, 300) ?? "(a zip bomb)"}`;
            const example = `batch ${batch} case ${index}: ${c.method} ${c.url.slice(0, 200)}\n    headers ${JSON.stringify(c.headers).slice(0, 200)}\n    body ${body}\n    answer ${res.body.slice(0, 300)}${cause}`;
            failures.set(kind, { count: 1, example });
          }
        }
      }
      await restore(tenantA, a);
      const health = await server.app.inject({ method: "GET", url: "/health" });
      expect(health.statusCode, `/health after batch ${batch} (seed ${SEED}): ${health.body}`).to.equal(200);
    }

    const byRoute = new Map<string, number>();
    for (const [tally, n] of statuses) byRoute.set(tally.split(" ")[0]!, (byRoute.get(tally.split(" ")[0]!) ?? 0) + n);
    console.log(`      fuzzed ${count} cases on ${ctx.name} (FUZZ_SEED=${SEED}) over ${byRoute.size} operations, ${ownRows} answers with the tenant's own rows; statuses: ${summarise(statuses)}`);
    if (process.env.FUZZ_VERBOSE !== undefined) console.log([...statuses.entries()].sort().map(([t, n]) => `      ${t} ×${n}`).join("\n"));
    const report = [...failures.entries()].map(([kind, { count, example }]) => `${kind} (×${count})\n  ${example}`);
    expect(report, `FUZZ_SEED=${SEED}: ${failures.size} kinds of failure\n${report.join("\n")}`).to.deep.equal([]);
    expect(count).to.be.at.least(CASES);
    expect(ownRows, "answers holding the first tenant's own rows").to.be.greaterThan(CASES / 100);
    // Every operation of the description was reached.
    expect([...byRoute.keys()]).to.have.members(routes.map((r) => r.op.operationId));
  });

  it("answers transforms that call the bound functions ($events, timelines) with hostile arguments without a 5xx, run unsaved or requested by a caller without any role", async function () {
    this.timeout(600_000);
    const tenant = randomTenant();
    const a = await seed(tenant, "alpha");
    const known = { tenantA: tenant, tenantB: tenant, a };
    const hints = domainHints(known, true);
    const admin = await hsToken({ roles: ["admin"], tenants: [tenant], sub: "fuzzer" });
    const roleless = await hsToken({ roles: [], tenants: [tenant], sub: "fuzzer" });
    const query = fc.constantFrom(`Agreement ?a; entity:key "${a.key}"; link:meter Item:?i.`, "Agreement ?a; link:meter Item:?i.");
    const cases = fc.oneof(
      fc
        .record({ transform: hints.transform!, data: hints.data!, query })
        .map(({ transform, data, query }) => ({ url: "/api-definitions/test", token: admin, body: { definition: { query, transform, data }, queryParameters: {} } })),
      hints.queryParameters!.map((queryParameters) => ({ url: "/task-backend/tasks/energy/api/request", token: roleless, body: { apiDefinitionExternalId: a.eventsApi, queryParameters } })),
    );
    const runs = Math.max(200, Math.floor(CASES / 10));
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    for (const [index, c] of fc.sample(cases, { seed: SEED, numRuns: runs }).entries()) {
      const res = await server.app.inject({ method: "POST", url: c.url, headers: { authorization: `Bearer ${c.token}`, "x-tenant-id": tenant }, payload: c.body });
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      if (res.statusCode >= 500 && failures.length < 5) failures.push(`case ${index}: POST ${c.url} ${JSON.stringify(c.body).slice(0, 400)}\n    answer ${res.body.slice(0, 300)}`);
    }
    console.log(`      ${runs} bound-function cases on ${ctx.name} (FUZZ_SEED=${SEED}); statuses: ${[...statuses.entries()].sort().map(([s, n]) => `${s}×${n}`).join(", ")}`);
    expect(failures, `FUZZ_SEED=${SEED}\n${failures.join("\n")}`).to.deep.equal([]);
    // The cases reach evaluation: some answer with a result.
    expect(statuses.get(200) ?? 0).to.be.greaterThan(runs / 10);
    expect((await server.app.inject({ method: "GET", url: "/health" })).statusCode).to.equal(200);
  });
});

/** For a case whose answer the contract fixes: undefined when it is that answer, else what is wrong. */
function checkExpected(c: Case, res: { statusCode: number; body: string }, twin: { statusCode: number; body: string } | undefined): string | undefined {
  if (c.expected !== undefined && !c.expected.statuses.includes(res.statusCode)) return `${c.expected.reason}: expected ${c.expected.statuses.join(" or ")}`;
  // The two answers are the same but for their own request ids (every problem+json names its request).
  if (twin !== undefined && (twin.statusCode !== res.statusCode || withoutRequestId(twin.body) !== withoutRequestId(res.body))) {
    return `answered otherwise than the same body sent plain (${twin.statusCode} ${twin.body.slice(0, 100)})`;
  }
  return undefined;
}

/** Undefined when the answer is what the description promises, else what is wrong with it. */
function check(route: Route, res: { statusCode: number; headers: Record<string, unknown>; body: string }, secrets: Secrets): string | undefined {
  const status = res.statusCode;
  if (status >= 500) return `a ${status}`;
  if (route.op.responses[String(status)] === undefined) return `status ${status} is not documented for ${route.op.operationId}`;
  for (const secret of secrets.values) if (res.body.includes(secret)) return `the answer holds ${secret} of tenant ${secrets.tenant}`;
  const type = String(res.headers["content-type"] ?? "");
  if (status >= 400) {
    if (!type.startsWith("application/problem+json")) return `an error answered as ${type}`;
    let body: Json;
    try {
      body = JSON.parse(res.body) as Json;
    } catch {
      return "an error whose body is not JSON";
    }
    if (body.status !== status || typeof body.code !== "string" || typeof body.title !== "string" || typeof body.type !== "string" || typeof body.detail !== "string") {
      return "an error without type, title, status, code and detail";
    }
    return undefined;
  }
  if (status === 204) return res.body === "" ? undefined : "a 204 with a body";
  const validate = route.success.get(status);
  if (validate !== undefined && type.startsWith("application/json")) {
    if (!validate(JSON.parse(res.body))) return `the answer does not match its documented schema: ${JSON.stringify(validate.errors?.[0])}`;
  }
  return undefined;
}

function summarise(statuses: Map<string, number>): string {
  const byStatus = new Map<string, number>();
  for (const [tally, n] of statuses) {
    const status = tally.split(" ")[1]!;
    byStatus.set(status, (byStatus.get(status) ?? 0) + n);
  }
  return [...byStatus.entries()]
    .sort()
    .map(([s, n]) => `${s}×${n}`)
    .join(", ");
}

interface Token {
  header: string | undefined;
  weight: number;
}

/** The tokens a request may carry: mostly a good admin token of A, else every way a token can be wrong. */
async function tokenChoices(tenantA: string): Promise<Token[]> {
  const secret = new TextEncoder().encode(TEST_JWT_SECRET);
  const signed = (alg: string) =>
    new SignJWT({ roles: ["admin"], tenants: [tenantA] }).setProtectedHeader({ alg }).setSubject("fuzzer").setIssuedAt().setExpirationTime("10m").sign(secret);
  const bearer = (t: string) => `Bearer ${t}`;
  return [
    { header: bearer(await hsToken({ roles: ["admin"], tenants: [tenantA], sub: "fuzzer" })), weight: 40 },
    { header: bearer(await hsToken({ roles: [], tenants: [tenantA] })), weight: 3 },
    // A good token of a third tenant: naming A or B it must be refused. (Not one of B: acting in B,
    // it would rightly read B's rows, which the leak check counts against any answer.)
    { header: bearer(await hsToken({ roles: ["admin"], tenants: [randomTenant()] })), weight: 2 },
    { header: bearer(await hsToken({ roles: ["admin"], tenants: [tenantA], expiresIn: Math.floor(Date.now() / 1000) - 3600 })), weight: 1 },
    { header: bearer(await hsToken({ roles: ["admin"], tenants: [tenantA], expiresIn: null })), weight: 1 },
    { header: bearer(await hsToken({ roles: ["admin"], tenants: [tenantA], claims: { iat: Math.floor(Date.now() / 1000) + 3600 } })), weight: 1 },
    { header: bearer(await hsToken({ roles: ["admin"], tenants: [tenantA] }, "another-secret-that-is-at-least-32-bytes")), weight: 1 },
    { header: bearer(await hsToken({ roles: ["admin"], claims: { tenants: tenantA } })), weight: 1 },
    { header: bearer(await signed("HS384")), weight: 1 },
    { header: bearer(await signed("HS512")), weight: 1 },
    { header: bearer(unsignedToken({ roles: ["admin"], tenants: [tenantA], exp: Math.floor(Date.now() / 1000) + 600 })), weight: 1 },
    { header: "Bearer not.a.token", weight: 1 },
    { header: "Basic YWRtaW46YWRtaW4=", weight: 1 },
    { header: "Bearer ", weight: 1 },
    { header: undefined, weight: 1 },
  ];
}

/** Visible ASCII with spaces: what an HTTP client can put in a header at all. */
const headerText = fc.oneof(
  fc.string({ maxLength: 40, unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) }),
  fc.constantFrom("", " ", "*", "x".repeat(300), "a,b", "../", "null"),
);

/** A path segment: percent-encoded, lone surrogates as their WTF-8 bytes; sometimes raw, broken escapes included. */
function segment(value: unknown, raw: boolean): string {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? "undefined";
  if (raw) return text.replace(/[/?#\s]/g, "");
  return [...text].map((ch) => {
    try {
      return encodeURIComponent(ch);
    } catch {
      return "%ED%A0%80";
    }
  }).join("");
}

interface Known {
  tenantA: string;
  tenantB: string;
  /** An item of the first tenant for the uploads of {@link uploadAttacks} only. */
  uploadItem?: string;
  a: { key: string; agreement: string; item: string; api: string; eventsApi: string; calculation: string };
}

function caseArbitrary(routes: Route[], tokens: Token[], known: Known, limits: Limits): fc.Arbitrary<Case> {
  return fc.oneof(
    { weight: 12, arbitrary: casesOf(routes, tokens, known, true) },
    // Well-formed requests of a good token, with values of the right shape: these reach past validation
    // into every route's own checks, the database and the evaluators.
    { weight: 4, arbitrary: casesOf(routes, [tokens[0]!], known, false) },
    // Uploads whose answer the contract fixes, with a good token of the first tenant.
    { weight: 1, arbitrary: uploadAttacks(routes, tokens[0]!.header!, known, limits) },
  );
}

/** The limits the uploads are measured against: UPLOAD_LINE_LIMIT_BYTES and BODY_LIMIT_BYTES. */
interface Limits {
  line: number;
  body: number;
}
/** UPLOAD_LINE_LIMIT_BYTES by default, the contract's figure, for a server that does not say. */
const DEFAULT_LINE_LIMIT = 1024 * 1024;

const ENCODERS: Record<string, (data: Buffer) => Buffer> = {
  gzip: (d) => gzipSync(d),
  "x-gzip": (d) => gzipSync(d),
  deflate: (d) => deflateSync(d),
  br: (d) => brotliCompressSync(d),
  GZIP: (d) => gzipSync(d),
  // Applied in order: gzip first, then br.
  "gzip, br": (d) => brotliCompressSync(gzipSync(d)),
  identity: (d) => d,
};

/**
 * A few kilobytes that inflate past a limit: JSON past BODY_LIMIT_BYTES, an NDJSON line past
 * UPLOAD_LINE_LIMIT_BYTES, and NDJSON or CSV uploads of nothing but blank lines past BODY_LIMIT_BYTES
 * (each line within every limit: only the decoded total bounds them).
 */
type BombKind = "json" | "ndjson" | "blank ndjson" | "blank csv";
const BOMB_TYPES: Record<BombKind, string> = { json: "application/json", ndjson: "application/x-ndjson", "blank ndjson": "application/x-ndjson", "blank csv": "text/csv" };
/** Built once per kind and coding. */
const bombs = new Map<string, Buffer>();
function bomb(kind: BombKind, coding: "gzip" | "deflate" | "br", limits: Limits): Buffer {
  let built = bombs.get(`${kind} ${coding}`);
  if (built === undefined) {
    const size = (kind === "ndjson" ? limits.line : limits.body) + 1024 * 1024;
    const text =
      kind === "json"
        ? `{"events":[],"x":"${" ".repeat(size)}"}`
        : kind === "ndjson"
          ? `{"timestamp":"2024-01-01T00:00:00Z","value":1,"sourceId":"${"0".repeat(size)}"}\n`
          : kind === "blank ndjson"
            ? "\n".repeat(size)
            : `timestamp,value\n${" \n".repeat(size / 2)}`;
    built = ENCODERS[coding]!(Buffer.from(text));
    bombs.set(`${kind} ${coding}`, built);
  }
  return built;
}

/**
 * Uploads to the ingest routes, as the first tenant's admin, whose answer the contract fixes (issue 24
 * items 6 and 8): a line or CSV row past UPLOAD_LINE_LIMIT_BYTES is a 413 (one of exactly the limit
 * is read), a CSV header naming a column twice a 400, a body in gzip, deflate or br (or several)
 * answered as the same body sent plain, an unknown encoding a 415, one that does not decode a 400, a
 * zip bomb a 413 (a JSON body, an NDJSON line, or an upload of blank lines decoded past BODY_LIMIT_BYTES).
 */
function uploadAttacks(routes: Route[], authorization: string, known: Known, limits: Limits): fc.Arbitrary<Case> {
  const item = known.uploadItem!;
  const itemRoute = routes.findIndex((r) => r.op.operationId === "ingestItemEvents");
  const manyRoute = routes.findIndex((r) => r.op.operationId === "ingestEvents");
  const target = fc.constantFrom({ route: itemRoute, url: `/items/${item}/events` }, { route: manyRoute, url: "/events" });
  const headers = (type: string, extra: Record<string, string> = {}) => ({ authorization, "x-tenant-id": known.tenantA, "content-type": type, ...extra });
  const event = fc.record({
    itemId: fc.constant(item),
    timestamp: fc.date({ min: new Date("2024-01-01T00:00:00Z"), max: new Date("2024-01-02T00:00:00Z"), noInvalidDate: true }).map((d) => d.toISOString()),
    value: fc.integer({ min: -1000, max: 1000 }),
    sourceId: fc.oneof(fc.string({ maxLength: 8, unit: "grapheme-ascii" }), sizedText),
  });
  const events = fc.array(event, { minLength: 1, maxLength: 4 });
  const csvCell = (text: string) => (/[",\r\n|]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);
  type Upload = { type: string; text: string };
  const asNdjson = (list: { itemId: string; timestamp: string; value: number; sourceId: string }[]): Upload => ({ type: "application/x-ndjson", text: list.map((e) => JSON.stringify(e)).join("\n") });
  const asCsv = (list: { itemId: string; timestamp: string; value: number; sourceId: string }[]): Upload => ({
    type: "text/csv",
    text: ["itemId,timestamp,value,sourceId", ...list.map((e) => [e.itemId, e.timestamp, e.value, csvCell(e.sourceId)].join(","))].join("\r\n"),
  });
  const asJson = (list: unknown[]): Upload => ({ type: "application/json", text: JSON.stringify({ events: list }) });
  const upload = fc.oneof(events.map(asJson), events.map(asNdjson), events.map(asCsv));

  // A line (NDJSON) or a CSV row (its fields) of exactly the limit, or past it by a byte, by one
  // character of two or three bytes, or by megabytes; after a good line.
  const plain = event.map((e) => ({ ...e, sourceId: "s" }));
  const longLine = fc
    .record({ target, first: plain, next: plain, over: fc.constantFrom(0, 1, 2, 3, 2 * 1024 * 1024), csv: fc.boolean(), wide: fc.boolean() })
    .map(({ target, first, next, over, csv, wide }): Case => {
      // The padding is the last field: a CSV row counts its fields' bytes, an NDJSON line all of it.
      const head = csv ? `${next.itemId},${next.timestamp},${next.value},"` : `{"itemId":"${next.itemId}","timestamp":"${next.timestamp}","value":${next.value},"keyValues":{"pad":"`;
      const tail = csv ? '"' : '"}}';
      const padBytes = (csv ? limits.line - (head.length - 4) : limits.line - head.length - tail.length) + over;
      // Wide: the last character is of three bytes, so the limit may fall inside it.
      const pad = wide ? `${"x".repeat(padBytes - 3)}中` : "x".repeat(padBytes);
      const text = csv
        ? `itemId,timestamp,value,sourceId\n${first.itemId},${first.timestamp},${first.value},s\n${head}${pad}${tail}\n`
        : `${JSON.stringify(first)}\n${head}${pad}${tail}\n`;
      return {
        route: target.route,
        method: "POST",
        // A CSV row of the limit has a sourceId past its 2,000 bytes: read, then refused as a row.
        url: `${target.url}${csv ? "?partial=true" : ""}`,
        headers: headers(csv ? "text/csv" : "application/x-ndjson"),
        payload: text,
        expected:
          over > 0
            ? { statuses: [413], reason: `a ${csv ? "CSV row" : "NDJSON line"} ${over} bytes past UPLOAD_LINE_LIMIT_BYTES must be a 413` }
            : { statuses: [200], reason: `a ${csv ? "CSV row" : "NDJSON line"} of exactly UPLOAD_LINE_LIMIT_BYTES is read` },
      };
    });

  // CSV headers that name a column twice, over rows that would be good under either reading (on
  // either route: each row names its item).
  const repeatedHeader = fc
    .record({ target, list: events, header: fc.constantFrom("itemId,timestamp,value,value", "itemId,timestamp,timestamp,value", "itemId,timestamp,value,sourceId,sourceId", "value,itemId,timestamp,itemId", "\ufeffitemId,timestamp,value, value") })
    .map(({ target, list, header }): Case => {
      const cell = (e: (typeof list)[number], column: string) => String({ timestamp: e.timestamp, value: e.value, itemId: e.itemId, sourceId: "s" }[column.trim().replace("\ufeff", "")]);
      const rows = list.map((e) => header.split(",").map((column) => cell(e, column)).join(","));
      return {
        route: target.route,
        method: "POST",
        url: target.url,
        headers: headers("text/csv"),
        payload: [header, ...rows].join("\n"),
        expected: { statuses: [400], reason: `a CSV header naming a column twice (${header}) must be a 400` },
      };
    });

  // A body in an encoding the service decodes: answered as the same body sent plain.
  const encoded = fc.record({ target, body: upload, coding: fc.constantFrom(...Object.keys(ENCODERS)) }).map(({ target, body, coding }): Case => ({
    route: target.route,
    method: "POST",
    url: target.url,
    headers: headers(body.type, { "content-encoding": coding }),
    payload: ENCODERS[coding]!(Buffer.from(body.text)),
    twin: { headers: headers(body.type), payload: body.text },
  }));

  // An encoding it does not know, or a body that does not decode as its encoding says.
  const refused = fc.record({ target, body: upload, coding: fc.constantFrom("compress", "zstd", "bogus", "gzip, compress", "br;q=1"), broken: fc.constantFrom("gzip", "deflate", "br", "gzip, br") }).chain(({ target, body, coding, broken }) =>
    fc.constantFrom<Case>(
      { route: target.route, method: "POST", url: target.url, headers: headers(body.type, { "content-encoding": coding }), payload: body.text, expected: { statuses: [415], reason: `Content-Encoding ${coding} must be a 415` } },
      { route: target.route, method: "POST", url: target.url, headers: headers(body.type, { "content-encoding": broken }), payload: `not ${broken}: ${body.text}`, expected: { statuses: [400], reason: `a body that is not ${broken} must be a 400` } },
    ),
  );

  // A few kilobytes that inflate past the limits.
  const zipBomb = fc
    .record({ target, kind: fc.constantFrom<BombKind>("json", "ndjson", "blank ndjson", "blank csv"), coding: fc.constantFrom<"gzip" | "deflate" | "br">("gzip", "deflate", "br") })
    .map(({ target, kind, coding }): Case => ({
      route: target.route,
      method: "POST",
      url: target.url,
      headers: headers(BOMB_TYPES[kind], { "content-encoding": coding }),
      payload: bomb(kind, coding, limits),
      expected: { statuses: [413], reason: `a ${coding} ${kind} body that inflates past ${kind === "ndjson" ? "UPLOAD_LINE_LIMIT_BYTES" : "BODY_LIMIT_BYTES"} must be a 413` },
    }));

  return fc.oneof({ weight: 2, arbitrary: longLine }, { weight: 2, arbitrary: repeatedHeader }, { weight: 4, arbitrary: encoded }, { weight: 2, arbitrary: refused }, { weight: 1, arbitrary: zipBomb });
}

function casesOf(routes: Route[], tokens: Token[], known: Known, hostile: boolean): fc.Arbitrary<Case> {
  const hints = domainHints(known, hostile);
  const token = fc.oneof(...tokens.map((t) => ({ weight: t.weight, arbitrary: fc.constant(t.header) })));
  const tenant = !hostile ? fc.constant<string | undefined>(known.tenantA) : fc.oneof(
    { weight: 30, arbitrary: fc.constant<string | undefined>(known.tenantA) },
    { weight: 1, arbitrary: fc.constant<string | undefined>(known.tenantB) },
    { weight: 1, arbitrary: fc.constant<string | undefined>(undefined) },
    { weight: 1, arbitrary: headerText },
  );
  const options = { hostile: hostile ? 2 : 0, hints };
  return fc.oneof(
    ...routes.map((route, index) => {
      const parameters = route.op.parameters ?? [];
      const path = parameters.filter((p) => p.in === "path");
      const query = parameters.filter((p) => p.in === "query");
      const pathValues = fc.tuple(...path.map((p) => fc.tuple(arbitraryOf(p.schema, options, p.name), fc.nat(20).map((n) => hostile && n === 0))));
      const queryValues = fc.tuple(
        ...query.map((p) => fc.option(hostile ? fc.oneof({ weight: 6, arbitrary: arbitraryOf(p.schema, options, p.name) }, { weight: 1, arbitrary: fc.constantFrom(...hostileNumbers) }) : arbitraryOf(p.schema, options, p.name), { freq: 2 })),
      );
      const extraQuery = !hostile ? fc.constant(null) : fc.option(fc.tuple(fc.oneof(fc.constantFrom("limit", "offset", "partial", "type", "__proto__", "x"), hostileString), anyValue), { freq: 8 });
      const jsonSchema = route.op.requestBody?.content["application/json"]?.schema;
      const body = bodyArbitrary(route, jsonSchema, options);
      return fc
        .record({ pathValues, queryValues, extraQuery, body, token, tenant })
        .map(({ pathValues, queryValues, extraQuery, body, token, tenant }): Case => {
          let url = route.path;
          path.forEach((p, i) => {
            const [value, raw] = pathValues[i]!;
            url = url.replace(`{${p.name}}`, segment(value, raw));
          });
          const search = new URLSearchParams();
          query.forEach((p, i) => {
            const value = queryValues[i];
            if (value !== null && value !== undefined) search.append(p.name, typeof value === "string" ? value : JSON.stringify(value));
          });
          if (extraQuery !== null) search.append(extraQuery[0], typeof extraQuery[1] === "string" ? extraQuery[1] : JSON.stringify(extraQuery[1]));
          const queryString = search.toString();
          const headers: Record<string, string> = {};
          if (token !== undefined) headers.authorization = token;
          if (tenant !== undefined) headers["x-tenant-id"] = tenant;
          if (body !== undefined) headers["content-type"] = body.type;
          return { route: index, method: route.method, url: queryString === "" ? url : `${url}?${queryString.replace(/%EF%BF%BD/g, "%ED%A0%80")}`, headers, ...(body === undefined ? {} : { payload: body.text }) };
        });
    }),
  );
}

interface Body {
  type: string;
  text: string;
}

/** JSON from the body's schema, mostly; else raw text that is not what it claims, or in another type. */
function bodyArbitrary(route: Route, schema: JsonSchema | undefined, options: { hostile: number; hints: Hints }): fc.Arbitrary<Body | undefined> {
  if (schema === undefined) return fc.constant(undefined);
  const hostile = options.hostile > 0;
  const event = options.hints.events! as fc.Arbitrary<{ itemId?: unknown; timestamp: unknown; value: unknown }>;
  if (!hostile) {
    const json = arbitraryOf(schema, options, "body").map((value) => ({ type: "application/json", text: jsonText(value) ?? "null" }));
    if (route.op.requestBody?.content["application/x-ndjson"] === undefined) return json;
    const lines = fc.array(event, { minLength: 1, maxLength: 5 });
    const ndjson = lines.map((l) => ({ type: "application/x-ndjson", text: l.map((e) => jsonText(e)).join("\n") }));
    const csv = lines.map((l) => ({ type: "text/csv", text: ["itemId,timestamp,value", ...l.map((e) => [e.itemId, e.timestamp, e.value].join(","))].join("\n") }));
    return fc.oneof(json, ndjson, csv);
  }
  // Hostile values at any depth, or the schema's shape throughout with hostile leaves only where the
  // open properties take them.
  const json = fc
    .oneof(arbitraryOf(schema, options, "body"), arbitraryOf(schema, { ...options, hostile: 0 }, "body"))
    .map((value) => jsonText(value) ?? "null");
  const jsonType = fc.oneof(
    { weight: 20, arbitrary: fc.constant("application/json") },
    { weight: 1, arbitrary: fc.constantFrom("application/json; charset=utf-8", "application/json; charset=utf-16", "application/json; charset=latin1", "text/plain", "application/x-www-form-urlencoded", "application/xml", "multipart/form-data; boundary=x") },
  );
  const rawJson = fc.constantFrom(
    "",
    "{",
    "[]",
    "null",
    "0",
    '"x"',
    '{"__proto__": {"admin": true}}',
    '{"constructor": {"prototype": {"x": 1}}}',
    '{"a": 1, "a": 2}',
    "\u0000",
    '{"x": "\\ud800"}',
    '{"x": "\\u0000"}',
    `${"[".repeat(20_000)}${"]".repeat(20_000)}`,
    `{"x": ${"1".repeat(400)}}`,
    '{"x": 1e400}',
  );
  const choices: { weight: number; arbitrary: fc.Arbitrary<Body> }[] = [
    { weight: 20, arbitrary: fc.tuple(json, jsonType).map(([text, type]) => ({ type, text })) },
    { weight: 2, arbitrary: rawJson.map((text) => ({ type: "application/json", text })) },
  ];
  if (route.op.requestBody?.content["application/x-ndjson"] !== undefined) {
    const lines = fc.array(fc.oneof({ weight: 5, arbitrary: event.map((e) => jsonText(e)!) }, { weight: 1, arbitrary: hostileString }), { maxLength: 5 });
    choices.push({ weight: 5, arbitrary: lines.map((l) => ({ type: "application/x-ndjson", text: l.join("\n") })) });
    const cell = fc.oneof(fc.constantFrom(...hostileStrings.filter((s) => s.length < 100)), fc.constantFrom(...hostileDates.map(String)), fc.constantFrom(...hostileNumbers.map(String)), fc.string({ maxLength: 8 }));
    const header = fc.oneof(fc.constant("timestamp,value"), fc.constant("itemId,timestamp,value,sourceId"), fc.constant("timestamp,value,__proto__"), fc.constant(""), fc.constant("timestamp,timestamp"));
    const rows = fc.array(fc.oneof(fc.tuple(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), fc.double({ noNaN: true }).map(String)).map((r) => r.join(",")), fc.array(cell, { maxLength: 4 }).map((r) => r.join(","))), { maxLength: 5 });
    choices.push({ weight: 5, arbitrary: fc.tuple(header, rows).map(([h, r]) => ({ type: "text/csv", text: [h, ...r].join("\n") })) });
  }
  return fc.oneof(...choices);
}

/** Shapes for what the schemas leave open, with hostile leaves; the first tenant's keys to reach its rows. */
function domainHints(known: Known, hostile: boolean): Hints {
  const { a } = known;
  const some = <T>(values: T[]) => fc.constantFrom(...values);
  /** The good values, or (when hostile) now and then a bad one. */
  const or = (good: fc.Arbitrary<unknown>, bad: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> => (hostile ? fc.oneof({ weight: 3, arbitrary: good }, { weight: 1, arbitrary: bad }) : good);
  const date = or(fc.date({ min: new Date("2023-12-30T00:00:00Z"), max: new Date("2024-01-03T00:00:00Z"), noInvalidDate: true }).map((d) => d.toISOString()), some(hostileDates));
  const number = or(fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }), some(hostileNumbers));
  // Now and then sized in UTF-8 bytes at a limit (sourceIds, keys, types, relations).
  const plain = fc.oneof({ weight: 8, arbitrary: fc.string({ minLength: 1, maxLength: 12, unit: "grapheme-ascii" }) }, { weight: 1, arbitrary: sizedText });
  const text: fc.Arbitrary<string> = hostile ? fc.oneof({ weight: 3, arbitrary: plain }, { weight: 1, arbitrary: hostileString }) : plain;
  const eventDateRange = fc.oneof(
    fc.record({ period: fc.constant("Custom range"), from: date, to: date, timeZone: or(some(["UTC", "Europe/Brussels", "America/New_York"]), text) }, { requiredKeys: ["period"] }),
    fc.record({ period: or(some([...PERIODS]), text), timeZone: some(["UTC", "Asia/Kolkata"]) }, { requiredKeys: ["period"] }),
    fc.constant(RANGE),
    ...(hostile ? [anyValue] : []),
  );
  const metric = or(some([...METRICS]), text);
  const interval = or(some([...INTERVALS]), text);
  const queryOptions = fc.oneof(
    fc.record({ aggregation: fc.record({ metric: some([...METRICS]), interval: some([...INTERVALS]) }) }),
    fc.record(
      {
        aggregation: or(fc.record({ metric, interval }, { requiredKeys: [] }), anyValue),
        sorting: or(fc.record({ order: or(fc.array(or(some(["timestamp", "value-", "sourceId", "value", "toString", "constructor-", "__proto__"]), text), { maxLength: 3 }), anyValue) }), anyValue),
        pagination: or(fc.record({ offset: number, limit: number }, { requiredKeys: [] }), anyValue),
        filters: or(fc.array(fc.record({ field: or(some(["sourceId", "tags", "keyValues.owner", "value"]), text), operator: or(some(["eq", "in", "gt", "contains"]), text), value: or(fc.oneof(text, number), anyValue) }, { requiredKeys: [] }), { maxLength: 2 }), anyValue),
        gapStrategy: or(some(["none", "zero", "previous", "linear"]), text),
      },
      { requiredKeys: [] },
    ),
    ...(hostile ? [anyValue] : []),
  );
  const events = fc.record(
    {
      itemId: fc.oneof({ weight: 3, arbitrary: fc.constant(a.item) }, { weight: 1, arbitrary: fc.uuid() }, { weight: 1, arbitrary: hostileString }),
      timestamp: date,
      value: number,
      sourceId: text,
      tags: or(fc.array(text, { maxLength: 3 }), anyValue),
      keyValues: or(fc.dictionary(text, text, { maxKeys: 2 }), anyValue),
    },
    { requiredKeys: ["timestamp", "value"] },
  );
  const deepOrText = fc.oneof({ weight: 2, arbitrary: text }, { weight: 1, arbitrary: deepValue });
  const expression = or(some(["a * 2", "x", "1 / 0", "sqrt(-1)", "a ? 1 : 2", "import('fs')", "x".repeat(3000), "(".repeat(500)]), text);
  const scopeEntry = fc.oneof(
    fc.record({ type: fc.constant("TIMESERIES"), timeseries: fc.record({ selectVariable: or(fc.constant("{{?cons}}"), text) }) }),
    fc.record({ type: fc.constant("EXPRESSION"), expression: fc.oneof(fc.constant(a.calculation), expression) }),
    fc.record({ type: or(some(["VALUE", "ITEM", "CALCULATION"]), text), value: number }, { requiredKeys: [] }),
    ...(hostile ? [anyValue] : []),
  );
  const calculation = fc.record(
    {
      select: or(fc.constant(`Agreement ?ag; entity:key "${a.key}"; link:meter Item:?cons.`), text),
      expression,
      eventDateRange,
      queryOptions,
      scope: or(fc.dictionary(or(some(["a", "x"]), text) as fc.Arbitrary<string>, scopeEntry, { maxKeys: 2 }), anyValue),
      steps: or(fc.array(fc.record({ name: text, expression }), { maxLength: 3 }), anyValue),
    },
    { requiredKeys: [] },
  );
  const boundCalls = boundFunctionCalls(a.item, hostile, { eventDateRange, queryOptions, date });
  return {
    eventDateRange,
    queryOptions,
    events,
    calculation,
    data: fc.record(
      {
        calculation,
        inputDefinitions: or(fc.array(fc.record({ name: text, type: or(some(["ITEM", "VALUE"]), text), label: deepOrText }, { requiredKeys: ["name"] }), { maxLength: 2 }), anyValue),
        // Any open member may nest as deep as a client cares to send.
        note: deepOrText,
        queryParameters: fc.array(fc.record({ name: text, type: or(some(["string", "number", "boolean"]), text) }), { maxLength: 2 }),
        timelineParameters: or(fc.array(fc.record({ name: some(["t", "u"]), eventDateRange, queryOptions }, { requiredKeys: ["name"] }), { maxLength: 2 }), anyValue),
      },
      { requiredKeys: [] },
    ),
    calculationType: or(some(["EXPRESSION", "STATE-EXPRESSION", "CALCULATION"]), text),
    query: or(some(["Agreement ?a; link:meter Item:?i.", `Agreement ?a; entity:key "\${key}"; link:meter Item:?i.`, "Agreement ?a.", "Item ?i; entity:id ?i."]), text),
    transform: fc.oneof(
      { weight: 2, arbitrary: or(some(["$", "", "{ 'n': $count(a) }", "$eval('1+1')", "$sum(i.value)", "result(?a) { $ }", "$$.constructor", "$string($).length"]), text) },
      { weight: 3, arbitrary: boundCalls.transform },
    ),
    queryParameters: fc.oneof(
      or(fc.record({ key: or(fc.constant(a.key), text) }, { requiredKeys: [] }), anyValue),
      fc.record({ id: boundCalls.argument }),
    ),
    apiDefinitionExternalId: fc.oneof({ weight: 3, arbitrary: fc.constant(a.api) }, { weight: 2, arbitrary: fc.constant(a.eventsApi) }, { weight: 1, arbitrary: text }),
    externalId: or(fc.oneof({ weight: 2, arbitrary: some([a.api, a.calculation]) }, { weight: 1, arbitrary: fc.stringMatching(/^[a-z0-9-]{1,20}$/) }), hostileString),
    itemId: or(fc.oneof({ weight: 3, arbitrary: fc.constant(a.item) }, { weight: 1, arbitrary: fc.uuid() }), hostileString),
    itemIds: fc.array(or(fc.oneof(fc.constant(a.item), fc.uuid()), hostileString), { maxLength: 3 }),
    id: or(fc.oneof({ weight: 2, arbitrary: some([a.agreement, a.item]) }, { weight: 1, arbitrary: fc.uuid() }), hostileString),
    type: or(some(["Agreement", "Item"]), text),
    key: or(fc.constant(a.key), text),
    segment: or(fc.constant("demo"), text),
    // Upserted entities and links: the first tenant's own types and keys, so links find their ends.
    relation: or(fc.constant("meter"), text),
  };
}

/** Nested `depth` levels deep: `{"a": {"a": … 1}}` or `[[… 1]]`. */
function nested(depth: number, kind: "object" | "array"): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = kind === "object" ? { a: value } : [value];
  return value;
}

/**
 * Transforms that call the bound functions — `$events(itemId, options)` and the timelines of
 * `data.timelineParameters` (`name: id` inside `result()`) — with the item's own id and good options,
 * or (when hostile) ids and options of every wrong kind: other types, huge and multi-byte ids,
 * nested objects, bad dates and ranges. The argument alone serves as a caller's `${id}` parameter.
 */
function boundFunctionCalls(
  item: string,
  hostile: boolean,
  hints: { eventDateRange: fc.Arbitrary<unknown>; queryOptions: fc.Arbitrary<unknown>; date: fc.Arbitrary<unknown> },
): { transform: fc.Arbitrary<string>; argument: fc.Arbitrary<unknown> } {
  const goodId = fc.oneof({ weight: 3, arbitrary: fc.constant(item) }, { weight: 1, arbitrary: fc.constant(item.toUpperCase()) }, { weight: 1, arbitrary: fc.uuid() });
  const badId = fc.oneof(
    hostileString,
    fc.constantFrom(...hostileNumbers, ...hostileDates, null, true, [], {}, [item], { id: item }),
    fc.string({ maxLength: 40, unit: "grapheme" }),
    fc.constantFrom("x", `${item}x`, ` ${item}`, item.replace(/-/g, ""), "00000000-0000-0000-0000-00000000000g", "é".repeat(1_000), "漢".repeat(1_000), "😀".repeat(2_000)),
    fc.constantFrom(nested(50, "object"), nested(50, "array"), nested(400, "object")),
    anyValue,
  );
  const argument = hostile ? fc.oneof({ weight: 1, arbitrary: goodId }, { weight: 3, arbitrary: badId }) : goodId;
  const options = fc.oneof(
    fc.record({ eventDateRange: hints.eventDateRange, queryOptions: hints.queryOptions }, { requiredKeys: [] }),
    fc.record({ eventDateRange: fc.record({ period: fc.constant("Custom range"), from: hints.date, to: hints.date, timeZone: fc.constantFrom("UTC", "America/Havana", "Australia/Lord_Howe", "Mars/Olympus") }) }),
    ...(hostile ? [anyValue, fc.constantFrom(nested(50, "object"), { eventDateRange: nested(30, "object") }, { queryOptions: { filters: nested(30, "array") } }, { limit: 5 })] : []),
  );
  /** As JSONata source: JSON is a JSONata literal (NaN and Infinity become null, as JSON has them). */
  const literal = (value: unknown) => JSON.stringify(value) ?? "null";
  const events = fc
    .tuple(argument, fc.option(options, { freq: 4 }), fc.constantFrom("", "$count", "$string"))
    .map(([id, opts, wrap]) => {
      const call = `$events(${literal(id)}${opts === null ? "" : `, ${literal(opts)}`})`;
      return wrap === "" ? call : `${wrap}(${call})`;
    });
  // The entity's own id, and ids the transform makes up from it.
  const fromQuery = fc
    .tuple(fc.constantFrom("i.id", "a.id", "$uppercase(i.id)", "i.id & 'x'", "i", "$number(i.id)", "[i.id, i.id]", "{ 'id': i.id }"), fc.option(options, { freq: 2 }))
    .map(([id, opts]) => `$events(${id}${opts === null ? "" : `, ${literal(opts)}`})`);
  const timelines = fc.constantFrom("{ 'meters': result(?i) { key, t: id } }", "result(?i) { t: id, u: id }", "$count(result(?i) { t: id }.t)");
  const transform = fc.oneof(
    { weight: 3, arbitrary: events },
    { weight: 2, arbitrary: fromQuery },
    { weight: 1, arbitrary: timelines },
    { weight: 1, arbitrary: fc.constant("$events(${id}, {})") },
  );
  return { transform, argument };
}
