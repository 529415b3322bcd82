import { randomUUID } from "node:crypto";
import { expect } from "chai";
import fc from "fast-check";
import { ProblemError } from "../../src/errors.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { compileQuery, type CompiledQuery } from "../../src/graph/query/compiler.js";
import { executeGuardedQuery, executeQuery, type DefinitionGuard, type QueryOutput } from "../../src/graph/query/execute.js";
import { parseQuery } from "../../src/graph/query/parser.js";
import { refreshGraphStatistics, type GraphStatistics } from "../../src/graph/query/statistics.js";
import { describeEachBackend, randomTenant, type BackendContext } from "../support/backends.js";
import { graphModel, materialize, patternModel, printPattern, resolveParams, statisticsModel, type GraphModel, type PatternModel } from "../support/graph-arbitrary.js";
import { evaluateReference, type ReferenceGraph } from "../support/graph-reference.js";

/** Graphs per run and patterns per graph: each pattern runs on two tenants, so cases = 2 × GRAPHS × PATTERNS per backend. */
const GRAPHS = Number(process.env.GRAPH_REFERENCE_GRAPHS ?? 40);
const PATTERNS = 40;
const ORDER_GRAPHS = Math.max(1, Math.round(GRAPHS / 2));
const LIMITS = { timeoutMs: 10_000, maxRows: 2000 };

interface Tenant {
  name: string;
  graph: ReferenceGraph;
  ids: string[];
  /** A stored API definition of the tenant: every case runs again guarded by it. */
  guard: DefinitionGuard;
  /** The statistics every case is planned with: the tenant's own, made up ones, or none (the pattern's plan). */
  statistics: GraphStatistics | undefined;
}

/** Stores a generated graph in a fresh tenant; two ids past the last entity stay dangling. */
async function store(ctx: BackendContext, model: GraphModel): Promise<Tenant> {
  const name = randomTenant();
  const ids = Array.from({ length: model.entities.length + 2 }, () => randomUUID());
  const graph = materialize(model, ids);
  if (graph.entities.length > 0) await upsertEntities(ctx.db.knex, name, graph.entities);
  if (graph.links.length > 0) await createLinks(ctx.db.knex, name, graph.links.map((l) => ({ from: { id: l.from }, relation: l.relation, to: { id: l.to } })));
  const updatedAt = "2026-01-02T03:04:05.678Z";
  const guard: DefinitionGuard = { table: "api_definitions", externalId: "reference", id: randomUUID(), updatedAt };
  await ctx.db.knex("api_definitions").insert({ tenant: name, id: guard.id, external_id: guard.externalId, query: "-", updated_at: updatedAt });
  return { name, graph, ids, guard, statistics: await refreshGraphStatistics(ctx.db.graph, name) };
}

/** The query planned with these statistics whatever the tenant's are. */
function plannedWith(compiled: CompiledQuery, statistics: GraphStatistics | undefined): CompiledQuery {
  return { ...compiled, planned: () => compiled.planned(statistics) };
}

/** Entity labels as ids, value labels as values: what the reference answers. */
function comparable(output: QueryOutput, kinds: Map<string, "entity" | "value">): Record<string, unknown[]> {
  return Object.fromEntries(Object.entries(output).map(([label, list]) => [label, kinds.get(label) === "entity" ? list.map((e) => (e as { id: string }).id) : list]));
}

const sortedValues = (list: unknown[]) => list.map((v) => JSON.stringify(v)).sort();

/**
 * Runs the pattern (as written, or with its statements reordered) and compares it with the
 * reference: entity labels in the exact order, value labels as sets (their order among rows of
 * the same entities is not fixed). With `asSets`, every label is compared as a set, as a
 * reordered pattern lists its labels, and so sorts its rows, in another order.
 */
async function check(ctx: BackendContext, tenant: Tenant, pattern: PatternModel, source: string, asSets: boolean): Promise<void> {
  const query = parseQuery(source);
  const params = resolveParams(pattern.params, tenant.ids);
  const expected = evaluateReference(query, tenant.graph, params);
  const where = `\n${source}\nparams ${JSON.stringify(params)} on ${ctx.name}`;
  let output: QueryOutput;
  try {
    const compiled = plannedWith(compileQuery(query), tenant.statistics);
    output = await executeQuery(ctx.db.graph, compiled, tenant.name, params, LIMITS);
    // The same statement run only while a definition is current (as API requests run it): the
    // same answer while it is, no answer (the walk not run) once it is not.
    expect(await executeGuardedQuery(ctx.db.graph, compiled, tenant.name, params, LIMITS, tenant.guard), `guarded:${where}`).to.deep.equal(output);
    const stale = { ...tenant.guard, updatedAt: "2026-01-02T03:04:05.679Z" };
    expect(await executeGuardedQuery(ctx.db.graph, compiled, tenant.name, params, LIMITS, stale), `stale guard:${where}`).to.equal(undefined);
  } catch (err) {
    if (expected.rows > LIMITS.maxRows && err instanceof ProblemError && /QUERY_MAX_ROWS/.test(err.message)) return;
    throw new Error(`query failed (the reference has ${expected.rows} rows):${where}`, { cause: err });
  }
  expect(expected.rows, `the reference has more rows than the limit, the query answered:${where}`).to.be.at.most(LIMITS.maxRows);
  const kinds = new Map(expected.labels.map((l) => [l.name, l.kind]));
  const actual = comparable(output, kinds);
  expect(Object.keys(actual), where).to.deep.equal(expected.labels.map((l) => l.name));
  for (const { name, kind } of expected.labels) {
    if (kind === "entity" && !asSets) expect(actual[name], `?${name}${where}`).to.deep.equal(expected.output[name]);
    else expect(sortedValues(actual[name]!), `?${name}${where}`).to.deep.equal(sortedValues(expected.output[name]!));
  }
}

describeEachBackend("graph queries against the reference evaluator", (ctx) => {
  it(`answers ${GRAPHS * PATTERNS} random patterns, each on two tenants of random graphs (${2 * GRAPHS * PATTERNS} cases; planned with the first one's statistics, with made-up ones or none on the second), exactly as the reference does`, async function () {
    this.timeout(600_000);
    const statistics = fc.option(statisticsModel, { nil: undefined });
    await fc.assert(
      fc.asyncProperty(graphModel, graphModel, statistics, fc.array(patternModel, { minLength: PATTERNS, maxLength: PATTERNS }), async (first, second, made, patterns) => {
        const tenants = [await store(ctx, first), { ...(await store(ctx, second)), statistics: made }];
        for (const pattern of patterns) {
          const source = printPattern(pattern);
          for (const tenant of tenants) await check(ctx, tenant, pattern, source, false);
        }
      }),
      { numRuns: GRAPHS, endOnFailure: true },
    );
  });

  it(`gives ${ORDER_GRAPHS * PATTERNS} random patterns written in another statement and clause order the reference's answer`, async function () {
    this.timeout(600_000);
    const reordered = patternModel.chain((pattern) =>
      fc
        .array(fc.nat(), { minLength: pattern.statements.length, maxLength: pattern.statements.length })
        .map((ranks) => ({ pattern, ranks }))
        .chain(({ pattern, ranks }) => fc.boolean().map((reverseClauses) => ({ pattern, ranks, reverseClauses }))),
    );
    await fc.assert(
      fc.asyncProperty(graphModel, fc.array(reordered, { minLength: PATTERNS, maxLength: PATTERNS }), async (model, cases) => {
        const tenant = await store(ctx, model);
        for (const { pattern, ranks, reverseClauses } of cases) {
          const statements = pattern.statements
            .map((s, i) => ({ s: reverseClauses ? { ...s, clauses: [...s.clauses].reverse() } : s, rank: ranks[i]! }))
            .sort((x, y) => x.rank - y.rank)
            .map((x) => x.s);
          await check(ctx, tenant, pattern, printPattern(pattern), true);
          await check(ctx, tenant, pattern, printPattern({ ...pattern, statements }), true);
        }
      }),
      { numRuns: ORDER_GRAPHS, endOnFailure: true },
    );
  });
});
