/**
 * A transform process: evaluates one transform at a time, away from the service. The pool kills a
 * process that runs too long and replaces one that dies (out of memory or otherwise), so nothing
 * here defends against a runaway evaluation; it only reports what it computed, or why not.
 */
import { LRUCache } from "lru-cache";
import { errorText, ProblemError } from "../errors.js";
import type { EvaluationAnswer, EvaluationProblem, EvaluationTask, EvaluatorNotice, EventsReply } from "./protocol.js";
import { compileTransform, evaluateTransform, resultSizeProblem, type CompiledTransform } from "./transform.js";
import { parseJson } from "../json.js";

function notify(notice: EvaluatorNotice): void {
  process.send!(notice);
}

/** `$events()` calls waiting for the service's answer. */
const waiting = new Map<number, { resolve(value: unknown): void; reject(err: unknown): void }>();
let nextCallId = 0;

process.on("message", (message: EventsReply | { kind?: undefined }) => {
  if (message?.kind !== "eventsReply") return;
  const call = waiting.get(message.callId);
  if (call === undefined) return;
  waiting.delete(message.callId);
  if ("problem" in message) call.reject(new EventsProblem(message.problem));
  else call.resolve(message.value);
});

/** A `$events()` call the service refused; the service keeps the original error. */
class EventsProblem extends ProblemError {
  constructor(readonly problem: EvaluationProblem) {
    super(problem.code, problem.message, problem.errors !== undefined ? { errors: problem.errors } : {});
  }
}

function callEvents(taskId: number, itemId: unknown, options: unknown): Promise<unknown> {
  let plainOptions: unknown;
  try {
    // JSONata hands over its own sequences and may hand over functions: only JSON crosses.
    plainOptions = options === undefined ? undefined : parseJson(JSON.stringify(options) ?? "null");
  } catch {
    return Promise.reject(new ProblemError("TRANSFORM_FAILED", "$events(itemId, options): the options must be JSON"));
  }
  return new Promise((resolve, reject) => {
    const callId = ++nextCallId;
    waiting.set(callId, { resolve, reject });
    notify({ kind: "events", taskId, callId, itemId: typeof itemId === "function" ? undefined : itemId, options: plainOptions });
  });
}

/**
 * Compiled transforms by text (and limits): a definition is compiled once per process, not once
 * per request; the 256 used last are kept.
 */
const compiled = new LRUCache<string, CompiledTransform>({ max: 256 });

function compile(task: EvaluationTask): CompiledTransform {
  const key = `${task.limits.maxDepth}:${task.limits.maxSequence}:${task.text}`;
  const hit = compiled.get(key);
  if (hit !== undefined) return hit;
  // The pool's clock is the hard limit, so JSONata's step-by-step timer stays off.
  const { transform, problems } = compileTransform(task.text, { ...task.limits, timeoutMs: 0 });
  if (transform === undefined) throw new ProblemError("TRANSFORM_FAILED", problems[0]?.message ?? "the transform does not compile", { errors: problems });
  compiled.set(key, transform);
  return transform;
}

function toProblem(err: unknown): EvaluationProblem {
  if (err instanceof EventsProblem) return { ...err.problem, fromEvents: true };
  if (err instanceof ProblemError) return { code: err.code, message: err.message, ...(err.errors !== undefined ? { errors: err.errors } : {}) };
  return { code: "TRANSFORM_FAILED", message: `the transform failed: ${errorText(err)}` };
}

export default async function evaluate(task: EvaluationTask): Promise<EvaluationAnswer> {
  notify({ kind: "started", taskId: task.taskId });
  try {
    const result = await evaluateTransform(compile(task), {
      queryOutput: task.queryOutput as Record<string, unknown[]>,
      params: task.params,
      timelines: task.timelines,
      bindings: task.bindings,
      ...(task.events ? { events: (itemId: unknown, options: unknown) => callEvents(task.taskId, itemId, options) } : {}),
    });
    const json = JSON.stringify(result);
    const tooLarge = resultSizeProblem(json, task.maxResultBytes);
    return tooLarge !== undefined ? { problem: tooLarge } : { json };
  } catch (err) {
    return { problem: toProblem(err) };
  }
}
