import winston from "winston";
import type { LogLevel } from "./config.js";
import { currentCorrelation } from "./observe/correlation.js";
import { Redactor } from "./secrets.js";

export type Logger = winston.Logger;

/** winston's npm levels, most severe first; a logger at level L writes L and those before it. */
const LEVELS = ["error", "warn", "info", "http", "verbose", "debug", "silly"] as const;

/** winston's key of the finished line (`info[MESSAGE]`), which the transports write. */
const MESSAGE = Symbol.for("message");

/**
 * The last format: the finished JSON line rewritten by the redactor, so no field, error message or
 * stack trace of any call site can carry a secret setting's value (in clear, JSON-escaped,
 * URL-encoded or base64), a URL's userinfo password or a credential query parameter.
 */
const redacting = (redactor: Redactor) =>
  winston.format((info) => {
    const line = (info as Record<symbol, unknown>)[MESSAGE];
    if (typeof line === "string") (info as Record<symbol, unknown>)[MESSAGE] = redactor.redact(line);
    return info;
  })();

/**
 * The fields of the request or task under way (observe/correlation.ts) on every line written in
 * its course: `requestId`, `traceId`, and a task's engine keys. A field the call passes itself wins.
 */
const correlated = winston.format((info) => {
  const correlation = currentCorrelation();
  if (correlation === undefined) return info;
  const fields: Record<string, unknown> = { requestId: correlation.requestId, traceId: correlation.traceId, ...correlation.fields };
  for (const [key, value] of Object.entries(fields)) if (info[key] === undefined) info[key] = value;
  return info;
})();

/**
 * JSON lines on stdout, one object per line. Callers pass structured fields; no transport ever
 * hands a header, a token or a secret to the logger, and every line passes through a
 * {@link Redactor} that knows the configuration's secrets (`secrets`, see `configSecrets`).
 *
 * A call at a level the logger does not write returns at once. winston would otherwise run it
 * through its stream and its formats (the timestamp, the JSON text) before a transport drops it:
 * about 30 µs of every API request at `LOG_LEVEL=warn`, for the request line nobody reads.
 */
export function createLogger(level: LogLevel, transports?: winston.transport[], secrets: readonly string[] = []): Logger {
  const logger = winston.createLogger({
    level: level === "silent" ? "error" : level,
    silent: level === "silent",
    format: winston.format.combine(
      correlated,
      winston.format.timestamp(),
      winston.format.errors({ stack: true }),
      winston.format.json(),
      redacting(new Redactor(secrets)),
    ),
    transports: transports ?? [new winston.transports.Console()],
  });
  for (const name of LEVELS) {
    const write = logger[name];
    // Called on the logger or on a child of it (`this`, which carries the child's fields); the
    // level is read at each call, so a logger whose level is changed later follows it.
    logger[name] = function (this: Logger | undefined, ...args: Parameters<winston.LeveledLogMethod>) {
      const self = this ?? logger;
      return self.silent || !self.isLevelEnabled(name) ? self : write.apply(self, args);
    } as winston.LeveledLogMethod;
  }
  return logger;
}
