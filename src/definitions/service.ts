import type { Knex } from "knex";
import type { LRUCache } from "lru-cache";
import { CompiledCache, keptUpTo } from "../compiled-cache.js";
import type { GraphSession } from "../db/database.js";
import { invalidRequest, ProblemError, type ProblemDetail } from "../errors.js";
import { isUuid } from "../input.js";
import type { QueryParameters } from "../graph/query/compiler.js";
import { executeGuardedQuery, executeQuery, type QueryLimits, type QueryOutput } from "../graph/query/execute.js";
import type { EventDateRange } from "../timeseries/periods.js";
import type { QueryOptions } from "../timeseries/query.js";
import { seriesRequestProblems, type SeriesAnswer, type SeriesRequest, type TimeSeries } from "../timeseries/service.js";
import type { TransformPool } from "../transform/pool.js";
import type { TransformInput, TransformLimits } from "../transform/protocol.js";
import { isHeaderParameter, type ApiDefinition, type ApiDefinitionData, type ApiDefinitionInput } from "./api-definition.js";
import * as store from "./store.js";
import { checkDefinition, compileDefinition, type CompiledDefinition } from "./validate.js";
import { VersionedDefinitions, type Actor, type HistoryEntry, type VersionedStore } from "./history.js";
import { writeTransaction } from "../db/write-retry.js";

/** Who asks, as the transport establishes it: never taken from the request body. */
export interface Caller {
  tenant: string;
  /** The token's user claim; undefined when the token has none. */
  userId: string | undefined;
}

export interface ApiDefinitionLimits {
  query: Omit<QueryLimits, "failureCode">;
  transform: TransformLimits;
}

export interface TestOutcome {
  queryOutput: QueryOutput | null;
  result: unknown;
  problems: ProblemDetail[];
}

/** A definition as a request last read it, compiled. */
interface KnownDefinition {
  definition: ApiDefinition;
  compiled: CompiledDefinition;
}

/** API Definitions: stored, validated on save, compiled once, requested by externalId. */
export class ApiDefinitions {
  private readonly cache: CompiledCache<CompiledDefinition>;
  /**
   * The definitions requested lately, by tenant and externalId, least recently used dropped first.
   * Never trusted as they are: a request runs its query with a guard that the stored row is still
   * this one, in the query's own statement ({@link executeGuardedQuery}), and reads the row anew
   * when it is not. So a change made through any replica is seen by the next request everywhere.
   */
  private readonly known: LRUCache<string, KnownDefinition> | undefined;

  constructor(
    private readonly knex: Knex,
    private readonly graph: GraphSession,
    private readonly timeSeries: TimeSeries,
    private readonly transforms: TransformPool,
    private readonly limits: ApiDefinitionLimits,
    cacheSize = 1000,
  ) {
    this.cache = new CompiledCache(cacheSize);
    this.known = keptUpTo(cacheSize);
    this.versions = new VersionedDefinitions(knex, API_STORE);
  }

  private readonly versions: VersionedDefinitions<ApiDefinition, ApiDefinitionInput>;

  async create(tenant: string, input: ApiDefinitionInput, actor?: Actor): Promise<ApiDefinition> {
    compileDefinition(input, this.limits.transform);
    return writeTransaction(this.knex, (trx) => this.versions.create(trx, tenant, input, actor));
  }

  async get(tenant: string, externalId: string): Promise<ApiDefinition> {
    const found = await store.findDefinition(this.knex, tenant, externalId);
    if (found === undefined) throw notFound(externalId);
    return found;
  }

  list(tenant: string, options: { limit: number; offset: number; active?: boolean }): Promise<store.DefinitionPage> {
    return store.listDefinitions(this.knex, tenant, options);
  }

  async replace(tenant: string, externalId: string, input: ApiDefinitionInput, actor?: Actor): Promise<ApiDefinition> {
    compileDefinition(input, this.limits.transform);
    return writeTransaction(this.knex, (trx) => this.versions.replace(trx, tenant, externalId, input, actor));
  }

  async setActive(tenant: string, externalId: string, active: boolean, actor?: Actor): Promise<ApiDefinition> {
    return writeTransaction(this.knex, async (trx) => {
      const current = await store.findDefinition(trx, tenant, externalId, true);
      if (current === undefined) throw notFound(externalId);
      return this.versions.replace(trx, tenant, externalId, { ...API_STORE.inputOf(current, externalId), active }, actor);
    });
  }

  async delete(tenant: string, externalId: string, actor?: Actor): Promise<void> {
    await writeTransaction(this.knex, (trx) => this.versions.delete(trx, tenant, externalId, actor));
  }

  /** `GET /api-definitions/{externalId}/history`: newest first. */
  history(tenant: string, externalId: string): Promise<HistoryEntry<ApiDefinition>[]> {
    return this.versions.history(tenant, externalId);
  }

  /** `POST /api-definitions/{externalId}/history/{version}/restore`: a new version equal to that one, checked as a save is. */
  async restore(tenant: string, externalId: string, version: number, actor?: Actor): Promise<ApiDefinition> {
    const input = await this.versions.restoreInput(tenant, externalId, version);
    compileDefinition(input, this.limits.transform);
    return writeTransaction(this.knex, (trx) => this.versions.replace(trx, tenant, externalId, input, actor, version));
  }

  /**
   * Runs a stored definition (contract §3.2): looked up in the caller's tenant only; inactive is a
   * 409; the parameters must be exactly the declared ones, with `userId` and `tenantId` from the caller.
   * A definition run before is not looked up again: its query runs guarded, in one statement, and
   * only a guard that fails (the row changed) costs the look-up.
   */
  async request(caller: Caller, externalId: string, queryParameters: Record<string, unknown> | undefined): Promise<unknown> {
    const key = CompiledCache.key(caller.tenant, externalId);
    const known = this.known?.get(key);
    if (known !== undefined) {
      const answer = await this.runKnown(caller, known, queryParameters);
      if (answer !== STALE) return answer;
      if (this.known?.peek(key) === known) this.known.delete(key);
    }
    const fresh = await this.load(caller.tenant, externalId);
    this.known?.set(key, fresh);
    const params = resolveParameters(fresh.compiled.declared, queryParameters ?? {}, caller);
    const queryOutput = await executeQuery(this.graph, fresh.compiled.query, caller.tenant, params, { ...this.limits.query, failureCode: "TRANSFORM_FAILED" });
    return this.answer(caller, fresh, params, queryOutput);
  }

  /** Runs a definition read by an earlier request, if it is still the stored one; STALE when it is not (or may not be). */
  private async runKnown(caller: Caller, known: KnownDefinition, queryParameters: Record<string, unknown> | undefined): Promise<unknown> {
    let params: QueryParameters;
    try {
      params = resolveParameters(known.compiled.declared, queryParameters ?? {}, caller);
    } catch {
      // Perhaps wrong only for this version: the stored definition decides, and names the problems.
      return STALE;
    }
    const { definition } = known;
    const guard = { table: "api_definitions" as const, externalId: definition.externalId, id: definition.id, updatedAt: definition.updatedAt };
    const queryOutput = await executeGuardedQuery(this.graph, known.compiled.query, caller.tenant, params, { ...this.limits.query, failureCode: "TRANSFORM_FAILED" }, guard);
    if (queryOutput === undefined) return STALE;
    return this.answer(caller, known, params, queryOutput);
  }

  /** Reads the stored definition: 404 when there is none, 409 when it is inactive; compiled once per version. */
  private async load(tenant: string, externalId: string): Promise<KnownDefinition> {
    const definition = await store.findDefinition(this.knex, tenant, externalId);
    if (definition === undefined) throw notFound(externalId);
    if (!definition.active) {
      throw new ProblemError("API_DEFINITION_INACTIVE", `API definition "${externalId}" exists but is not active`);
    }
    const key = CompiledCache.key(tenant, definition.externalId, definition.updatedAt);
    const compiled = await this.cache.get(key, () => compileDefinition({ ...definition, name: definition.name ?? undefined, version: definition.version ?? undefined }, this.limits.transform));
    return { definition, compiled };
  }

  private async answer(caller: Caller, known: KnownDefinition, params: QueryParameters, queryOutput: QueryOutput): Promise<unknown> {
    const { compiled, definition } = known;
    if (compiled.transform === undefined) return queryOutput;
    return (await this.transforms.evaluate(compiled.transform, await this.transformInput(caller, definition.data, compiled, queryOutput, params))) ?? null;
  }

  /**
   * What a transform evaluates with: besides the query output and the parameters, the timelines
   * its result() fields name — each timeline fetched for all its entities in one query, before the
   * evaluation — and `$events()`. "Now" is taken once, so every timeline of a run sees the same instant.
   */
  private async transformInput(caller: Caller, data: ApiDefinitionData | undefined, compiled: CompiledDefinition, queryOutput: QueryOutput, params: QueryParameters): Promise<TransformInput> {
    const now = new Date();
    const declared = new Map((data?.timelineParameters ?? []).map((t) => [t.name, t]));
    const wanted = new Map<string, Set<string>>();
    for (const use of compiled.transform?.results ?? []) {
      for (const field of use.fields) {
        if (field.field !== "id" || !declared.has(field.alias)) continue;
        const ids = wanted.get(field.alias) ?? new Set<string>();
        for (const entity of queryOutput[use.label] ?? []) ids.add(String((entity as { id: unknown }).id));
        wanted.set(field.alias, ids);
      }
    }
    const timelines = new Map<string, Map<string, unknown>>();
    for (const [name, ids] of wanted) {
      const spec = declared.get(name)!;
      const request = { eventDateRange: spec.eventDateRange as EventDateRange | undefined, queryOptions: spec.queryOptions as QueryOptions | undefined };
      const series = ids.size === 0 ? new Map<string, SeriesAnswer>() : await this.timeSeries.series(caller.tenant, [...ids], request, now);
      timelines.set(name, new Map([...series].map(([id, answer]) => [id, "buckets" in answer ? answer.buckets : answer.events])));
    }
    const events = async (itemId: unknown, options: unknown): Promise<unknown> => {
      const { id, request } = eventsArguments(itemId, options);
      const answer = (await this.timeSeries.series(caller.tenant, [id], request, now)).get(id);
      return answer === undefined ? null : "buckets" in answer ? answer.buckets : answer.events;
    };
    return { queryOutput, params, timelines, events };
  }

  /**
   * The admin portal's Query and Transform tabs: runs an unsaved definition. Problems of the
   * definition, of the query run and of the transform run are reported, not thrown, beside
   * whatever could be computed; only bad parameters are an error.
   */
  async test(caller: Caller, input: ApiDefinitionInput, queryParameters: Record<string, unknown> | undefined): Promise<TestOutcome> {
    const { compiled, problems } = checkDefinition(input, this.limits.transform);
    if (compiled === undefined) return { queryOutput: null, result: null, problems };
    const params = resolveParameters(compiled.declared, queryParameters ?? {}, caller);
    let queryOutput: QueryOutput;
    try {
      queryOutput = await executeQuery(this.graph, compiled.query, caller.tenant, params, { ...this.limits.query, failureCode: "TRANSFORM_FAILED" });
    } catch (err) {
      if (err instanceof ProblemError && err.code === "TRANSFORM_FAILED") return { queryOutput: null, result: null, problems: [{ path: "query", message: err.message }] };
      throw err;
    }
    if (compiled.transform === undefined) return { queryOutput, result: queryOutput, problems: [] };
    try {
      const transformInput = await this.transformInput(caller, input.data, compiled, queryOutput, params);
      return { queryOutput, result: (await this.transforms.evaluate(compiled.transform, transformInput)) ?? null, problems: [] };
    } catch (err) {
      if (!(err instanceof ProblemError) || err.code !== "TRANSFORM_FAILED") throw err;
      return { queryOutput, result: null, problems: err.errors ?? [{ path: "transform", message: err.message }] };
    }
  }
}

/**
 * The arguments of one `$events(itemId, options)` call, checked as `POST /items/{itemId}/events/query`
 * checks its path and body: they come from the transform and its caller's parameters, so a bad one
 * is the caller's `400 INVALID_REQUEST` naming the argument (`$events.itemId`,
 * `$events.options.<field>`), never a statement the database refuses.
 */
export function eventsArguments(itemId: unknown, options: unknown): { id: string; request: SeriesRequest } {
  if (!isUuid(itemId)) throw invalidRequest("$events(itemId, options): itemId must be the uuid of an Item", "$events.itemId");
  if (options !== undefined && options !== null && (typeof options !== "object" || Array.isArray(options))) {
    throw invalidRequest('$events(itemId, options): options must be an object { "eventDateRange"?, "queryOptions"? }', "$events.options");
  }
  const { eventDateRange, queryOptions, ...other } = (options ?? {}) as { eventDateRange?: EventDateRange; queryOptions?: QueryOptions };
  const problems: ProblemDetail[] = Object.keys(other).map((key) => ({ path: `$events.options.${key}`, message: "is not an option of $events()" }));
  const request: SeriesRequest = { eventDateRange, queryOptions };
  for (const problem of seriesRequestProblems(request)) problems.push({ ...problem, path: `$events.options.${problem.path ?? ""}`.replace(/\.$/, "") });
  if (problems.length > 0) {
    throw new ProblemError("INVALID_REQUEST", `$events(itemId, options): ${problems.map((p) => `${p.path} ${p.message}`).join("; ")}`, { errors: problems });
  }
  return { id: itemId.toLowerCase(), request };
}

/** API Definitions as the history writes them. */
const API_STORE: VersionedStore<ApiDefinition, ApiDefinitionInput> = {
  kind: "api",
  find: store.findDefinition,
  insert: store.insertDefinition,
  replace: store.replaceDefinition,
  remove: store.deleteDefinition,
  inputOf: (record, externalId) => ({
    name: record.name ?? undefined,
    externalId,
    version: record.version ?? undefined,
    active: record.active,
    data: record.data,
    query: record.query,
    transform: record.transform,
  }),
  notFound,
};

/** A known definition's guard failed: the stored row is no longer the one it was compiled from. */
const STALE = Symbol("stale");

function notFound(externalId: string): ProblemError {
  return new ProblemError("API_DEFINITION_NOT_FOUND", `there is no API definition "${externalId}" in this tenant`);
}

/**
 * The values of a run: exactly the declared parameters, `tenantId` and `userId` from the caller
 * (a body that gives either is refused), every problem named at once.
 */
export function resolveParameters(declared: Set<string>, given: Record<string, unknown>, caller: Caller): QueryParameters {
  const problems: ProblemDetail[] = [];
  // No prototype: a parameter named like a member of Object.prototype is a plain entry.
  const values = Object.create(null) as Record<string, unknown>;
  for (const [name, value] of Object.entries(given)) {
    if (isHeaderParameter(name)) {
      problems.push({ path: `queryParameters.${name}`, message: `comes from the ${name === "tenantId" ? "X-TENANT-ID header" : "token"} and cannot be given` });
    } else if (!declared.has(name)) {
      problems.push({ path: `queryParameters.${name}`, message: "is not a parameter of this definition" });
    } else if (value === null || !["string", "number", "boolean"].includes(typeof value) || (typeof value === "number" && !Number.isFinite(value))) {
      problems.push({ path: `queryParameters.${name}`, message: "must be a string, a number or a boolean" });
    } else {
      values[name] = value;
    }
  }
  for (const name of declared) {
    if (name === "tenantId") values.tenantId = caller.tenant;
    else if (name === "userId") {
      if (caller.userId === undefined) problems.push({ path: "queryParameters.userId", message: "the token carries no user id for ${userId}" });
      else values.userId = caller.userId;
    } else if (!Object.prototype.hasOwnProperty.call(given, name)) {
      problems.push({ path: `queryParameters.${name}`, message: "is declared by the definition but missing" });
    }
  }
  if (problems.length > 0) {
    const summary = problems.map((p) => `${p.path!.slice("queryParameters.".length)} ${p.message}`).join("; ");
    throw new ProblemError("INVALID_QUERY_PARAMETERS", `the query parameters do not match the definition: ${summary}`, { errors: problems });
  }
  return values;
}
