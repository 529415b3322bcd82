import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import type { Logger } from "../logger.js";
import type { TaskOutcomeKind } from "../metrics.js";
import { forgetInHand, releaseInHand, takeInHand, type EngineName, type InHandRow } from "./in-hand.js";
import { nextAttempt, taskOutcome } from "./outcome.js";
import type { OutputVariables } from "./tasks.js";
import { errorText } from "../errors.js";

/** Failure code of a task met again after the process running it ended without reporting. */
export const WORKER_ENDED = "WORKER_ENDED";

/** The one report a worker makes of a task it took (contract §6). */
export type TaskReport =
  | { kind: "completed"; output: OutputVariables }
  | { kind: "bpmnError"; code: string; message: string }
  | { kind: "failure"; code: string; message: string; details: string; retries: number; backOffMs: number };

/** How a worker records and judges the tasks it takes. */
export interface TakeOptions {
  /** Where `tasks_in_hand` lives. */
  knex: Knex;
  engine: EngineName;
  /** This process's id in `tasks_in_hand` (see {@link inHandWorkerId}). */
  workerId: string;
  /** Retries of a task whose engine gives none. */
  defaultRetries: number;
  logger: Logger;
}

/** A task as the engine handed it out. */
export interface TakenTask {
  /** Camunda 7 external task id, Zeebe job key. */
  key: string;
  topic: string;
  /** The retries the engine gives it; none on Camunda 7 before its first failure. */
  retries: number | null | undefined;
}

export interface Handled {
  report: TaskReport;
  /** To call once the report was made (`reported`) or could not be: clears the task's row as due. Never throws. */
  settle(reported: boolean): Promise<void>;
}

/**
 * Takes a task: records it in hand (durably, before anything runs), then runs it — unless a process
 * that ended had it in hand, never reporting. Such a task may end every process that runs it (a
 * crash, running out of memory), taking the other tasks in hand down too: it is not run again but
 * failed, one retry fewer at each meeting, so the engine raises an incident. At the incident its
 * row is dropped: an operator who retries it has it run afresh. A task that cannot be recorded (the
 * database is down) is not run either: it fails as any passing fault does.
 */
export async function takeTask(options: TakeOptions, task: TakenTask, run: () => Promise<OutputVariables>): Promise<Handled> {
  const key = { engine: options.engine, taskKey: task.key };
  let row: InHandRow;
  try {
    row = await takeInHand(options.knex, { ...key, topic: task.topic, workerId: options.workerId });
  } catch (err) {
    options.logger.warn("could not record the task in hand; not run, reported as a failure", { engine: options.engine, taskId: task.key, error: errorText(err) });
    return { report: reportOfError(err, task.retries, options.defaultRetries), settle: async () => {} };
  }
  if (row.workerId !== options.workerId) {
    const message = `the worker handling this task (${row.workerId}) ended (crash, out of memory or kill) before reporting; attempt ${row.attempts}, not run again`;
    const details =
      `Worker process ${row.workerId} took this task at ${row.startedAt.toISOString()} and ended without reporting an outcome ` +
      "(or lost the task while running it: its lock or job timeout lapsed). " +
      "The task may have ended it, so it is not run again: it is failed at each meeting until the engine raises an incident. " +
      "Retrying it after the incident runs it afresh.";
    const report = failureReport(WORKER_ENDED, message, details, task.retries, options.defaultRetries);
    options.logger.warn("task met again after its worker ended with it in hand; not run", {
      engine: options.engine,
      topic: task.topic,
      taskId: task.key,
      previousWorker: row.workerId,
      attempts: row.attempts,
      retries: report.retries,
    });
    return {
      report,
      // At zero retries the engine raises the incident; kept, the row would fail an operator's retry unrun.
      settle: async (reported) => {
        if (reported && report.retries === 0) await quietly(options, task, () => forgetInHand(options.knex, key));
      },
    };
  }
  let report: TaskReport;
  try {
    report = { kind: "completed", output: await run() };
  } catch (err) {
    report = reportOfError(err, task.retries, options.defaultRetries);
  }
  // The process survived the task, whatever became of the report: the row of this take goes (not a later take's).
  return { report, settle: () => quietly(options, task, () => releaseInHand(options.knex, { ...key, workerId: options.workerId, take: row.take })) };
}

/** A failure with one retry fewer than the task has (the default when it has none) and the back-off. */
export function failureReport(code: string, message: string, details: string, retries: number | null | undefined, defaultRetries: number): TaskReport & { kind: "failure" } {
  return { kind: "failure", code, message, details, ...nextAttempt(retries, defaultRetries) };
}

/** What a thrown error becomes (contract §6): a BPMN error for a 4xx problem, else a failure. */
function reportOfError(err: unknown, retries: number | null | undefined, defaultRetries: number): TaskReport {
  const outcome = taskOutcome(err);
  if (outcome.kind === "bpmnError") return outcome;
  return failureReport(outcome.code, outcome.message, err instanceof Error ? (err.stack ?? err.message) : String(err), retries, defaultRetries);
}

/** The log and metrics view of a report: its kind, code and the `outcome` field of the task log line. */
export interface ReportView {
  kind: TaskOutcomeKind;
  code: string | undefined;
  outcome: string;
}

/** The view of a task whose report reached no engine. */
export const UNREPORTED: ReportView = { kind: "unreported", code: undefined, outcome: "unreported" };

export function describeReport(report: TaskReport): ReportView {
  return report.kind === "completed" ? { kind: "completed", code: undefined, outcome: "completed" } : { kind: report.kind, code: report.code, outcome: `${report.kind} ${report.code}` };
}

/**
 * The id a process records its tasks in hand under: the engine's worker id, which is unique per
 * process (`<host>-<pid>-<random>`), or a configured one with a random suffix, so that a restarted
 * process never passes for the one that ended.
 */
export function inHandWorkerId(workerId: string, configured: boolean): string {
  return configured ? `${workerId}-${randomUUID().slice(0, 8)}` : workerId;
}

/** Clearing a row must not turn a reported task into an error; a row left behind is logged. */
async function quietly(options: TakeOptions, task: TakenTask, clear: () => Promise<unknown>): Promise<void> {
  try {
    await clear();
  } catch (err) {
    options.logger.warn("could not clear the task's row in tasks_in_hand; met again, it would be failed unrun", { engine: options.engine, taskId: task.key, error: errorText(err) });
  }
}

