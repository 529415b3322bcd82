import { randomUUID } from "node:crypto";
import { expect } from "chai";
import fc from "fast-check";
import { describeEachBackend, randomTenant } from "../support/backends.js";
import { testServer, type TestServer, withoutRequestId } from "../support/server.js";
import { hsToken } from "../support/tokens.js";

/**
 * Contract §1 and §9 as a property: whatever a token of tenant A does — in A, or naming B in
 * X-TENANT-ID — it never reads, changes, counts or reveals the existence of B's rows.
 */

const RANGE = { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2024-01-01T02:00:00Z", timeZone: "UTC" };
const HOURLY = { aggregation: { metric: "sum", interval: "Hourly" } };
const TABLES = ["entities", "links", "events", "api_definitions", "calculation_definitions"] as const;

/** What one tenant holds: the keys and ids its rows are known by. */
interface Seeded {
  tenant: string;
  /** Agreement keys, API definition and calculation definition external ids. */
  keys: string[];
  /** Entity ids (agreements and items). */
  ids: string[];
  /** Item ids. */
  items: string[];
  /** Attribute values and event source ids only this tenant's rows hold. */
  values: string[];
}

type Method = "GET" | "POST" | "PUT" | "DELETE";
interface Call {
  method: Method;
  url: string;
  payload?: unknown;
}

/** A reference an operation uses: one of A's, one of B's, or one nobody has. */
type Ref = { owner: "a" | "b" | "shared"; index: number } | { owner: "fresh" };

const ref: fc.Arbitrary<Ref> = fc.oneof(
  fc.record({ owner: fc.constantFrom("a" as const, "b" as const, "shared" as const), index: fc.nat(5) }),
  fc.constant({ owner: "fresh" as const }),
);

/** A key A may create rows under: B's own keys are left out, so A never holds a row named like one of B's. */
const creatable: fc.Arbitrary<Ref> = fc.oneof(
  fc.record({ owner: fc.constantFrom("a" as const, "shared" as const), index: fc.nat(5) }),
  fc.constant({ owner: "fresh" as const }),
);

/** One operation; `at(ref, kind)` turns a reference into a concrete key or id. */
type Operation = (at: (r: Ref, kind: "key" | "id" | "item") => string) => Call;

interface Op {
  name: string;
  refs: Ref[];
  build: Operation;
}

const operation: fc.Arbitrary<Op> = fc.oneof<fc.Arbitrary<Op>[]>(
  fc.constant({ name: "list entities", refs: [], build: () => ({ method: "GET" as const, url: "/graph/entities" }) }),
  fc.constantFrom("Agreement", "Item").map((type) => ({ name: "list entities by type", refs: [], build: () => ({ method: "GET" as const, url: `/graph/entities?type=${type}` }) })),
  ref.map((r) => ({ name: "read entity", refs: [r], build: (at: Parameters<Operation>[0]) => ({ method: "GET" as const, url: `/graph/entities/${at(r, "id")}` }) })),
  ref.map((r) => ({ name: "delete entity", refs: [r], build: (at: Parameters<Operation>[0]) => ({ method: "DELETE" as const, url: `/graph/entities/${at(r, "id")}` }) })),
  fc.tuple(creatable, fc.integer({ min: 0, max: 99 })).map(([r, n]) => ({
    name: "upsert entity",
    refs: [r],
    build: (at: Parameters<Operation>[0]) => ({ method: "POST" as const, url: "/graph/entities", payload: { entities: [{ type: "Agreement", key: at(r, "key"), attributes: { n } }] } }),
  })),
  fc.tuple(ref, ref).map(([from, to]) => ({
    name: "link",
    refs: [from, to],
    build: (at: Parameters<Operation>[0]) => ({
      method: "POST" as const,
      url: "/graph/links",
      payload: { links: [{ from: { id: at(from, "id") }, relation: "meter", to: { id: at(to, "item") } }] },
    }),
  })),
  fc.constant({ name: "list API definitions", refs: [], build: () => ({ method: "GET" as const, url: "/api-definitions" }) }),
  ref.map((r) => ({ name: "read API definition", refs: [r], build: (at: Parameters<Operation>[0]) => ({ method: "GET" as const, url: `/api-definitions/${at(r, "key")}` }) })),
  ref.map((r) => ({ name: "delete API definition", refs: [r], build: (at: Parameters<Operation>[0]) => ({ method: "DELETE" as const, url: `/api-definitions/${at(r, "key")}` }) })),
  creatable.map((r) => ({
    name: "replace API definition",
    refs: [r],
    build: (at: Parameters<Operation>[0]) => ({ method: "PUT" as const, url: `/api-definitions/${at(r, "key")}`, payload: apiDefinition(at(r, "key")) }),
  })),
  creatable.map((r) => ({ name: "create API definition", refs: [r], build: (at: Parameters<Operation>[0]) => ({ method: "POST" as const, url: "/api-definitions", payload: apiDefinition(at(r, "key")) }) })),
  ref.map((r) => ({
    name: "request",
    refs: [r],
    build: (at: Parameters<Operation>[0]) => ({ method: "POST" as const, url: "/task-backend/tasks/x/api/request", payload: { apiDefinitionExternalId: at(r, "key") } }),
  })),
  fc.constant({ name: "list calculation definitions", refs: [], build: () => ({ method: "GET" as const, url: "/calculation-definitions" }) }),
  ref.map((r) => ({ name: "read calculation definition", refs: [r], build: (at: Parameters<Operation>[0]) => ({ method: "GET" as const, url: `/calculation-definitions/${at(r, "key")}` }) })),
  ref.map((r) => ({ name: "delete calculation definition", refs: [r], build: (at: Parameters<Operation>[0]) => ({ method: "DELETE" as const, url: `/calculation-definitions/${at(r, "key")}` }) })),
  ref.map((r) => ({ name: "calculate", refs: [r], build: (at: Parameters<Operation>[0]) => ({ method: "POST" as const, url: `/calculation-definitions/${at(r, "key")}/calculate`, payload: {} }) })),
  ref.map((target) => ({
    name: "create a calculation referring to another",
    refs: [target],
    build: (at: Parameters<Operation>[0]) => ({
      method: "POST" as const,
      url: "/calculation-definitions",
      payload: {
        externalId: `derived-${randomUUID()}`,
        calculationType: "EXPRESSION",
        data: { calculation: { expression: "x * 2", eventDateRange: RANGE, queryOptions: HOURLY, scope: { x: { type: "EXPRESSION", expression: at(target, "key") } } } },
      },
    }),
  })),
  fc.tuple(ref, fc.boolean()).map(([r, aggregated]) => ({
    name: "query events",
    refs: [r],
    build: (at: Parameters<Operation>[0]) => ({
      method: "POST" as const,
      url: `/items/${at(r, "item")}/events/query`,
      payload: { eventDateRange: RANGE, ...(aggregated ? { queryOptions: HOURLY } : {}) },
    }),
  })),
  fc.tuple(ref, ref).map(([r, s]) => ({
    name: "timeline query",
    refs: [r, s],
    build: (at: Parameters<Operation>[0]) => ({ method: "POST" as const, url: "/timeline/query", payload: { itemIds: [at(r, "item"), at(s, "item")], eventDateRange: RANGE } }),
  })),
  fc.tuple(ref, ref, fc.integer({ min: 0, max: 59 })).map(([r, s, minute]) => ({
    name: "ingest events of many items",
    refs: [r, s],
    build: (at: Parameters<Operation>[0]) => ({
      method: "POST" as const,
      url: "/events",
      payload: { events: [r, s].map((item) => ({ itemId: at(item, "item"), timestamp: `2024-01-01T01:${String(minute).padStart(2, "0")}:00Z`, value: minute })) },
    }),
  })),
  ref.map((r) => ({
    name: "test an API definition",
    refs: [r],
    build: (at: Parameters<Operation>[0]) => ({
      method: "POST" as const,
      url: "/api-definitions/test",
      payload: {
        definition: { ...apiDefinition("probe"), query: `Agreement ?a; entity:key "${at(r, "key")}"; link:meter Item:?i.`, transform: "$" },
        queryParameters: {},
      },
    }),
  })),
  fc.tuple(ref, fc.integer({ min: 0, max: 59 })).map(([r, minute]) => ({
    name: "ingest events",
    refs: [r],
    build: (at: Parameters<Operation>[0]) => ({
      method: "POST" as const,
      url: `/items/${at(r, "item")}/events`,
      payload: { events: [{ timestamp: `2024-01-01T00:${String(minute).padStart(2, "0")}:00Z`, value: minute }] },
    }),
  })),
);

function apiDefinition(externalId: string) {
  return { name: "walk", externalId, active: true, data: { queryParameters: [] }, query: "Agreement ?a; link:meter Item:?i.", transform: "" };
}

/** Every string an answer may legitimately echo: the ones the request itself carries. */
function stringsOf(call: Call): Set<string> {
  const found = new Set<string>(call.url.split(/[/?=&]/));
  const walk = (v: unknown): void => {
    if (typeof v === "string") found.add(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === "object") Object.values(v).forEach(walk);
  };
  walk(call.payload);
  return found;
}

describeEachBackend("tenant isolation (property)", (ctx) => {
  let server: TestServer;
  let operator: string;
  before(async () => {
    server = await testServer(ctx.db);
    operator = await hsToken({ roles: ["admin"], tenants: "*" });
  });
  after(() => server.app.close());

  const send = (token: string, tenant: string, call: Call) =>
    server.app.inject({
      method: call.method,
      url: call.url,
      headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenant },
      ...(call.payload === undefined ? {} : { payload: call.payload as object }),
    });

  /** Entities, a link, events, an API definition and a calculation per key; `shared` keys are in both tenants. */
  async function seed(tenant: string, own: string[], shared: string[]): Promise<Seeded> {
    const ok = async (call: Call) => {
      const res = await send(operator, tenant, call);
      expect(res.statusCode, res.body).to.be.oneOf([200, 201]);
      return res.json() as Record<string, unknown>;
    };
    const result: Seeded = { tenant, keys: [], ids: [], items: [], values: [] };
    for (const key of [...own, ...shared]) {
      const [attribute, source] = [`attribute-${randomUUID()}`, `source-${randomUUID()}`];
      const { entities } = (await ok({
        method: "POST",
        url: "/graph/entities",
        payload: { entities: [{ type: "Agreement", key, attributes: { owner: tenant, secret: attribute } }, { type: "Item", key: `${key}-item` }] },
      })) as { entities: { id: string }[] };
      const [agreement, item] = [entities[0]!.id, entities[1]!.id];
      await ok({ method: "POST", url: "/graph/links", payload: { links: [{ from: { id: agreement }, relation: "meter", to: { id: item } }] } });
      await ok({ method: "POST", url: `/items/${item}/events`, payload: { events: [{ timestamp: "2024-01-01T00:30:00Z", value: 1, sourceId: source }] } });
      await ok({ method: "POST", url: "/api-definitions", payload: apiDefinition(key) });
      await ok({
        method: "POST",
        url: "/calculation-definitions",
        payload: {
          externalId: key,
          calculationType: "EXPRESSION",
          data: {
            calculation: {
              select: `Agreement ?ag; entity:key "${key}"; link:meter Item:?cons.`,
              expression: "a",
              eventDateRange: RANGE,
              queryOptions: HOURLY,
              scope: { a: { type: "TIMESERIES", timeseries: { selectVariable: "{{?cons}}" } } },
            },
          },
        },
      });
      result.keys.push(key);
      result.ids.push(agreement, item);
      result.items.push(item);
      result.values.push(attribute, source);
    }
    return result;
  }

  /** Every row of the tenant, in a stable order: a change, a count or a read shows here. */
  async function snapshot(tenant: string): Promise<string> {
    const rows = await Promise.all(TABLES.map((table) => ctx.db.knex(table).where({ tenant }).select("*")));
    return JSON.stringify(rows.map((r) => r.map((row: Record<string, unknown>) => JSON.stringify(row)).sort()));
  }

  it("never lets a token of A read, change, count or detect B's rows, in A or naming B", async function () {
    this.timeout(120_000);
    const [tenantA, tenantB] = [randomTenant(), randomTenant()];
    const shared = ["shared-1", "shared-2"];
    const a = await seed(tenantA, [`alpha-${randomUUID()}`, `alpha-${randomUUID()}`], shared);
    const b = await seed(tenantB, [`bravo-${randomUUID()}`, `bravo-${randomUUID()}`], shared);
    const before = await snapshot(tenantB);
    // B's secrets: its name, ids, its own keys and the values only its rows hold.
    const bOwnKeys = b.keys.filter((k) => !shared.includes(k));
    const secrets = [tenantB, ...b.ids, ...bOwnKeys, ...b.values];
    const tokenA = await hsToken({ roles: ["admin"], tenants: [tenantA] });
    let forbidden: unknown;
    let calls = 0;

    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(operation, fc.boolean()), { minLength: 1, maxLength: 8 }), async (steps) => {
        for (const [op, namingB] of steps) {
          const fresh = { key: `fresh-${randomUUID()}`, id: randomUUID() };
          const at = (r: Ref, kind: "key" | "id" | "item"): string => {
            if (r.owner === "fresh") return kind === "key" ? fresh.key : fresh.id;
            const seeded = r.owner === "b" ? b : a;
            const pool = kind === "key" ? (r.owner === "shared" ? shared : seeded.keys.filter((k) => !shared.includes(k))) : kind === "id" ? seeded.ids : seeded.items;
            return pool[r.index % pool.length]!;
          };
          const call = op.build(at);
          calls++;
          if (namingB) {
            // A token of A naming B: refused before anything is read, the same answer every time.
            const res = await send(tokenA, tenantB, call);
            expect(res.statusCode, `${op.name}: ${res.body}`).to.equal(403);
            // The same answer but for its own request id (every problem+json names its request).
            const { requestId, ...answer } = res.json() as Record<string, unknown>;
            expect(requestId).to.be.a("string");
            forbidden ??= answer;
            expect(answer).to.deep.equal(forbidden);
            continue;
          }
          const res = await send(tokenA, tenantA, call);
          const echoed = stringsOf(call);
          for (const secret of secrets) {
            if (!echoed.has(secret)) expect(res.body, `${op.name} revealed ${secret}`).not.to.include(secret);
          }
          // One of B's keys or ids is answered exactly like one nobody has.
          if (op.refs.some((r) => r.owner === "b")) {
            const twinFresh = { key: `fresh-${randomUUID()}`, id: randomUUID() };
            const replaced = new Map<string, string>();
            const twin = op.build((r, kind) => {
              if (r.owner !== "b") return at(r, kind);
              const original = at(r, kind);
              const stand = kind === "key" ? `${twinFresh.key}-${replaced.size}` : randomUUID();
              if (!replaced.has(original)) replaced.set(original, stand);
              return replaced.get(original)!;
            });
            const other = await send(tokenA, tenantA, twin);
            // Each answer names its own request: the ids are set aside before the bodies are compared.
            const normalise = (body: string, pairs: [string, string][]) =>
              pairs.reduce((text, [from, to]) => text.split(from).join(to), withoutRequestId(body));
            const pairs = [...replaced.entries()];
            expect(other.statusCode, `${op.name} on B's reference vs a fresh one: ${res.body} / ${other.body}`).to.equal(res.statusCode);
            if (res.statusCode >= 400) {
              expect(normalise(res.body, pairs.map(([original], i) => [original, `REF${i}`]))).to.equal(normalise(other.body, pairs.map(([, stand], i) => [stand, `REF${i}`])));
            }
          }
        }
        expect(await snapshot(tenantB)).to.equal(before);
      }),
      { numRuns: 150, seed: Number(process.env.PROPERTY_SEED ?? Date.now() % 2 ** 31) },
    );
    expect(calls).to.be.greaterThan(300);
    expect(await snapshot(tenantB)).to.equal(before);
  });
});
