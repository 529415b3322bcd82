import { randomUUID } from "node:crypto";
import { Ajv, type ValidateFunction } from "ajv";
import ajvFormats from "ajv-formats";
import { expect } from "chai";
import fc from "fast-check";
import { SignJWT } from "jose";
import { describeEachBackend, randomTenant } from "../support/backends.js";
import { anyValue, arbitraryOf, hostileDates, hostileNumbers, hostileString, hostileStrings, type Hints, type JsonSchema } from "../support/schemaArbitrary.js";
import { testServer, type TestServer } from "../support/server.js";
import { hsToken, TEST_JWT_SECRET, unsignedToken } from "../support/tokens.js";

/**
 * Issue 13 §6a: a fuzzer driven by the OpenAPI description. For every operation of /openapi.json it
 * builds requests from the schemas of its parameters and body (test/support/schemaArbitrary.ts),
 * mixed with hostile strings, numbers, dates, keys, headers, bodies and tokens, and checks each answer:
 * a status the description documents for that operation, never a 5xx, problem+json on every error,
 * a 2xx body that matches its documented schema, and no row of another tenant. The server must
 * answer /health after every batch.
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
  payload?: string;
}

/** What the second tenant holds: none of it may appear in any answer to the first. */
interface Secrets {
  tenant: string;
  values: string[];
}

const RANGE = { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-02T00:00:00Z", timeZone: "UTC" };

const addFormats = ajvFormats.default;

describeEachBackend("OpenAPI-driven fuzzer", (ctx) => {
  let server: TestServer;
  let operator: string;
  before(async () => {
    server = await testServer(ctx.db);
    operator = await hsToken({ roles: ["admin"], tenants: "*" });
  });
  after(() => server.app.close());

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
    await call(operator, tenant, "POST", "/api-definitions", {
      name: `${mark} walk`,
      externalId: api,
      active: true,
      data: { queryParameters: [{ name: "key", type: "string" }] },
      query: 'Agreement ?a; entity:key "${key}"; link:meter Item:?i.',
      transform: "$",
    });
    const calculation = `${mark}-calc-${randomUUID()}`;
    await call(operator, tenant, "POST", "/calculation-definitions", {
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
    });
    return { key, agreement, item, api, calculation, values: [key, secretValue, source, api, calculation, agreement, item, `${mark}-unit`, `${mark}-tag`] };
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

    const tokens = await tokenChoices(tenantA, tenantB);
    const cases = caseArbitrary(routes, tokens, { tenantA, tenantB, a });
    const statuses = new Map<string, number>();
    const failures = new Map<string, { count: number; example: string }>();
    let count = 0;

    for (let batch = 0; count < CASES; batch++) {
      const generated = fc.sample(cases, { seed: SEED + batch, numRuns: Math.min(BATCH, CASES - count) });
      for (const [index, c] of generated.entries()) {
        count++;
        const route = routes[c.route]!;
        const res = await server.app.inject({ method: c.method as "GET", url: c.url, headers: c.headers, ...(c.payload === undefined ? {} : { payload: c.payload }) });
        const tally = `${route.op.operationId} ${res.statusCode}`;
        statuses.set(tally, (statuses.get(tally) ?? 0) + 1);
        const problem = check(route, res, secrets);
        if (problem !== undefined) {
          // One example of each kind of failure, with how often it happened.
          const kind = `${route.op.operationId} ${res.statusCode} ${problem.replace(/[0-9a-f-]{36}/g, "…").slice(0, 80)}`;
          const seen = failures.get(kind);
          if (seen !== undefined) seen.count++;
          else {
            // For a 5xx, what the server logged about it (the error and where it was thrown).
            const logged = res.statusCode >= 500 ? server.logs.entries.filter((e) => e.message === "request failed").at(-1) : undefined;
            const cause = logged === undefined ? "" : `\n    logged ${String(logged.error)} ${String(logged.stack ?? "").split("\n").slice(1, 4).join(" ").slice(0, 400)}`;
            const example = `batch ${batch} case ${index}: ${c.method} ${c.url.slice(0, 200)}\n    headers ${JSON.stringify(c.headers).slice(0, 200)}\n    body ${c.payload?.slice(0, 600) ?? "(none)"}\n    answer ${res.body.slice(0, 300)}${cause}`;
            failures.set(kind, { count: 1, example });
          }
        }
      }
      const health = await server.app.inject({ method: "GET", url: "/health" });
      expect(health.statusCode, `/health after batch ${batch} (seed ${SEED}): ${health.body}`).to.equal(200);
    }

    const byRoute = new Map<string, number>();
    for (const [tally, n] of statuses) byRoute.set(tally.split(" ")[0]!, (byRoute.get(tally.split(" ")[0]!) ?? 0) + n);
    console.log(`      fuzzed ${count} cases on ${ctx.name} (FUZZ_SEED=${SEED}) over ${byRoute.size} operations; statuses: ${summarise(statuses)}`);
    const report = [...failures.entries()].map(([kind, { count, example }]) => `${kind} (×${count})\n  ${example}`);
    expect(report, `FUZZ_SEED=${SEED}: ${failures.size} kinds of failure\n${report.join("\n")}`).to.deep.equal([]);
    expect(count).to.be.at.least(CASES);
    // Every operation of the description was reached.
    expect([...byRoute.keys()]).to.have.members(routes.map((r) => r.op.operationId));
  });
});

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
async function tokenChoices(tenantA: string, tenantB: string): Promise<Token[]> {
  const secret = new TextEncoder().encode(TEST_JWT_SECRET);
  const signed = (alg: string) =>
    new SignJWT({ roles: ["admin"], tenants: [tenantA] }).setProtectedHeader({ alg }).setSubject("fuzzer").setIssuedAt().setExpirationTime("10m").sign(secret);
  const bearer = (t: string) => `Bearer ${t}`;
  return [
    { header: bearer(await hsToken({ roles: ["admin"], tenants: [tenantA], sub: "fuzzer" })), weight: 40 },
    { header: bearer(await hsToken({ roles: [], tenants: [tenantA] })), weight: 3 },
    { header: bearer(await hsToken({ roles: ["admin"], tenants: [tenantB] })), weight: 2 },
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
  a: { key: string; agreement: string; item: string; api: string; calculation: string };
}

function caseArbitrary(routes: Route[], tokens: Token[], known: Known): fc.Arbitrary<Case> {
  const hints = domainHints(known);
  const token = fc.oneof(...tokens.map((t) => ({ weight: t.weight, arbitrary: fc.constant(t.header) })));
  const tenant = fc.oneof(
    { weight: 30, arbitrary: fc.constant<string | undefined>(known.tenantA) },
    { weight: 1, arbitrary: fc.constant<string | undefined>(known.tenantB) },
    { weight: 1, arbitrary: fc.constant<string | undefined>(undefined) },
    { weight: 1, arbitrary: headerText },
  );
  const options = { hostile: 2, hints };
  return fc.oneof(
    ...routes.map((route, index) => {
      const parameters = route.op.parameters ?? [];
      const path = parameters.filter((p) => p.in === "path");
      const query = parameters.filter((p) => p.in === "query");
      const pathValues = fc.tuple(...path.map((p) => fc.tuple(arbitraryOf(p.schema, options, p.name), fc.nat(20).map((n) => n === 0))));
      const queryValues = fc.tuple(
        ...query.map((p) => fc.option(fc.oneof({ weight: 6, arbitrary: arbitraryOf(p.schema, options, p.name) }, { weight: 1, arbitrary: fc.constantFrom(...hostileNumbers) }), { freq: 2 })),
      );
      const extraQuery = fc.option(fc.tuple(fc.oneof(fc.constantFrom("limit", "offset", "partial", "type", "__proto__", "x"), hostileString), anyValue), { freq: 8 });
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
  // Hostile values at any depth, or the schema's shape throughout with hostile leaves only where the
  // open properties take them (so a body also gets past validation into the route's own checks).
  const json = fc
    .oneof(arbitraryOf(schema, options, "body"), arbitraryOf(schema, { ...options, hostile: 0 }, "body"))
    .map((value) => JSON.stringify(value) ?? "null");
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
    const event = options.hints.events!;
    const lines = fc.array(fc.oneof({ weight: 5, arbitrary: event.map((e) => JSON.stringify(e)) }, { weight: 1, arbitrary: hostileString }), { maxLength: 5 });
    choices.push({ weight: 5, arbitrary: lines.map((l) => ({ type: "application/x-ndjson", text: l.join("\n") })) });
    const cell = fc.oneof(fc.constantFrom(...hostileStrings.filter((s) => s.length < 100)), fc.constantFrom(...hostileDates.map(String)), fc.constantFrom(...hostileNumbers.map(String)), fc.string({ maxLength: 8 }));
    const header = fc.oneof(fc.constant("timestamp,value"), fc.constant("itemId,timestamp,value,sourceId"), fc.constant("timestamp,value,__proto__"), fc.constant(""), fc.constant("timestamp,timestamp"));
    const rows = fc.array(fc.oneof(fc.tuple(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), fc.double({ noNaN: true }).map(String)).map((r) => r.join(",")), fc.array(cell, { maxLength: 4 }).map((r) => r.join(","))), { maxLength: 5 });
    choices.push({ weight: 5, arbitrary: fc.tuple(header, rows).map(([h, r]) => ({ type: "text/csv", text: [h, ...r].join("\n") })) });
  }
  return fc.oneof(...choices);
}

/** Shapes for what the schemas leave open, with hostile leaves; the first tenant's keys to reach its rows. */
function domainHints(known: Known): Hints {
  const { a } = known;
  const some = <T>(values: T[]) => fc.constantFrom(...values);
  const date = fc.oneof(
    { weight: 4, arbitrary: fc.date({ min: new Date("2023-12-30T00:00:00Z"), max: new Date("2024-01-03T00:00:00Z"), noInvalidDate: true }).map((d) => d.toISOString()) },
    { weight: 2, arbitrary: some(hostileDates) },
  );
  const number = fc.oneof({ weight: 4, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }) }, { weight: 1, arbitrary: some(hostileNumbers) });
  const text = fc.oneof({ weight: 3, arbitrary: fc.string({ maxLength: 12 }) }, { weight: 1, arbitrary: hostileString });
  const eventDateRange = fc.oneof(
    fc.record({ period: fc.constant("Custom range"), from: date, to: date, timeZone: fc.oneof(some(["UTC", "Europe/Brussels", "America/New_York"]), text) }, { requiredKeys: ["period"] }),
    fc.record({ period: fc.oneof(some(["Today", "Yesterday", "This week", "Last 7 days", "This month", "Last month", "This year", "Custom range"]), text), timeZone: some(["UTC", "Asia/Kolkata"]) }, { requiredKeys: ["period"] }),
    fc.constant(RANGE),
    anyValue,
  );
  const metric = fc.oneof(some(["sum", "avg", "min", "max", "count", "first", "last", "median", "delta"]), text);
  const interval = fc.oneof(some(["Minutely", "Quarterly", "Hourly", "Daily", "Weekly", "Monthly", "Yearly", "15 minutes"]), text);
  const queryOptions = fc.oneof(
    fc.record(
      {
        aggregation: fc.oneof(fc.record({ metric, interval }, { requiredKeys: [] }), anyValue),
        sorting: fc.oneof(fc.record({ order: fc.oneof(fc.array(fc.oneof(some(["timestamp", "value-", "sourceId", "value", "toString", "constructor-", "__proto__"]), text), { maxLength: 3 }), anyValue) }), anyValue),
        pagination: fc.oneof(fc.record({ offset: number, limit: number }, { requiredKeys: [] }), anyValue),
        filters: fc.oneof(fc.array(fc.record({ field: fc.oneof(some(["sourceId", "tags", "keyValues.owner", "value"]), text), operator: fc.oneof(some(["eq", "in", "gt", "contains"]), text), value: anyValue }, { requiredKeys: [] }), { maxLength: 2 }), anyValue),
        gapStrategy: fc.oneof(some(["none", "zero", "previous", "linear"]), text),
      },
      { requiredKeys: [] },
    ),
    anyValue,
  );
  const events = fc.record(
    {
      itemId: fc.oneof({ weight: 3, arbitrary: fc.constant(a.item) }, { weight: 1, arbitrary: fc.uuid() }, { weight: 1, arbitrary: hostileString }),
      timestamp: date,
      value: number,
      sourceId: text,
      tags: fc.oneof(fc.array(text, { maxLength: 3 }), anyValue),
      keyValues: fc.oneof(fc.dictionary(text, text, { maxKeys: 2 }), anyValue),
    },
    { requiredKeys: ["timestamp", "value"] },
  );
  const expression = fc.oneof(some(["a * 2", "x", "1 / 0", "sqrt(-1)", "a ? 1 : 2", "import('fs')", "x".repeat(3000), "(".repeat(500)]), text);
  const scopeEntry = fc.oneof(
    fc.record({ type: fc.constant("TIMESERIES"), timeseries: fc.record({ selectVariable: fc.oneof(fc.constant("{{?cons}}"), text) }) }),
    fc.record({ type: fc.constant("EXPRESSION"), expression: fc.oneof(fc.constant(a.calculation), expression) }),
    fc.record({ type: fc.oneof(some(["VALUE", "ITEM", "CALCULATION"]), text), value: number }, { requiredKeys: [] }),
    anyValue,
  );
  const calculation = fc.record(
    {
      select: fc.oneof(fc.constant(`Agreement ?ag; entity:key "${a.key}"; link:meter Item:?cons.`), text),
      expression,
      eventDateRange,
      queryOptions,
      scope: fc.oneof(fc.dictionary(fc.oneof(some(["a", "x"]), text), scopeEntry, { maxKeys: 2 }), anyValue),
      steps: fc.oneof(fc.array(fc.record({ name: text, expression }), { maxLength: 3 }), anyValue),
    },
    { requiredKeys: [] },
  );
  return {
    eventDateRange,
    queryOptions,
    events,
    calculation,
    data: fc.record(
      {
        calculation,
        inputDefinitions: fc.oneof(fc.array(fc.record({ name: text, type: fc.oneof(some(["ITEM", "VALUE"]), text) }), { maxLength: 2 }), anyValue),
        queryParameters: fc.array(fc.record({ name: text, type: fc.oneof(some(["string", "number", "boolean"]), text) }), { maxLength: 2 }),
      },
      { requiredKeys: [] },
    ),
    calculationType: fc.oneof(some(["EXPRESSION", "STATE-EXPRESSION", "CALCULATION"]), text),
    query: fc.oneof(some(["Agreement ?a; link:meter Item:?i.", `Agreement ?a; entity:key "\${key}"; link:meter Item:?i.`, "Agreement ?a.", "Item ?i; entity:id ?i."]), text),
    transform: fc.oneof(some(["$", "", "{ 'n': $count(a) }", "$eval('1+1')", "$sum(i.value)", "result(?a) { $ }", "$$.constructor", "$string($).length"]), text),
    queryParameters: fc.oneof(fc.record({ key: fc.oneof(fc.constant(a.key), text) }, { requiredKeys: [] }), anyValue),
    apiDefinitionExternalId: fc.oneof({ weight: 3, arbitrary: fc.constant(a.api) }, { weight: 1, arbitrary: text }),
    externalId: fc.oneof({ weight: 2, arbitrary: some([a.api, a.calculation]) }, { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 20 }) }, { weight: 1, arbitrary: hostileString }),
    itemId: fc.oneof({ weight: 3, arbitrary: fc.constant(a.item) }, { weight: 1, arbitrary: fc.uuid() }, { weight: 1, arbitrary: hostileString }),
    itemIds: fc.array(fc.oneof(fc.constant(a.item), fc.uuid(), hostileString), { maxLength: 3 }),
    id: fc.oneof({ weight: 2, arbitrary: some([a.agreement, a.item]) }, { weight: 1, arbitrary: fc.uuid() }, { weight: 1, arbitrary: hostileString }),
    type: fc.oneof(some(["Agreement", "Item"]), text),
    key: fc.oneof(fc.constant(a.key), text),
    segment: fc.oneof(fc.constant("demo"), text),
  };
}
