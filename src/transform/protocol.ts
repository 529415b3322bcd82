/**
 * What a transform is given and how it is bounded, and the messages between the service and its
 * transform processes. A task carries everything an evaluation needs as plain data; `$events()`
 * calls cross back over the task's channel. Types only, so every transform module may import it.
 */
import type { ProblemCode, ProblemDetail } from "../errors.js";

export interface TransformLimits {
  /** Wall-clock limit for one evaluation, awaited sub-queries included. */
  timeoutMs: number;
  /** Deepest evaluation (JSONata's `stack` guardrail): stops runaway recursion. */
  maxDepth: number;
  /** Longest sequence an evaluation may build (JSONata's `sequence` guardrail, ranges included). */
  maxSequence: number;
}

/** What a transform evaluates over: the query output, the parameter values and the entity fields of `result()`. */
export interface TransformInput {
  queryOutput: Record<string, unknown[]>;
  params: Record<string, unknown>;
  /**
   * Timelines loaded before the evaluation, by timeline name, then item id: what `name: id`
   * inside result() stands for (one batched query per timeline, not one per entity).
   */
  timelines?: Map<string, Map<string, unknown>>;
  /** `$events(itemId, options)`: the events or buckets of one item (contract §4). */
  events?: (itemId: unknown, options: unknown) => Promise<unknown>;
  /** Further JSONata variables, by name without `$` (the conformance run binds the suite's). */
  bindings?: Record<string, unknown>;
}

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
