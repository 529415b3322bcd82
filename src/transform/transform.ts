import jsonata from "jsonata";
import { isDatabaseError, ProblemError, toProblemError, type ProblemDetail } from "../errors.js";
import { compileProjection, type Projection } from "./projection.js";
import type { TransformInput, TransformLimits } from "./protocol.js";
import { resultObjects } from "./result-objects.js";
import { positionAt, rewriteTransform, type ResultUse, type Rewritten } from "./rewrite.js";

/** The bound function `$events(itemId, options)`. */
export const EVENTS_FUNCTION = "events";

export const DEFAULT_TRANSFORM_LIMITS: Omit<TransformLimits, "timeoutMs"> = { maxDepth: 500, maxSequence: 1_000_000 };

/** A transform compiled once; evaluated many times with per-request bindings, never changed. */
export interface CompiledTransform {
  text: string;
  expression: jsonata.Expression;
  rewritten: Rewritten;
  params: string[];
  results: ResultUse[];
  limits: TransformLimits;
  /** The text as a pure projection the service evaluates itself (projection.ts); undefined for any other text. */
  projection?: Projection;
}

interface JsonataError {
  code?: string;
  position?: number;
  token?: string;
  message?: string;
}

/** JSONata's codes for a string, quoted name, comment or regular expression left open. */
const UNCLOSED = new Set(["S0101", "S0105", "S0106", "S0302"]);

/** Where in the text as written JSONata's error is: the start of the token it names. */
function errorOffset(rewritten: Rewritten, err: JsonataError): number | undefined {
  // JSONata reports the offset just past the token; the token's start is what a reader looks for.
  let offset = err.position;
  if (offset !== undefined && err.token !== undefined && rewritten.source.slice(offset - err.token.length, offset) === err.token) offset -= err.token.length;
  if (err.code !== undefined && UNCLOSED.has(err.code) && rewritten.lexicalErrorStart !== undefined) return rewritten.lexicalErrorStart;
  return typeof offset === "number" ? rewritten.originalOffset(Math.max(0, offset)) : undefined;
}

function detail(text: string, rewritten: Rewritten, err: JsonataError, fallback: string): ProblemDetail {
  const original = errorOffset(rewritten, err);
  const position = original !== undefined ? positionAt(text, original) : undefined;
  return {
    path: "transform",
    message: err.message ?? fallback,
    ...(position !== undefined ? { line: position.line, column: position.column } : {}),
    ...(err.code !== undefined ? { jsonataCode: err.code } : {}),
  };
}

/**
 * Compiles a transform (JSONata with `${param}` and `result(?label) { … }`). Returns every problem
 * found, each with its line and column in the text as written; no expression when there are any.
 */
export function compileTransform(text: string, limits: TransformLimits): { transform?: CompiledTransform; problems: ProblemDetail[] } {
  const rewritten = rewriteTransform(text);
  const problems: ProblemDetail[] = rewritten.problems.map((p) => {
    const position = positionAt(text, p.offset);
    return { path: "transform", message: p.message, line: position.line, column: position.column };
  });
  let expression: jsonata.Expression;
  try {
    // Without `recover`, JSONata stops at the first error but explains it; what follows an error
    // in its recovery mode is mostly that same error again.
    expression = jsonata(rewritten.source, { timeout: limits.timeoutMs, stack: limits.maxDepth, sequence: limits.maxSequence } as never);
  } catch (err) {
    // A malformed result(?label) { … } is left as it is, which JSONata cannot read either: its
    // error at or after that construct is the one already reported (one extra comma, one problem).
    const malformed = Math.min(...rewritten.problems.map((p) => p.construct ?? Infinity));
    const at = errorOffset(rewritten, err as JsonataError);
    if (at === undefined || at < malformed) problems.push(detail(text, rewritten, err as JsonataError, "the transform does not parse"));
    return { problems };
  }
  if (problems.length > 0) return { problems };
  const projection = compileProjection(text);
  return {
    transform: {
      ...(projection !== undefined ? { projection } : {}),
      text,
      expression,
      rewritten,
      params: [...new Set(rewritten.params.map((p) => p.name))],
      results: rewritten.results,
      limits,
    },
    problems,
  };
}

/**
 * The TRANSFORM_MAX_RESULT_BYTES problem of a result's JSON text, if it is too long. A UTF-16 unit
 * is at most 3 UTF-8 bytes: most results need no byte count.
 */
export function resultSizeProblem(json: string | undefined, maxResultBytes: number): { code: "TRANSFORM_FAILED"; message: string; errors: ProblemDetail[] } | undefined {
  if (json === undefined || json.length * 3 <= maxResultBytes || Buffer.byteLength(json) <= maxResultBytes) return undefined;
  const message = `the transform's result is larger than ${maxResultBytes} bytes (TRANSFORM_MAX_RESULT_BYTES)`;
  return { code: "TRANSFORM_FAILED", message, errors: [{ path: "transform", message, limit: "TRANSFORM_MAX_RESULT_BYTES" }] };
}

/**
 * Evaluates a compiled transform in the calling process: the service runs it through
 * {@link TransformPool}, in one of the pool's child processes (evaluator.ts). JSONata's own
 * guardrails stop deep recursion and long sequences at the next step; with a `timeoutMs`, a
 * wall-clock timer also covers awaited sub-queries. Any failure is a 422 TRANSFORM_FAILED naming
 * the reason and, where JSONata gives one, the position.
 */
export async function evaluateTransform(transform: CompiledTransform, input: TransformInput): Promise<unknown> {
  const timelines = input.timelines ?? new Map<string, Map<string, unknown>>();
  const bindings: Record<string, unknown> = {
    ...input.bindings,
    [transform.rewritten.names.result]: (label: string, fields: [string, string][]) => resultObjects(input.queryOutput[label] ?? [], fields, timelines),
  };
  if (input.events !== undefined) bindings[EVENTS_FUNCTION] = input.events;
  for (const name of transform.params) bindings[transform.rewritten.names.param(name)] = input.params[name];

  let timer: NodeJS.Timeout | undefined;
  const evaluation = transform.expression.evaluate(input.queryOutput, bindings);
  const deadline =
    transform.limits.timeoutMs > 0
      ? new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new ProblemError("TRANSFORM_FAILED", `the transform ran longer than ${transform.limits.timeoutMs} ms and was stopped`)),
            transform.limits.timeoutMs,
          );
        })
      : undefined;
  try {
    return await (deadline === undefined ? evaluation : Promise.race([evaluation, deadline]));
  } catch (err) {
    if (err instanceof ProblemError) throw err;
    // A failed `$events()` statement is no fault of the transform, and its message may quote SQL.
    if (isDatabaseError(err)) throw toProblemError(err);
    const e = err as JsonataError;
    const d = detail(transform.text, transform.rewritten, e, err instanceof Error ? err.message : "the transform failed");
    const where = d.line !== undefined ? ` at line ${d.line}, column ${d.column}` : "";
    throw new ProblemError("TRANSFORM_FAILED", `the transform failed${where}: ${d.message}`, { errors: [d], cause: err });
  } finally {
    clearTimeout(timer);
  }
}
