import type { Knex } from "knex";
import { CompiledCache } from "../compiled-cache.js";
import type { GraphSession } from "../db/database.js";
import { writeTransaction } from "../db/write-retry.js";
import { ProblemError, type ProblemDetail } from "../errors.js";
import type { QueryLimits } from "../graph/query/execute.js";
import type { TimeSeries } from "../timeseries/service.js";
import { Deadline } from "./deadline.js";
import { checkCalculation, expressionUses, type CalculationDefinition, type CalculationDefinitionInput, type CompiledCalculation } from "./definition.js";
import { evaluateCalculation, failed, type CalculateRequest, type CalculationResult, type RunContext } from "./evaluate.js";
import type { StepLimits } from "./steps.js";
import * as store from "./store.js";
import { VersionedDefinitions, type Actor, type HistoryEntry, type VersionedStore } from "../definitions/history.js";
import { inSpan } from "../observe/tracing.js";

export type { CalculateRequest, CalculationInput, CalculationResult } from "./evaluate.js";
export type { CalculationDefinitionPage } from "./store.js";

export interface CalculationLimits {
  /** Wall-clock limit of one calculation, nested ones included (CALCULATION_TIMEOUT_MS). */
  timeoutMs: number;
  query: Omit<QueryLimits, "failureCode">;
  /** Most steps and largest expressions of a definition, on save and at run time. */
  steps: StepLimits;
  /** The clock the time limit is read on. Default `Date.now`; tests pass their own. */
  clock?: () => number;
}

const MAX_DEPTH = 10;

function notFound(externalId: string): ProblemError {
  return new ProblemError("CALCULATION_DEFINITION_NOT_FOUND", `there is no calculation definition "${externalId}" in this tenant`);
}

/** Calculation Definitions as the history writes them. */
const CALCULATION_STORE: VersionedStore<CalculationDefinition, CalculationDefinitionInput> = {
  kind: "calculation",
  find: store.findCalculation,
  insert: store.insertCalculation,
  replace: store.replaceCalculation,
  remove: store.deleteCalculation,
  inputOf: (record, externalId) => ({ name: record.name, externalId, calculationType: record.calculationType, active: record.active, data: record.data }),
  notFound,
};

/** A run: besides its "now" and deadline, the definitions it may reach, read once at its start, and the chain being calculated. */
interface Run extends RunContext {
  definitions: ReadonlyMap<string, CalculationDefinition>;
  chain: string[];
}

/** What `test` answers: `calculate`'s answer when the definition ran, and the problems found (none when it ran). */
export type TestOutcome = (CalculationResult | Record<never, never>) & { problems: ProblemDetail[] };

/** The outcome of checking a definition: compiled, or its problems. */
type Checked = { compiled?: CompiledCalculation; problems: ProblemDetail[] };

/**
 * Calculation Definitions: stored, checked on save, compiled once, calculated on request (spec
 * §2.2, contract §5). Compiled definitions are cached by (tenant, externalId, updatedAt) and the
 * (externalId, updatedAt) of every definition they reach through EXPRESSION scopes, since a check
 * reads those (references, cycles): an update of any of them is seen by the next run.
 */
export class Calculations {
  private readonly cache: CompiledCache<Checked>;

  constructor(
    private readonly knex: Knex,
    private readonly graph: GraphSession,
    private readonly timeSeries: TimeSeries,
    private readonly limits: CalculationLimits,
    cacheSize = 1000,
  ) {
    this.cache = new CompiledCache(cacheSize);
    this.versions = new VersionedDefinitions(knex, CALCULATION_STORE);
  }

  private readonly versions: VersionedDefinitions<CalculationDefinition, CalculationDefinitionInput>;

  /** How many definitions were checked and compiled to be run (cache misses), since the start. */
  get compilations(): number {
    return this.cache.compilations;
  }

  private async check(tenant: string, input: CalculationDefinitionInput, knex: Knex = this.knex): Promise<CompiledCalculation> {
    const stored = await store.reachableCalculations(knex, tenant, expressionUses(input));
    const { compiled, problems } = await checkCalculation(input, (externalId) => stored.get(externalId), this.limits.steps);
    if (compiled === undefined) {
      const first = problems[0];
      throw new ProblemError("INVALID_DEFINITION", `the calculation definition has ${problems.length} problem(s); the first: ${first?.message} (${first?.path})`, { errors: problems });
    }
    return compiled;
  }

  async create(tenant: string, input: CalculationDefinitionInput, actor?: Actor): Promise<CalculationDefinition> {
    return this.saveChecked(tenant, async (trx) => {
      await this.check(tenant, input, trx);
      return this.versions.create(trx, tenant, input, actor);
    });
  }

  /**
   * A save, checked against what is committed: the check (references, cycles) and the write run
   * in one transaction holding the tenant's calculation-graph lock, so saves of one tenant take
   * turns. Without it, concurrent saves that together close a reference cycle each pass their
   * check against the graph before the others' writes, and all are stored.
   */
  private saveChecked<T>(tenant: string, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return writeTransaction(this.knex, async (trx) => {
      await store.lockCalculationGraph(trx, tenant);
      return work(trx);
    });
  }

  async get(tenant: string, externalId: string): Promise<CalculationDefinition> {
    const found = await store.findCalculation(this.knex, tenant, externalId);
    if (found === undefined) throw notFound(externalId);
    return found;
  }

  /** One page by externalId, like the other lists: `{ calculationDefinitions, total, limit, offset }`. */
  list(tenant: string, page: { limit: number; offset: number }): Promise<store.CalculationDefinitionPage> {
    return store.listCalculations(this.knex, tenant, page);
  }

  async replace(tenant: string, externalId: string, input: CalculationDefinitionInput, actor?: Actor, restoredFrom?: number): Promise<CalculationDefinition> {
    if (input.externalId !== externalId) throw new ProblemError("INVALID_REQUEST", "the body's externalId must be the one in the path");
    return this.saveChecked(tenant, async (trx) => {
      await this.check(tenant, input, trx);
      return this.versions.replace(trx, tenant, externalId, input, actor, restoredFrom);
    });
  }

  async delete(tenant: string, externalId: string, actor?: Actor): Promise<void> {
    await writeTransaction(this.knex, (trx) => this.versions.delete(trx, tenant, externalId, actor));
  }

  /** `GET /calculation-definitions/{externalId}/history`: newest first. */
  history(tenant: string, externalId: string): Promise<HistoryEntry<CalculationDefinition>[]> {
    return this.versions.history(tenant, externalId);
  }

  /** `POST /calculation-definitions/{externalId}/history/{version}/restore`: a new version equal to that one, checked as a save is. */
  async restore(tenant: string, externalId: string, version: number, actor?: Actor): Promise<CalculationDefinition> {
    return this.replace(tenant, externalId, await this.versions.restoreInput(tenant, externalId, version), actor, version);
  }

  /** `POST /calculation-definitions/{externalId}/calculate`. */
  calculate(tenant: string, externalId: string, request: CalculateRequest, now = new Date()): Promise<CalculationResult> {
    return inSpan("calculation", { "calculation.external_id": externalId }, () => this.calculateNow(tenant, externalId, request, now));
  }

  private async calculateNow(tenant: string, externalId: string, request: CalculateRequest, now: Date): Promise<CalculationResult> {
    const deadline = Deadline.after(this.limits.timeoutMs, this.limits.clock);
    const definitions = await store.reachableCalculations(this.knex, tenant, [externalId]);
    return this.run({ tenant, now, deadline, definitions, chain: [] }, externalId, request);
  }

  /**
   * `POST /calculation-definitions/test`: checks and runs an unsaved definition, storing nothing.
   * Its problems, and a run's failure (`CALCULATION_FAILED`, a stored definition it names that is
   * no longer valid), are reported beside whatever could be computed; only a bad request is thrown.
   * Stored definitions it names through EXPRESSION scopes are read as `calculate` reads them.
   */
  async test(tenant: string, input: CalculationDefinitionInput, request: CalculateRequest, now = new Date()): Promise<TestOutcome> {
    const deadline = Deadline.after(this.limits.timeoutMs, this.limits.clock);
    const definitions = await store.reachableCalculations(this.knex, tenant, expressionUses(input));
    const { compiled, problems } = await checkCalculation(input, (externalId) => (externalId === input.externalId ? input : definitions.get(externalId)), this.limits.steps, deadline);
    if (compiled === undefined) return { problems };
    const run: Run = { tenant, now, deadline, definitions, chain: [input.externalId] };
    const environment = { graph: this.graph, timeSeries: this.timeSeries, query: this.limits.query, nested: (id: string, nested: CalculateRequest) => this.run(run, id, nested) };
    try {
      return { ...(await evaluateCalculation(environment, run, compiled, request)), problems: [] };
    } catch (err) {
      if (!(err instanceof ProblemError) || (err.code !== "CALCULATION_FAILED" && err.code !== "INVALID_DEFINITION")) throw err;
      // A nested definition's problems have paths in that definition: its message names it instead.
      const nestedInvalid = err.code === "INVALID_DEFINITION";
      return { problems: (!nestedInvalid && err.errors) || [{ path: "calculation", message: err.message }] };
    }
  }

  private async run(run: Run, externalId: string, request: CalculateRequest): Promise<CalculationResult> {
    if (run.chain.includes(externalId)) throw failed(`reference cycle: ${[...run.chain, externalId].join(" → ")}`);
    if (run.chain.length >= MAX_DEPTH) throw failed(`calculations nest deeper than ${MAX_DEPTH}`);
    const definition = run.definitions.get(externalId);
    if (definition === undefined) throw notFound(externalId);
    if (!definition.active) throw failed(`calculation definition "${externalId}" is not active`);
    // The same limits as on save: a definition stored before they were lowered is refused, not run.
    const { compiled, problems } = await this.cache.get(this.cacheKey(run, definition), () =>
      checkCalculation(definition, (id) => run.definitions.get(id), this.limits.steps, run.deadline),
    );
    if (compiled === undefined) throw new ProblemError("INVALID_DEFINITION", `stored calculation definition "${externalId}" is not valid: ${problems[0]?.message}`, { errors: problems });
    const inner: Run = { ...run, chain: [...run.chain, externalId] };
    const environment = { graph: this.graph, timeSeries: this.timeSeries, query: this.limits.query, nested: (id: string, nested: CalculateRequest) => this.run(inner, id, nested) };
    return evaluateCalculation(environment, inner, compiled, request);
  }

  /** (tenant, externalId, updatedAt), then each definition the check reaches from it, with its updatedAt ("-": there is none). */
  private cacheKey(run: Run, definition: CalculationDefinition): string {
    const reached = new Map<string, string>();
    const walk = (d: CalculationDefinition) => {
      for (const id of expressionUses(d)) {
        if (reached.has(id)) continue;
        const next = run.definitions.get(id);
        reached.set(id, next?.updatedAt ?? "-");
        if (next !== undefined) walk(next);
      }
    };
    walk(definition);
    const references = [...reached].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([id, at]) => `${id}@${at}`);
    return CompiledCache.key(run.tenant, definition.externalId, definition.updatedAt, ...references);
  }
}
