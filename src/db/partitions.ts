import type { Knex } from "knex";
import { errorText } from "../errors.js";

/**
 * Upkeep of the events' monthly partitions (migration 007): the months ahead are made before
 * their events come, months that landed in the default partition (a backfill, an odd timestamp)
 * are split out of it, and, with a retention, months wholly before its horizon are dropped —
 * whole tables, no row-by-row DELETE. Both backends hold the same partitions (the embedded
 * database too: docs/decisions/2026-11-27-events-partitioned-by-month.md).
 */

/** Months made ahead of the current one (UTC). */
export const PARTITION_MONTHS_AHEAD = 3;
/** How often the upkeep runs after the one at start. */
export const PARTITION_UPKEEP_EVERY_MS = 3_600_000;
/** Longest one step waits for a lock on `events`: a step that waits longer gives up until the next run, rather than queue the reads behind it. */
export const PARTITION_LOCK_TIMEOUT_MS = 2000;
/** Rows of the default partition deleted per statement past the retention horizon. */
const DEFAULT_DELETE_BATCH = 10_000;
/** Arbitrary constant naming the partition upkeep among advisory locks: one process at a time does a step. */
const UPKEEP_LOCK = 7_246_311_906;
const DAY_MS = 86_400_000;
const PARTITION_NAME = /^events_y(\d{4})m(\d{2})$/;

export interface PartitionUpkeep {
  /** Partitions made, by name. */
  created: string[];
  /** Partitions dropped past the retention horizon, by name. */
  dropped: string[];
  /** Rows deleted from the default partition past the horizon. */
  deleted: number;
}

/** The first instant of the UTC month `k` months after the one holding `t`. */
function monthStart(t: number, k = 0): Date {
  const d = new Date(t);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + k, 1));
}

/** Runs one step in a transaction of its own, holding the upkeep lock, under the lock time-out. */
function step<T>(knex: Knex, body: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return knex.transaction(async (trx) => {
    await trx.raw("select pg_advisory_xact_lock(?), set_config('lock_timeout', ?, true)", [UPKEEP_LOCK, `${PARTITION_LOCK_TIMEOUT_MS}ms`]);
    return body(trx);
  });
}

/** The partitions of `events` (the default one aside), with the first instant after each. */
export async function eventPartitions(knex: Knex): Promise<{ name: string; end: Date }[]> {
  const { rows } = (await knex.raw(
    "select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'events'::regclass order by c.relname",
  )) as { rows: { name: string }[] };
  return rows.flatMap(({ name }) => {
    const m = PARTITION_NAME.exec(name);
    return m === null ? [] : [{ name, end: new Date(Date.UTC(Number(m[1]), Number(m[2]), 1)) }];
  });
}

/** The instant before which events are dropped, at `now`; undefined when they are kept forever. */
export function retentionHorizon(retentionDays: number | undefined, now: Date): Date | undefined {
  return retentionDays === undefined ? undefined : new Date(now.getTime() - retentionDays * DAY_MS);
}

/**
 * One round of upkeep at `now`. Each partition made or dropped is a step of its own; a step that
 * fails (a lock not had within {@link PARTITION_LOCK_TIMEOUT_MS}) is reported to `onStepFailed`
 * and tried again at the next round. `aheadOnly`: the current month and those ahead, nothing else
 * (no scan of the default partition, no retention) — what a starting service waits for.
 */
export async function keepEventPartitions(
  knex: Knex,
  now: Date,
  retentionDays?: number,
  onStepFailed: (message: string) => void = () => {},
  aheadOnly = false,
): Promise<PartitionUpkeep> {
  const done: PartitionUpkeep = { created: [], dropped: [], deleted: 0 };
  const horizon = aheadOnly ? undefined : retentionHorizon(retentionDays, now);
  const months = new Set<number>();
  for (let k = 0; k <= PARTITION_MONTHS_AHEAD; k++) months.add(monthStart(now.getTime(), k).getTime());
  const { rows } = aheadOnly
    ? { rows: [] }
    : ((await knex.raw("select distinct to_char(ts at time zone 'UTC', 'YYYY-MM') as m from events_default")) as { rows: { m: string }[] });
  for (const { m } of rows) {
    const start = Date.UTC(Number(m.slice(0, 4)), Number(m.slice(5, 7)) - 1, 1);
    // Months wholly past the horizon are not made, only emptied (below).
    if (horizon === undefined || monthStart(start, 1).getTime() > horizon.getTime()) months.add(start);
  }
  for (const start of [...months].sort((a, b) => a - b)) {
    try {
      const made = await step(knex, async (trx) => {
        const { rows: made } = (await trx.raw("select events_month_partition(?::timestamp) as name", [new Date(start).toISOString().slice(0, 19)])) as { rows: { name: string | null }[] };
        return made[0]?.name ?? null;
      });
      if (made !== null) done.created.push(made);
    } catch (err) {
      onStepFailed(`could not make the events partition of ${new Date(start).toISOString().slice(0, 7)}: ${errorText(err)}`);
    }
  }
  if (horizon === undefined) return done;
  for (const { name, end } of await eventPartitions(knex)) {
    if (end.getTime() > horizon.getTime()) continue;
    try {
      // The name comes from the catalog and matched PARTITION_NAME: letters, digits and underscores.
      await step(knex, (trx) => trx.raw(`drop table ${name}`));
      done.dropped.push(name);
    } catch (err) {
      onStepFailed(`could not drop the events partition ${name}: ${errorText(err)}`);
    }
  }
  for (;;) {
    const deleted = (await knex.raw("delete from events_default where ctid = any(array(select ctid from events_default where ts < ? limit ?))", [horizon, DEFAULT_DELETE_BATCH])) as {
      rowCount?: number;
      affectedRows?: number;
    };
    const n = Number(deleted.rowCount ?? deleted.affectedRows ?? 0);
    done.deleted += n;
    if (n < DEFAULT_DELETE_BATCH) return done;
  }
}

export interface PartitionKeeper {
  /** Stops the timer; a round under way is awaited. */
  stop(): Promise<void>;
}

/**
 * Makes the months ahead now and resolves (a failure reported, not thrown: the service runs on,
 * its events going to the default partition); then runs the full {@link keepEventPartitions} in
 * the background at once and every {@link PARTITION_UPKEEP_EVERY_MS}. A start never waits for
 * months of the default partition to be moved out (a backfill of millions of rows, or events
 * dated past the months made ahead) nor for the retention's drops.
 */
export async function startPartitionUpkeep(
  knex: Knex,
  options: { retentionDays?: number; onDone?: (upkeep: PartitionUpkeep) => void; onWarning?: (message: string) => void },
): Promise<PartitionKeeper> {
  const warn = options.onWarning ?? (() => {});
  let running: Promise<void> | undefined;
  const round = (aheadOnly = false) => {
    running ??= keepEventPartitions(knex, new Date(), options.retentionDays, warn, aheadOnly)
      .then(
        (upkeep) => options.onDone?.(upkeep),
        (err: unknown) => warn(`the events partition upkeep failed: ${errorText(err)}`),
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  await round(true);
  let stopped = false;
  const first = setImmediate(() => stopped || void round());
  const timer = setInterval(() => void round(), PARTITION_UPKEEP_EVERY_MS);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearImmediate(first);
      clearInterval(timer);
      if (running !== undefined) await running;
    },
  };
}
