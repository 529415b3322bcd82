/**
 * The messages between the service and its transform processes. A task carries everything an
 * evaluation needs as plain data; `$events()` calls cross back over the task's channel.
 */
import type { ProblemCode, ProblemDetail } from "../errors.js";
import type { TransformLimits } from "./transform.js";

export interface EvaluationTask {
  /** Identifies the task in `started` and `$events()` messages. */
  taskId: number;
  /** The transform as written; each process compiles it once and keeps it. */
  text: string;
  limits: Omit<TransformLimits, "timeoutMs">;
  /** The longest result, in bytes of its JSON text. */
  maxResultBytes: number;
  queryOutput: unknown;
  params: Record<string, unknown>;
  timelines: Map<string, Map<string, unknown>>;
  bindings: Record<string, unknown>;
  /** Whether `$events()` is bound (the service gave an events source). */
  events: boolean;
}

/** A problem as the evaluating process found it; the service turns it back into a ProblemError. */
export interface EvaluationProblem {
  code: ProblemCode;
  message: string;
  errors?: ProblemDetail[];
  /** The problem came from a `$events()` call the service answered: the service still holds the original error. */
  fromEvents?: true;
}

/** The result as JSON text (absent for JSONata's `undefined`), or the problem. */
export type EvaluationAnswer = { json: string | undefined } | { problem: EvaluationProblem };

/** Evaluating process → service: the task has started (its clock starts), or one `$events(itemId, options)` call. */
export type EvaluatorNotice = { kind: "started"; taskId: number } | EventsCall;

export interface EventsCall {
  kind: "events";
  taskId: number;
  callId: number;
  itemId: unknown;
  options: unknown;
}

/** Service → evaluating process: the answer to one `$events()` call. */
export type EventsReply = { kind: "eventsReply"; callId: number; value: unknown } | { kind: "eventsReply"; callId: number; problem: EvaluationProblem };
