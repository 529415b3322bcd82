/**
 * The one error type the domain throws. It carries a contract code (shared/CONTRACT.md §7);
 * each transport maps it: HTTP to problem+json, Camunda 7 and Zeebe to a BPMN error (4xx codes)
 * or a retried failure (everything else).
 *
 * The codes are exactly those of §7, plus INTERNAL_ERROR for a fault of the service itself (a bug),
 * which no client can cause on purpose. A situation §7 has no code of its own for takes the nearest
 * code with the fitting HTTP status: an unknown route is `404 INVALID_REQUEST`, a body over the size
 * limit `413 INVALID_REQUEST`.
 */
export const problemCodes = {
  MISSING_TENANT: { status: 400, title: "Missing tenant" },
  UNAUTHENTICATED: { status: 401, title: "Unauthenticated" },
  FORBIDDEN: { status: 403, title: "Forbidden" },
  API_DEFINITION_NOT_FOUND: { status: 404, title: "API definition not found" },
  API_DEFINITION_INACTIVE: { status: 409, title: "API definition inactive" },
  INVALID_QUERY_PARAMETERS: { status: 400, title: "Invalid query parameters" },
  INVALID_DEFINITION: { status: 400, title: "Invalid definition" },
  INVALID_REQUEST: { status: 400, title: "Invalid request" },
  CALCULATION_DEFINITION_NOT_FOUND: { status: 404, title: "Calculation definition not found" },
  TRANSFORM_FAILED: { status: 422, title: "Transform failed" },
  CALCULATION_FAILED: { status: 422, title: "Calculation failed" },
  UNAVAILABLE: { status: 503, title: "Service unavailable" },
  INTERNAL_ERROR: { status: 500, title: "Internal error" },
} as const;

export type ProblemCode = keyof typeof problemCodes;

/** One entry of a validation problem list, with the place it concerns where there is one. */
export interface ProblemDetail {
  message: string;
  path?: string;
  line?: number;
  column?: number;
  [key: string]: unknown;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ProblemCode;
  detail: string;
  errors?: ProblemDetail[];
  /** The request's id (its `X-Request-Id`), added where the answer is sent. */
  requestId?: string;
}

export class ProblemError extends Error {
  readonly status: number;

  constructor(
    readonly code: ProblemCode,
    detail: string,
    readonly options: { status?: number; errors?: ProblemDetail[]; cause?: unknown } = {},
  ) {
    super(detail, { cause: options.cause });
    this.name = "ProblemError";
    this.status = options.status ?? problemCodes[code].status;
  }

  get errors(): ProblemDetail[] | undefined {
    return this.options.errors;
  }

  /** A 4xx problem lies in the request or a definition: retrying the same work cannot help. */
  get isClientProblem(): boolean {
    return this.status >= 400 && this.status < 500;
  }

  toProblem(): Problem {
    const problem: Problem = {
      type: `urn:problem:${this.code.toLowerCase().replace(/_/g, "-")}`,
      title: problemCodes[this.code].title,
      status: this.status,
      code: this.code,
      detail: this.message,
    };
    if (this.errors !== undefined) problem.errors = this.errors;
    return problem;
  }
}

/** SQLSTATE classes and driver errors that mean "the database is not reachable right now". */
const unreachableSqlStates = new Set(["57P01", "57P02", "57P03", "53300", "53400"]);
/** query_canceled: a statement ran past DATABASE_STATEMENT_TIMEOUT_MS (graph queries report their own time-out first). */
const STATEMENT_CANCELED = "57014";
/** A serialization failure and a deadlock: the database rolled a transaction back so that a concurrent one could go on. */
const writeConflictSqlStates = new Set(["40001", "40P01"]);
const passingNodeCodes = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN"]);

function errorCode(err: unknown): string | undefined {
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "string") return err.code;
  return undefined;
}

/** A request that is not of the documented shape, naming the place (`errors[0].path`). */
export function invalidRequest(message: string, path: string, status = 400): ProblemError {
  return new ProblemError("INVALID_REQUEST", message, { status, errors: [{ path, message }] });
}

/** True for a unique violation (23505): a row with the same key exists or was written concurrently. */
export function isUniqueViolation(err: unknown): boolean {
  return errorCode(err) === "23505";
}

/** True for a deadlock (40P01) or a serialization failure (40001): running the whole transaction again is safe. */
export function isWriteConflict(err: unknown): boolean {
  const code = errorCode(err);
  return code !== undefined && writeConflictSqlStates.has(code);
}

/**
 * True for faults that pass by themselves: an unreachable or restarting database, a lost connection,
 * a conflict between concurrent writes.
 */
export function isPassingFault(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (isWriteConflict(err)) return true;
  const code = errorCode(err);
  if (code !== undefined && (passingNodeCodes.has(code) || unreachableSqlStates.has(code) || code === STATEMENT_CANCELED || code.startsWith("08"))) return true;
  if (err.name === "KnexTimeoutError") return true;
  return /Connection terminated|connection is closed|Client was closed|not queryable|aborted|Unable to acquire a connection|PGlite is closed/i.test(
    err.message,
  );
}

/**
 * The text of anything thrown, for a log line or a message: an error's message, or its code where
 * the message is empty (a refused connection to every address of a host), else its name.
 */
export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err.message !== "") return err.message;
  const code = errorCode(err);
  const inner = err instanceof AggregateError ? err.errors.map(errorText).filter((m) => m !== "") : [];
  return inner[0] ?? code ?? err.name;
}

/** The detail of a write that still conflicted after its retries (a deadlock or serialization failure). */
export const WRITE_CONFLICT_DETAIL = "the database detected a conflict between concurrent writes; retry";

/** Turns anything thrown into a {@link ProblemError}: kept as is, a passing fault, or an internal error. */
export function toProblemError(err: unknown): ProblemError {
  if (err instanceof ProblemError) return err;
  if (isWriteConflict(err)) return new ProblemError("UNAVAILABLE", WRITE_CONFLICT_DETAIL, { cause: err });
  if (errorCode(err) === STATEMENT_CANCELED || (err instanceof Error && err.name === "DatabaseTimeoutError")) {
    return new ProblemError("UNAVAILABLE", "the database did not answer in time; retry later", { cause: err });
  }
  if (isPassingFault(err)) {
    return new ProblemError("UNAVAILABLE", "the database is not reachable at the moment; retry later", { cause: err });
  }
  return new ProblemError("INTERNAL_ERROR", "an unexpected error occurred", { cause: err });
}

/**
 * True for an error raised by the database or its driver (it carries PostgreSQL's `severity`), or a
 * pool time-out. Its message may quote the SQL statement: it is logged, never shown to a caller.
 */
export function isDatabaseError(err: unknown): err is Error {
  if (!(err instanceof Error)) return false;
  return ("severity" in err && typeof err.severity === "string") || err.name === "KnexTimeoutError" || err.name === "DatabaseTimeoutError";
}

/** The detail a caller gets in place of a database's own message; the log keeps that under the request id. */
export const DATABASE_FAILURE_DETAIL = "a database statement failed while answering the request; the service log names the reason under this request's id";

/** The database error behind a problem, following its causes; undefined when there is none. */
export function databaseCause(problem: ProblemError): Error | undefined {
  const seen = new Set<unknown>();
  for (let cause: unknown = problem.cause; cause !== undefined && !seen.has(cause); cause = (cause as { cause?: unknown }).cause) {
    seen.add(cause);
    if (isDatabaseError(cause)) return cause;
    if (!(cause instanceof Error)) return undefined;
  }
  return undefined;
}

const SQL_TEXT = /\b(select|insert|update|delete|with)\b[\s\S]*\b(from|into|set|where|as)\b/i;

/**
 * The problem as a caller sees it. A problem caused by a database error answers with its own fixed
 * sentence, unless that sentence (or an entry of its list) repeats the database's message or quotes
 * SQL: then the detail is {@link DATABASE_FAILURE_DETAIL} and the list is left out.
 */
export function callerProblem(problem: ProblemError): Problem {
  const body = problem.toProblem();
  const cause = databaseCause(problem);
  if (cause === undefined) return body;
  const internal = [cause.message, ...("detail" in cause && typeof cause.detail === "string" ? [cause.detail] : [])].filter((m) => m.trim() !== "");
  const leaks = (text: unknown) => typeof text === "string" && (SQL_TEXT.test(text) || internal.some((m) => text.includes(m)));
  if (!leaks(body.detail) && !(body.errors ?? []).some((e) => Object.values(e).some(leaks))) return body;
  const { errors: _left, ...rest } = body;
  return { ...rest, detail: DATABASE_FAILURE_DETAIL };
}
