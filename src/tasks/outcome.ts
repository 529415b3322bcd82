import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { callerProblem, toProblemError } from "../errors.js";

/**
 * How a transport ends a task that threw (contract §6): a problem of the request or a definition
 * (every 4xx code) is a BPMN error carrying the code, so a model can catch it; anything else is a
 * failure the engine retries with back-off, raising an incident at zero retries.
 */
export type TaskOutcome = { kind: "bpmnError"; code: string; message: string } | { kind: "failure"; code: string; message: string };

export function taskOutcome(err: unknown): TaskOutcome {
  const problem = toProblemError(err);
  // The model (and whoever reads the engine's cockpit) sees what an HTTP caller would: no SQL.
  const message = callerProblem(problem).detail;
  return problem.isClientProblem ? { kind: "bpmnError", code: problem.code, message } : { kind: "failure", code: problem.code, message };
}

/** Retries left after a failure: the task's count (`defaultRetries` when the engine has none) minus one. */
export function retriesAfterFailure(current: number | null | undefined, defaultRetries: number): number {
  return Math.max(0, (current ?? defaultRetries) - 1);
}

/** Back-off before the next try: exponential from 1 s (1, 2, 4 … s) as the `total` retries run out, capped at 5 minutes. */
export function retryTimeoutMs(retriesLeft: number, total: number): number {
  const attempt = Math.max(0, total - retriesLeft - 1);
  return Math.min(300_000, 1000 * 2 ** attempt);
}

/** The next try after a failure: the retries left and the back-off before it. */
export function nextAttempt(current: number | null | undefined, defaultRetries: number): { retries: number; backOffMs: number } {
  const retries = retriesAfterFailure(current, defaultRetries);
  return { retries, backOffMs: retryTimeoutMs(retries, defaultRetries) };
}

/** The first pause after an engine's back-pressure refusal, doubled at each refusal that follows. */
export const BACK_PRESSURE_BASE_MS = 500;
/** The longest pause after a back-pressure refusal. */
export const BACK_PRESSURE_CAP_MS = 10_000;

/**
 * Wait before asking again after the `refusals`-th back-pressure refusal in a row (0 for the first):
 * 0.5, 1, 2 … s, capped at 10 s, each cut by a random up to a quarter (`random` in [0, 1)), so that
 * workers refused together do not all ask again together. Before the cap each pause is longer than
 * the one before (the least of the next, 0.75 × 2 d, exceeds the most of this, d).
 */
export function backPressureDelayMs(refusals: number, random: number = Math.random()): number {
  const ceiling = Math.min(BACK_PRESSURE_CAP_MS, BACK_PRESSURE_BASE_MS * 2 ** Math.min(Math.max(0, refusals), 10));
  return Math.round(ceiling * (1 - 0.25 * random));
}

/** Wait before the next try to reach a lost engine: 0.5, 1, 2 … s, capped at 30 s. */
export function reconnectDelayMs(failedTries: number): number {
  return Math.min(30_000, 500 * 2 ** Math.min(Math.max(0, failedTries), 6));
}

/** A worker name unique per process, as the engines record it: `<host>-<pid>-<random>`. */
export function defaultWorkerId(): string {
  return `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
}
