import type { Knex } from "knex";

/**
 * The tasks a worker process has in hand, kept in `tasks_in_hand` so that they outlive the process:
 * a row still there when the engine hands its task out again was left by a process that ended
 * (crash, out of memory, kill) while running it. Engine-neutral; both workers use these.
 */
export type EngineName = "camunda7" | "zeebe";

/** A task as the table knows it: the engine's key (Camunda 7 external task id, Zeebe job key). */
export interface InHandKey {
  engine: EngineName;
  taskKey: string;
}

/** The row of a task after a worker took it. */
export interface InHandRow {
  /** The worker process that ran the task: the taker, unless another process had it in hand before. */
  workerId: string;
  /** How often a worker took the task since the row was made, this time included. */
  attempts: number;
  /** When `workerId` took it. */
  startedAt: Date;
}

const TABLE = "tasks_in_hand";

/**
 * Records that `workerId` takes the task, in one statement. A row of the same process (a task it
 * took again) is renewed; a row of another process is kept with that process's id, the attempts
 * counted on: the answer then names the process that ended with the task in hand.
 */
export async function takeInHand(knex: Knex, task: InHandKey & { topic: string; workerId: string }): Promise<InHandRow> {
  const rows: { worker_id: string; attempts: number; started_at: Date | string }[] = await knex(TABLE)
    .insert({ engine: task.engine, task_key: task.taskKey, worker_id: task.workerId, topic: task.topic })
    .onConflict(["engine", "task_key"])
    .merge({
      attempts: knex.raw("?? + 1", [`${TABLE}.attempts`]),
      started_at: knex.raw(`case when ?? = excluded.worker_id then now() else ?? end`, [`${TABLE}.worker_id`, `${TABLE}.started_at`]),
    })
    .returning(["worker_id", "attempts", "started_at"]);
  const row = rows[0]!;
  return { workerId: row.worker_id, attempts: row.attempts, startedAt: new Date(row.started_at) };
}

/** The process is done with the task (it survived it): drops its row, if the row is still this process's. */
export async function releaseInHand(knex: Knex, task: InHandKey & { workerId: string }): Promise<boolean> {
  return (await knex(TABLE).where({ engine: task.engine, task_key: task.taskKey, worker_id: task.workerId }).del()) > 0;
}

/** Drops a task's row whoever holds it: at its incident, where an operator decides what comes next. */
export async function forgetInHand(knex: Knex, task: InHandKey): Promise<boolean> {
  return (await knex(TABLE).where({ engine: task.engine, task_key: task.taskKey }).del()) > 0;
}

/** Drops every row of these worker processes: they end of their own will, not of a task. */
export async function releaseAllInHand(knex: Knex, workerIds: string[]): Promise<number> {
  if (workerIds.length === 0) return 0;
  return knex(TABLE).whereIn("worker_id", workerIds).del();
}

/** Drops rows taken before `olderThan` (tasks the engine has since dropped, or a report lost). */
export async function removeStaleInHand(knex: Knex, olderThan: Date): Promise<number> {
  return knex(TABLE).where("started_at", "<", olderThan).del();
}
