import type { Secret } from "../secrets.js";
import { integer, setting, text, withDefaults, type Group, type Values } from "./setting.js";

/** The Camunda 7 topics and Zeebe job types the workers subscribe to. */
export const workerTopicSettings = {
  apiRequest: setting({ env: "TOPIC_API_REQUEST", kind: text, default: "api-request", doc: "Camunda 7 topic and Zeebe job type of the API requests." }),
  calculateSeries: setting({
    env: "TOPIC_CALCULATE_SERIES",
    kind: text,
    default: "calculate-series",
    doc: "Camunda 7 topic and Zeebe job type of the series calculations.",
  }),
};

/** What both engines' workers read. */
export const workerDeclarations = {
  maxTasks: setting({ env: "WORKER_MAX_TASKS", kind: integer(1, 1000), default: 10, doc: "Tasks (jobs) in hand at once per worker." }),
  lockDurationMs: setting({
    env: "WORKER_LOCK_DURATION_MS",
    kind: integer(1000, 86_400_000, "ms"),
    default: 30_000,
    doc: "Camunda 7 lock / Zeebe job timeout, each extended while a task runs.",
  }),
  defaultRetries: setting({ env: "WORKER_DEFAULT_RETRIES", kind: integer(0, 100), default: 3, doc: "Retries of a task whose engine gives none." }),
};

export const workersGroup: Group = {
  title: "Workers (both engines)",
  about: "The workers start when an engine is configured: `CAMUNDA_URL` (Camunda 7), `ZEEBE_ADDRESS` or `ZEEBE_GRPC_ADDRESS` (Zeebe), or both.",
  settings: { ...workerTopicSettings, ...workerDeclarations },
};

export type WorkerTopics = Values<typeof workerTopicSettings>;

/** What both engines' workers read. */
export interface WorkerSettings extends Values<typeof workerDeclarations> {
  topics: WorkerTopics;
}

/** Settings given in part (an environment, a test); what is absent takes its default. */
export type GivenWorker<T extends WorkerSettings> = Partial<Omit<T, "topics">> & { topics?: Partial<WorkerTopics> };

/** The worker settings with their defaults: the one place they are applied. */
export function workerSettings(given: GivenWorker<WorkerSettings> = {}): WorkerSettings {
  return { topics: withDefaults(workerTopicSettings, given.topics ?? {}), ...withDefaults(workerDeclarations, given) };
}

/** An authentication strategy's settings by name: those it needs and those it may take. */
export interface StrategySettings {
  needs: Record<string, unknown>;
  takes?: Record<string, unknown>;
}

/**
 * The strategy `chosen` under `setting`, or else the one whose settings are given (else `none`).
 * A strategy chosen without the settings it needs, settings of another strategy beside it, or
 * settings of two strategies and no choice, are problems naming the settings.
 */
export function strategyOf<S extends string>(problems: string[], setting: string, chosen: S | undefined, none: S, strategies: Partial<Record<S, StrategySettings>>): S | undefined {
  const names = (s: StrategySettings) => [...Object.entries(s.needs), ...Object.entries(s.takes ?? {})].filter(([, v]) => v !== undefined).map(([n]) => n);
  const entries = Object.entries(strategies) as [S, StrategySettings][];
  const given = entries.filter(([, s]) => names(s).length > 0);
  let strategy = chosen;
  if (strategy === undefined) {
    if (given.length > 1) {
      problems.push(`${given.map(([s, settings]) => `${names(settings).join(", ")} (${s})`).join(" and ")} are settings of different authentication strategies: set ${setting} and only its settings`);
      return undefined;
    }
    strategy = given[0]?.[0] ?? none;
  } else {
    for (const [other, settings] of given) {
      if (other !== strategy) problems.push(`${setting}=${strategy} does not use ${names(settings).join(", ")} (${other}): remove it, or choose ${other}`);
    }
  }
  const needs = strategies[strategy]?.needs ?? {};
  const missing = Object.keys(needs).filter((n) => needs[n] === undefined);
  if (missing.length > 0) {
    const all = Object.keys(needs);
    problems.push(chosen === undefined ? `${all.join(", ")} go together (${strategy}): set all of them, or none` : `${setting}=${strategy} needs ${missing.join(", ")}`);
    return undefined;
  }
  return strategy;
}

/** OAuth 2.0 client credentials: a token asked of `url` with the client's id and secret, kept until shortly before it expires. */
export interface ClientCredentials {
  /** The token endpoint. */
  url: string;
  clientId: string;
  clientSecret: Secret;
  /** The `audience` parameter of the token request; absent: none sent (Zeebe: the SDK's default, `zeebe.camunda.io`). */
  audience?: string;
  /** The `scope` parameter of the token request; absent: none sent. */
  scope?: string;
}

export function clientCredentials(url: string, clientId: string, clientSecret: Secret, audience: string | undefined, scope: string | undefined): ClientCredentials {
  return { url, clientId, clientSecret, ...(audience !== undefined ? { audience } : {}), ...(scope !== undefined ? { scope } : {}) };
}
