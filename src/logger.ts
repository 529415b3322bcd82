import winston from "winston";
import type { LogLevel } from "./config.js";

export type Logger = winston.Logger;

/**
 * JSON lines on stdout, one object per line. Callers pass structured fields; no transport ever
 * hands a header, a token or a secret to the logger.
 */
export function createLogger(level: LogLevel, transports?: winston.transport[]): Logger {
  return winston.createLogger({
    level: level === "silent" ? "error" : level,
    silent: level === "silent",
    format: winston.format.combine(
      winston.format.timestamp(),
      winston.format.errors({ stack: true }),
      winston.format.json(),
    ),
    transports: transports ?? [new winston.transports.Console()],
  });
}
