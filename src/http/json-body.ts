import { errorCodes, type FastifyRequest } from "fastify";
import { ProblemError } from "../errors.js";
import { depthFault } from "../input.js";
import { parseJson } from "../json.js";

/**
 * The `application/json` body parser: fastify's own, with {@link parseJson} for `JSON.parse`
 * (docs/decisions/2026-11-23-json-parser-for-escaped-keys.md). The same answers as fastify's: an empty body is
 * FST_ERR_CTP_EMPTY_JSON_BODY, text that is not JSON FST_ERR_CTP_INVALID_JSON_BODY (both 400).
 * Prototype keys are left in, as fastify does with `onProtoPoisoning`/`onConstructorPoisoning`
 * "ignore": the preValidation hook refuses them, naming the key (docs/reference/input-limits.md). A leading
 * byte order mark is allowed, as fastify allows it. A body nesting deeper than MAX_JSON_DEPTH is a
 * 400 naming where (docs/reference/input-limits.md), before any code that recurses reads it.
 */
export function parseJsonBody(_request: FastifyRequest, body: string, done: (err: Error | null, body?: unknown) => void): void {
  if (body.length === 0) {
    done(new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY(), undefined);
    return;
  }
  let parsed: unknown;
  try {
    // A leading byte order mark is dropped, as fastify's own parser (secure-json-parse) does.
    parsed = parseJson(body.charCodeAt(0) === 0xfeff ? body.slice(1) : body);
  } catch {
    done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined);
    return;
  }
  const deep = depthFault(parsed, "body");
  if (deep !== undefined) {
    done(new ProblemError("INVALID_REQUEST", `the request is not valid: ${deep.path} ${deep.message}`, { errors: [deep] }), undefined);
    return;
  }
  done(null, parsed);
}
