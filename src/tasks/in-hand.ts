import type { Knex } from "knex";
import { rawPrepared } from "../db/database.js";

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
  /**
   * This take, to release its row and no later one (see {@link releaseInHand}): the row's attempts
   * and its `started_at` to the microsecond, as the database wrote them.
   */
  take: TakeToken;
}

/** One take of a task's row: its attempts count and its `started_at` as PostgreSQL's text (microseconds). */
export interface TakeToken {
  attempts: number;
  startedAt: string;
}

const TABLE = "tasks_in_hand";

/**
 * Records that `workerId` takes the task. A row of the same process (a task it took again) is
 * renewed; a row of another process is kept with that process's id, the attempts counted on: the
 * answer then names the process that ended with the task in hand. The takes of one turn of the event
 * loop (the tasks of one fetch) are written by one statement (see {@link TurnBatch}).
 */
export function takeInHand(knex: Knex, task: InHandKey & { topic: string; workerId: string }): Promise<InHandRow> {
  return batchesOf(knex).take.add(task);
}

/**
 * The process is done with the task (it survived it): drops its row, if the row is still this
 * process's — and, given the take (`take`), still that take's: a release that runs late never
 * drops the row of a later take of the same task (the task activated again and taken by this
 * process meanwhile; the row renewed, or dropped and written afresh, has other attempts or another
 * `started_at`).
 */
export function releaseInHand(knex: Knex, task: InHandKey & { workerId: string; take?: TakeToken }): Promise<boolean> {
  return batchesOf(knex).release.add(task);
}

type TakeCall = InHandKey & { topic: string; workerId: string };
type ReleaseCall = InHandKey & { workerId: string; take?: TakeToken };

interface Batches {
  take: TurnBatch<TakeCall, InHandRow>;
  release: TurnBatch<ReleaseCall, boolean>;
}

const batches = new WeakMap<Knex, Batches>();

function batchesOf(knex: Knex): Batches {
  let found = batches.get(knex);
  if (found === undefined) {
    found = { take: new TurnBatch((tasks) => takeAll(knex, tasks)), release: new TurnBatch((tasks) => releaseAll(knex, tasks), RELEASE_WINDOW_MS) };
    batches.set(knex, found);
  }
  return found;
}

const keyOf = (engine: string, taskKey: string) => `${engine}\u0000${taskKey}`;

/** A statement of fixed text whatever the number of rows (they come as one JSON array): prepared once per connection ({@link rawPrepared}). */
const runStatement = <Row>(knex: Knex, sql: string, rows: readonly object[]) => rawPrepared<Row>(knex, sql, [JSON.stringify(rows)]);

/** The rows of a batch, from its one JSON parameter. */
const batchRows = (columns: string) => `jsonb_to_recordset(?::jsonb) as batch(${columns})`;

/**
 * One multi-row upsert: a new row is this worker's first attempt; a row of the same worker is
 * renewed (`started_at` now); a row of another worker keeps that worker and its `started_at`. The
 * attempts count on either way. Every task has a key of its own (a row can be changed once per statement).
 */
const TAKE_SQL = `insert into ${TABLE} as held (engine, task_key, worker_id, topic)
  select engine, task_key, worker_id, topic from ${batchRows("engine text, task_key text, worker_id text, topic text")}
  on conflict (engine, task_key) do update set
    attempts = held.attempts + 1,
    started_at = case when held.worker_id = excluded.worker_id then now() else held.started_at end
  returning engine, task_key, worker_id, attempts, started_at, started_at::text as started_text`;

async function takeAll(knex: Knex, tasks: readonly TakeCall[]): Promise<InHandRow[]> {
  const rows = await runStatement<{ engine: string; task_key: string; worker_id: string; attempts: number; started_at: Date | string; started_text: string }>(
    knex,
    TAKE_SQL,
    tasks.map((task) => ({ engine: task.engine, task_key: task.taskKey, worker_id: task.workerId, topic: task.topic })),
  );
  const byKey = new Map(rows.map((row) => [keyOf(row.engine, row.task_key), row]));
  return tasks.map((task) => {
    const row = byKey.get(keyOf(task.engine, task.taskKey));
    if (row === undefined) throw new Error(`tasks_in_hand returned no row for ${task.engine} task ${task.taskKey}`);
    return { workerId: row.worker_id, attempts: row.attempts, startedAt: new Date(row.started_at), take: { attempts: row.attempts, startedAt: row.started_text } };
  });
}

/** One delete of the rows still held by the releasing processes (and, given a take, still that take's). */
const RELEASE_SQL = `delete from ${TABLE} as held
  using ${batchRows("engine text, task_key text, worker_id text, attempts integer, started_at text")}
  where held.engine = batch.engine and held.task_key = batch.task_key and held.worker_id = batch.worker_id
    and (batch.attempts is null or (held.attempts = batch.attempts and held.started_at = batch.started_at::timestamptz))
  returning held.engine, held.task_key`;

async function releaseAll(knex: Knex, tasks: readonly ReleaseCall[]): Promise<boolean[]> {
  const rows = await runStatement<{ engine: string; task_key: string }>(
    knex,
    RELEASE_SQL,
    tasks.map((task) => ({ engine: task.engine, task_key: task.taskKey, worker_id: task.workerId, attempts: task.take?.attempts ?? null, started_at: task.take?.startedAt ?? null })),
  );
  const gone = new Set(rows.map((row) => keyOf(row.engine, row.task_key)));
  return tasks.map((task) => gone.has(keyOf(task.engine, task.taskKey)));
}

/** PostgreSQL's classes of errors in the data of a statement (22: data exception, 23: integrity constraint). */
const DATA_ERROR_CLASSES = ["22", "23"];

const isDataError = (err: unknown) => DATA_ERROR_CLASSES.includes(String((err as { code?: unknown } | null)?.code ?? "").slice(0, 2));

/** A call waiting for its batch's statement. */
interface Call<T, R> {
  task: T;
  resolve: (value: R) => void;
  reject: (reason: unknown) => void;
}

/**
 * How long releases gather before their statement: a release is off a task's path (its report is
 * sent, its slot free), and releases that end a few milliseconds apart then cost one statement and
 * one commit, not one each. Safe to delay: a release drops only the row of its own take.
 */
export const RELEASE_WINDOW_MS = 10;

/** Rows written or deleted by one statement at most. */
const MAX_BATCH = 200;

/**
 * Calls made in one turn of the event loop, run as few statements: the tasks of one fetch are
 * handled side by side, and each of their takes (then, as they end together, their releases) would
 * cost a statement of its own — on a machine shared with the engine, CPU taken from it. A batch runs
 * on the next turn (`setImmediate`), or `windowMs` after its first call, in waves whose tasks have distinct keys (a second call for the
 * same task waits for the first, as it would one statement after another), at most
 * {@link MAX_BATCH} a statement. A statement refused for one row's data is run again a row at a
 * time (see {@link TurnBatch.settle}); one that fails otherwise fails every call of its wave.
 */
class TurnBatch<T extends InHandKey, R> {
  private pending: Call<T, R>[] = [];

  constructor(
    private readonly run: (tasks: readonly T[]) => Promise<R[]>,
    private readonly windowMs = 0,
  ) {}

  add(task: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ task, resolve, reject });
      if (this.pending.length > 1) return;
      if (this.windowMs > 0) setTimeout(() => void this.flush(), this.windowMs);
      else setImmediate(() => void this.flush());
    });
  }

  /**
   * Runs one wave. A statement refused for the data of one of its rows is run again a row at a
   * time, so that only that call fails, as it would have alone; any other error (the database
   * unreachable) fails the whole wave.
   */
  private async settle(wave: Call<T, R>[]): Promise<void> {
    try {
      const results = await this.run(wave.map((call) => call.task));
      wave.forEach((call, i) => call.resolve(results[i]!));
    } catch (err) {
      if (wave.length > 1 && isDataError(err)) {
        for (const call of wave) await this.settle([call]);
      } else for (const call of wave) call.reject(err);
    }
  }

  private async flush(): Promise<void> {
    let calls = this.pending;
    this.pending = [];
    while (calls.length > 0) {
      const wave: typeof calls = [];
      const later: typeof calls = [];
      const seen = new Set<string>();
      for (const call of calls) {
        const key = keyOf(call.task.engine, call.task.taskKey);
        if (seen.has(key) || wave.length === MAX_BATCH) later.push(call);
        else {
          seen.add(key);
          wave.push(call);
        }
      }
      await this.settle(wave);
      calls = later;
    }
  }
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
