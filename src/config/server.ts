import { integer, oneOf, setting, text, type Group } from "./setting.js";

/**
 * `server`: the REST API, with the workers beside it when an engine is configured. `worker`: the
 * workers alone (`npm run worker`), serving only /health, /ready and /metrics; needs no JWT key.
 */
export type Role = "server" | "worker";

export const LOG_LEVELS = ["error", "warn", "info", "debug", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const serverSettings = {
  port: setting({ env: "PORT", kind: integer(0, 65535), default: 3000, doc: "REST port (`0`: any free port)." }),
  host: setting({
    env: "HOST",
    kind: text,
    default: "0.0.0.0",
    doc: "Interface the REST server binds to.",
    notes: "`npm run demo`, which prints an admin token, binds to `127.0.0.1` unless `HOST` is set.",
  }),
  logLevel: setting({ env: "LOG_LEVEL", kind: oneOf(LOG_LEVELS, { exact: true }), default: "info", doc: "Level of the log (winston's), or `silent`." }),
  shutdownTimeoutMs: setting({
    env: "SHUTDOWN_TIMEOUT_MS",
    kind: integer(0, 3_600_000, "ms"),
    default: 30_000,
    doc: "Longest a graceful shutdown waits for work in flight.",
    notes: "Past it the tasks still in hand are released (see the workers) and the process exits 1.",
  }),
};

export const serverGroup: Group = { title: "Server", settings: serverSettings };
