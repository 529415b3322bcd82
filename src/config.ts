import { createPublicKey, type KeyObject } from "node:crypto";
import { accessSync, constants, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { z } from "zod";
import { EXPRESSION_LIMIT_CEILINGS } from "./calculation/expression-size.js";
import { DEFAULT_DATABASE_TIMEOUTS, type DatabaseTimeouts } from "./db/timeouts.js";

/**
 * Everything the server and the workers read from the environment, validated once at start-up.
 * Nothing else in the code base reads `process.env`.
 */
export interface Config {
  /**
   * `server`: the REST API, with the workers beside it when an engine is configured. `worker`: the
   * workers alone (`npm run worker`), serving only /health, /ready and /metrics; needs no JWT key.
   */
  role: Role;
  /** REST port. Default 3000. */
  port: number;
  /** Interface the REST server binds to. Default `0.0.0.0`. */
  host: string;
  /** PostgreSQL connection string; absent means the embedded PostgreSQL (PGlite). */
  databaseUrl: string | undefined;
  /** Where the embedded database keeps its files; `memory://` keeps it in memory. Default `./data`. */
  dataDir: string;
  /** Size of the PostgreSQL connection pool. Default 10. */
  databasePoolSize: number;
  auth: AuthConfig;
  /** IANA zone for event date ranges and buckets. Default `Europe/Brussels`. */
  defaultTimeZone: string;
  /** Largest accepted request body in bytes. Default 10 MiB. */
  bodyLimitBytes: number;
  /** Longest a graph query statement may run. Default 5000 ms. */
  queryTimeoutMs: number;
  /** Most rows a graph query may return. Default 10000. */
  queryMaxRows: number;
  /** Longest a transform may run, sub-queries included. Default 2000 ms. */
  transformTimeoutMs: number;
  /** Child processes that evaluate transforms (TRANSFORM_PROCESSES). Default: the number of cores, at least 2. */
  transformProcesses: number;
  /** Heap ceiling of one transform process, MiB (TRANSFORM_MEMORY_MB). Default 256. */
  transformMemoryMb: number;
  /** Largest transform result, bytes of its JSON text (TRANSFORM_MAX_RESULT_BYTES). Default 10 MiB. */
  transformMaxResultBytes: number;
  /** Transforms waiting for a process before new ones get 503 (TRANSFORM_MAX_QUEUE). Default 1000. */
  transformMaxQueue: number;
  /** Longest one calculation may run, nested ones included. Default 10000 ms. */
  calculationTimeoutMs: number;
  /** Most steps of one CALCULATION definition, on save and at run time. Default 1000. */
  calculationMaxSteps: number;
  /** Most characters of one calculation expression. Default 1000, at most 2500 (longer could overflow mathjs's stack). */
  expressionMaxLength: number;
  /** Deepest nesting of one calculation expression (parentheses, calls, unary, power, conditional operators). Default 50, at most 100. */
  expressionMaxDepth: number;
  /** Longest a graceful shutdown waits for work in flight. Default 30000 ms. */
  shutdownTimeoutMs: number;
  /** winston level, or `silent`. Default `info`. */
  logLevel: LogLevel;
  /** Camunda 7 REST base; absent means no Camunda 7 workers. */
  camundaUrl: string | undefined;
  /** Zeebe gateway `host:port`; absent means no Zeebe workers. */
  zeebeAddress: string | undefined;
  /** Worker settings (both engines). */
  workers: WorkerSettings;
  /** TLS to the Zeebe gateway (ZEEBE_TLS). Default false: plaintext. */
  zeebeTls: boolean;
  /** A PEM file of the certificate authority the Zeebe gateway's TLS certificate comes from (CAMUNDA_CUSTOM_ROOT_CERT_PATH); default the public CAs. */
  zeebeRootCertPath: string | undefined;
  /** OAuth client credentials for Zeebe (ZEEBE_CLIENT_ID, ZEEBE_CLIENT_SECRET, ZEEBE_OAUTH_URL, ZEEBE_TOKEN_AUDIENCE). */
  zeebeOAuth: { url: string; clientId: string; clientSecret: string; audience?: string } | undefined;
  /** Bounds of the database connections (DATABASE_*_TIMEOUT_MS, DATABASE_KEEPALIVE_MS); see {@link DatabaseTimeouts}. */
  databaseTimeouts: DatabaseTimeouts;
}

export interface WorkerSettings {
  /** TOPIC_API_REQUEST, default `api-request` (the Zeebe job type too). */
  apiRequestTopic: string;
  /** TOPIC_CALCULATE_SERIES, default `calculate-series`. */
  calculateSeriesTopic: string;
  /** WORKER_MAX_TASKS: tasks (jobs) run at once per worker. Default 10. */
  maxTasks: number;
  /** WORKER_LOCK_DURATION_MS: Camunda 7 lock / Zeebe job timeout, extended while running (Camunda 7). Default 30000. */
  lockDurationMs: number;
  /** CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: long-polling wait. Default 10000. */
  asyncResponseTimeoutMs: number;
  /** WORKER_DEFAULT_RETRIES: retries of a task that has none yet. Default 3. */
  defaultRetries: number;
  /** CAMUNDA_WORKER_ID: default `<host>-<pid>-<random>`. */
  workerId: string | undefined;
}

export type Role = "server" | "worker";

export type LogLevel = "error" | "warn" | "info" | "debug" | "silent";

export type AuthConfig =
  | { disabled: true; userClaim: string }
  | {
      disabled: false;
      /** HS256 shared secret, or the public key (RS256 for RSA keys, ES256 for EC keys). */
      key: { kind: "secret"; secret: Uint8Array } | { kind: "public"; key: KeyObject; algorithm: "RS256" | "ES256" };
      /** Claim holding the user id. Default `sub`. */
      userClaim: string;
      issuer: string | undefined;
      audience: string | undefined;
      /** Claim naming the tenants a token may act in: an array of names, or `"*"` (JWT_TENANTS_CLAIM). Default `tenants`. */
      tenantsClaim: string;
      /** Leeway for `exp`, `nbf` and `iat`, in seconds (JWT_CLOCK_SKEW_SECONDS). Default 5. */
      clockSkewSeconds: number;
    };

/** Thrown when the environment holds a value the service cannot start with. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

const integer = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `${name} must be a whole number`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `${name} must be between ${min} and ${max}`);

const optionalText = z
  .string()
  .transform((s) => s.trim())
  .transform((s) => (s === "" ? undefined : s))
  .optional();

const booleanFlag = (name: string) =>
  z
    .string()
    .transform((s) => s.trim().toLowerCase())
    .refine((s) => ["true", "false", "1", "0", ""].includes(s), `${name} must be true or false`)
    .transform((s) => s === "true" || s === "1");

function isUrl(value: string, protocols: string[]): boolean {
  try {
    return protocols.includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

function isReadableFile(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const envSchema = z.object({
  PORT: integer("PORT", 0, 65535).optional(),
  HOST: optionalText,
  DATABASE_URL: optionalText.refine(
    (v) => v === undefined || isUrl(v, ["postgres:", "postgresql:"]),
    "DATABASE_URL must be a URL like postgres://user@host:5432/database",
  ),
  DATA_DIR: optionalText,
  DATABASE_POOL_SIZE: integer("DATABASE_POOL_SIZE", 1, 200).optional(),
  DEFAULT_TIME_ZONE: optionalText.refine(
    (v) => v === undefined || isTimeZone(v),
    "DEFAULT_TIME_ZONE must be an IANA time zone such as Europe/Brussels",
  ),
  BODY_LIMIT_BYTES: integer("BODY_LIMIT_BYTES", 1024, 1024 * 1024 * 1024).optional(),
  QUERY_TIMEOUT_MS: integer("QUERY_TIMEOUT_MS", 1, 3_600_000).optional(),
  QUERY_MAX_ROWS: integer("QUERY_MAX_ROWS", 1, 10_000_000).optional(),
  TRANSFORM_TIMEOUT_MS: integer("TRANSFORM_TIMEOUT_MS", 1, 3_600_000).optional(),
  TRANSFORM_PROCESSES: integer("TRANSFORM_PROCESSES", 1, 256).optional(),
  TRANSFORM_MEMORY_MB: integer("TRANSFORM_MEMORY_MB", 16, 65_536).optional(),
  TRANSFORM_MAX_RESULT_BYTES: integer("TRANSFORM_MAX_RESULT_BYTES", 1024, 1024 * 1024 * 1024).optional(),
  TRANSFORM_MAX_QUEUE: integer("TRANSFORM_MAX_QUEUE", 0, 1_000_000).optional(),
  CALCULATION_TIMEOUT_MS: integer("CALCULATION_TIMEOUT_MS", 1, 3_600_000).optional(),
  CALCULATION_MAX_STEPS: integer("CALCULATION_MAX_STEPS", 1, 100_000).optional(),
  // Above these ceilings an expression that passes the limits could overflow the stack.
  EXPRESSION_MAX_LENGTH: integer("EXPRESSION_MAX_LENGTH", 1, EXPRESSION_LIMIT_CEILINGS.maxLength).optional(),
  EXPRESSION_MAX_DEPTH: integer("EXPRESSION_MAX_DEPTH", 1, EXPRESSION_LIMIT_CEILINGS.maxDepth).optional(),
  SHUTDOWN_TIMEOUT_MS: integer("SHUTDOWN_TIMEOUT_MS", 0, 3_600_000).optional(),
  LOG_LEVEL: z.enum(["error", "warn", "info", "debug", "silent"], "LOG_LEVEL must be one of error, warn, info, debug, silent").optional(),
  CAMUNDA_URL: optionalText.refine(
    (v) => v === undefined || isUrl(v, ["http:", "https:"]),
    "CAMUNDA_URL must be an http(s) URL like http://localhost:8080/engine-rest",
  ),
  ZEEBE_TLS: booleanFlag("ZEEBE_TLS").optional(),
  CAMUNDA_CUSTOM_ROOT_CERT_PATH: optionalText.refine((v) => v === undefined || isReadableFile(v), "CAMUNDA_CUSTOM_ROOT_CERT_PATH must be a readable PEM file"),
  TOPIC_API_REQUEST: optionalText,
  TOPIC_CALCULATE_SERIES: optionalText,
  WORKER_MAX_TASKS: integer("WORKER_MAX_TASKS", 1, 1000).optional(),
  WORKER_LOCK_DURATION_MS: integer("WORKER_LOCK_DURATION_MS", 1000, 86_400_000).optional(),
  CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: integer("CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS", 0, 600_000).optional(),
  WORKER_DEFAULT_RETRIES: integer("WORKER_DEFAULT_RETRIES", 0, 100).optional(),
  CAMUNDA_WORKER_ID: optionalText,
  ZEEBE_CLIENT_ID: optionalText,
  ZEEBE_CLIENT_SECRET: optionalText,
  ZEEBE_OAUTH_URL: optionalText.refine((v) => v === undefined || isUrl(v, ["http:", "https:"]), "ZEEBE_OAUTH_URL must be an http(s) URL"),
  ZEEBE_TOKEN_AUDIENCE: optionalText,
  // Database faults: bounds of every connection (src/db/timeouts.ts).
  DATABASE_CONNECT_TIMEOUT_MS: integer("DATABASE_CONNECT_TIMEOUT_MS", 100, 600_000).optional(),
  DATABASE_ACQUIRE_TIMEOUT_MS: integer("DATABASE_ACQUIRE_TIMEOUT_MS", 100, 600_000).optional(),
  DATABASE_STATEMENT_TIMEOUT_MS: integer("DATABASE_STATEMENT_TIMEOUT_MS", 100, 3_600_000).optional(),
  DATABASE_IDLE_TIMEOUT_MS: integer("DATABASE_IDLE_TIMEOUT_MS", 100, 3_600_000).optional(),
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: integer("DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS", 0, 3_600_000).optional(),
  DATABASE_KEEPALIVE_MS: integer("DATABASE_KEEPALIVE_MS", 0, 3_600_000).optional(),
  DATABASE_PROBE_TIMEOUT_MS: integer("DATABASE_PROBE_TIMEOUT_MS", 50, 900).optional(),
  DATABASE_STARTUP_TIMEOUT_MS: integer("DATABASE_STARTUP_TIMEOUT_MS", 0, 3_600_000).optional(),
  ZEEBE_ADDRESS: optionalText.refine(
    (v) => v === undefined || /^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/.test(v),
    "ZEEBE_ADDRESS must be host:port, like localhost:26500",
  ),
});

const authSchema = z.object({
  JWT_SECRET: optionalText,
  JWT_PUBLIC_KEY: optionalText,
  JWT_USER_CLAIM: optionalText,
  JWT_ISSUER: optionalText,
  JWT_AUDIENCE: optionalText,
  JWT_TENANTS_CLAIM: optionalText,
  JWT_CLOCK_SKEW_SECONDS: integer("JWT_CLOCK_SKEW_SECONDS", 0, 300).optional(),
  AUTH_DISABLED: booleanFlag("AUTH_DISABLED").optional(),
});

type Env = Record<string, string | undefined>;

/** The process environment; the one place that reads it. */
export function processEnvironment(): Env {
  return process.env;
}

/** Reads and checks the environment; every problem is reported at once in a {@link ConfigError}. */
export function loadConfig(env: Env = processEnvironment(), role: Role = "server"): Config {
  const problems: string[] = [];
  const parsed = envSchema.safeParse(env);
  const parsedAuth = authSchema.safeParse(env);
  for (const result of [parsed, parsedAuth]) {
    if (!result.success) problems.push(...result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`));
  }
  // The workers alone serve no API, so they need no key to check tokens with.
  const auth: AuthConfig | undefined =
    role === "worker" ? { disabled: true, userClaim: env.JWT_USER_CLAIM ?? "sub" } : parsedAuth.success ? readAuth(parsedAuth.data, problems) : undefined;
  if (parsed.success && role === "worker" && parsed.data.CAMUNDA_URL === undefined && parsed.data.ZEEBE_ADDRESS === undefined) {
    problems.push("the worker needs an engine: set CAMUNDA_URL (Camunda 7), ZEEBE_ADDRESS (Zeebe) or both");
  }
  if (parsed.success) {
    const oauth = [parsed.data.ZEEBE_CLIENT_ID, parsed.data.ZEEBE_CLIENT_SECRET, parsed.data.ZEEBE_OAUTH_URL];
    if (oauth.some((v) => v !== undefined) && oauth.some((v) => v === undefined)) {
      problems.push("ZEEBE_CLIENT_ID, ZEEBE_CLIENT_SECRET and ZEEBE_OAUTH_URL go together: set all three for OAuth, or none");
    }
    // A graph query is a database statement: its own time-out cannot be the longer one.
    const graphTimeout = parsed.data.QUERY_TIMEOUT_MS ?? 5000;
    const statementTimeout = parsed.data.DATABASE_STATEMENT_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.statementMs;
    if (graphTimeout > statementTimeout) {
      problems.push(`QUERY_TIMEOUT_MS (${graphTimeout}) must not be longer than DATABASE_STATEMENT_TIMEOUT_MS (${statementTimeout})`);
    }
    // A shutdown lets the Camunda 7 long poll in progress finish: it must fit in the shutdown's time.
    const longPoll = parsed.data.CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS ?? 10_000;
    const shutdown = parsed.data.SHUTDOWN_TIMEOUT_MS ?? 30_000;
    if (parsed.data.CAMUNDA_URL !== undefined && longPoll >= shutdown) {
      problems.push(`CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS (${longPoll}) must be shorter than SHUTDOWN_TIMEOUT_MS (${shutdown}): a shutdown waits for the long poll in progress`);
    }
  }
  if (!parsed.success || auth === undefined || problems.length > 0) throw new ConfigError(problems);
  const e = parsed.data;
  return {
    role,
    port: e.PORT ?? 3000,
    host: e.HOST ?? "0.0.0.0",
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR ?? "./data",
    databasePoolSize: e.DATABASE_POOL_SIZE ?? 10,
    auth,
    defaultTimeZone: e.DEFAULT_TIME_ZONE ?? "Europe/Brussels",
    bodyLimitBytes: e.BODY_LIMIT_BYTES ?? 10 * 1024 * 1024,
    queryTimeoutMs: e.QUERY_TIMEOUT_MS ?? 5000,
    queryMaxRows: e.QUERY_MAX_ROWS ?? 10_000,
    transformTimeoutMs: e.TRANSFORM_TIMEOUT_MS ?? 2000,
    transformProcesses: e.TRANSFORM_PROCESSES ?? Math.max(2, availableParallelism()),
    transformMemoryMb: e.TRANSFORM_MEMORY_MB ?? 256,
    transformMaxResultBytes: e.TRANSFORM_MAX_RESULT_BYTES ?? 10 * 1024 * 1024,
    transformMaxQueue: e.TRANSFORM_MAX_QUEUE ?? 1000,
    calculationTimeoutMs: e.CALCULATION_TIMEOUT_MS ?? 10_000,
    calculationMaxSteps: e.CALCULATION_MAX_STEPS ?? 1000,
    expressionMaxLength: e.EXPRESSION_MAX_LENGTH ?? 1000,
    expressionMaxDepth: e.EXPRESSION_MAX_DEPTH ?? 50,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS ?? 30_000,
    logLevel: e.LOG_LEVEL ?? "info",
    camundaUrl: e.CAMUNDA_URL,
    zeebeAddress: e.ZEEBE_ADDRESS,
    workers: {
      apiRequestTopic: e.TOPIC_API_REQUEST ?? "api-request",
      calculateSeriesTopic: e.TOPIC_CALCULATE_SERIES ?? "calculate-series",
      maxTasks: e.WORKER_MAX_TASKS ?? 10,
      lockDurationMs: e.WORKER_LOCK_DURATION_MS ?? 30_000,
      asyncResponseTimeoutMs: e.CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS ?? 10_000,
      defaultRetries: e.WORKER_DEFAULT_RETRIES ?? 3,
      workerId: e.CAMUNDA_WORKER_ID,
    },
    zeebeTls: e.ZEEBE_TLS ?? false,
    zeebeRootCertPath: e.CAMUNDA_CUSTOM_ROOT_CERT_PATH,
    zeebeOAuth:
      e.ZEEBE_CLIENT_ID !== undefined && e.ZEEBE_CLIENT_SECRET !== undefined && e.ZEEBE_OAUTH_URL !== undefined
        ? { url: e.ZEEBE_OAUTH_URL, clientId: e.ZEEBE_CLIENT_ID, clientSecret: e.ZEEBE_CLIENT_SECRET, ...(e.ZEEBE_TOKEN_AUDIENCE !== undefined ? { audience: e.ZEEBE_TOKEN_AUDIENCE } : {}) }
        : undefined,
    databaseTimeouts: {
      connectMs: e.DATABASE_CONNECT_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.connectMs,
      acquireMs: e.DATABASE_ACQUIRE_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.acquireMs,
      statementMs: e.DATABASE_STATEMENT_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.statementMs,
      idleMs: e.DATABASE_IDLE_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.idleMs,
      idleInTransactionMs: e.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.idleInTransactionMs,
      keepAliveMs: e.DATABASE_KEEPALIVE_MS ?? DEFAULT_DATABASE_TIMEOUTS.keepAliveMs,
      probeMs: e.DATABASE_PROBE_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.probeMs,
      startupMs: e.DATABASE_STARTUP_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.startupMs,
    },
  };
}

function readAuth(e: z.infer<typeof authSchema>, problems: string[]): AuthConfig | undefined {
  const userClaim = e.JWT_USER_CLAIM ?? "sub";
  if (e.AUTH_DISABLED === true) return { disabled: true, userClaim };
  if (e.JWT_SECRET !== undefined && e.JWT_PUBLIC_KEY !== undefined) {
    problems.push("JWT_SECRET and JWT_PUBLIC_KEY are both set: choose one");
    return undefined;
  }
  const common = {
    disabled: false as const,
    userClaim,
    issuer: e.JWT_ISSUER,
    audience: e.JWT_AUDIENCE,
    tenantsClaim: e.JWT_TENANTS_CLAIM ?? "tenants",
    clockSkewSeconds: e.JWT_CLOCK_SKEW_SECONDS ?? 5,
  };
  if (e.JWT_SECRET !== undefined) {
    if (Buffer.byteLength(e.JWT_SECRET) < 32) {
      problems.push("JWT_SECRET must be at least 32 bytes long (HS256 needs a 256-bit key)");
      return undefined;
    }
    return { ...common, key: { kind: "secret", secret: new TextEncoder().encode(e.JWT_SECRET) } };
  }
  if (e.JWT_PUBLIC_KEY !== undefined) {
    let key: KeyObject;
    try {
      // A PEM passed through an environment variable often has its line breaks escaped.
      key = createPublicKey(e.JWT_PUBLIC_KEY.replace(/\\n/g, "\n"));
    } catch {
      problems.push("JWT_PUBLIC_KEY is not a PEM public key");
      return undefined;
    }
    if (key.asymmetricKeyType === "rsa") return { ...common, key: { kind: "public", key, algorithm: "RS256" } };
    if (key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1") {
      return { ...common, key: { kind: "public", key, algorithm: "ES256" } };
    }
    problems.push("JWT_PUBLIC_KEY must be an RSA key (RS256) or a P-256 EC key (ES256)");
    return undefined;
  }
  problems.push("neither JWT_SECRET nor JWT_PUBLIC_KEY is set; set one, or AUTH_DISABLED=true for development only");
  return undefined;
}
