import type { Knex } from "knex";
import { isWriteConflict } from "../errors.js";

/** How a conflicting write transaction is re-run. */
export interface WriteRetryOptions {
  /** Runs of the whole transaction, the first included. Default 5. */
  attempts?: number;
  /** Back-off before the second run; it doubles for each further run, jittered to 50–150 %. Default 10 ms. */
  baseDelayMs?: number;
  /** The jitter source, in [0, 1). Default `Math.random`. */
  random?: () => number;
  /** Waits between runs. Default a timer. */
  sleep?: (ms: number) => Promise<void>;
}

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs `work` again while it fails with a deadlock (40P01) or a serialization failure (40001):
 * PostgreSQL rolls such a transaction back whole, so running all of it again is safe and usually
 * succeeds. `work` must therefore be the whole transaction (see {@link writeTransaction}), never
 * part of one. Past the last attempt the conflict is thrown as it is; toProblemError makes it a
 * 503 UNAVAILABLE that says so. Every other error is thrown at once.
 */
export async function retryWriteConflicts<T>(work: () => Promise<T>, options: WriteRetryOptions = {}): Promise<T> {
  const attempts = Math.max(1, options.attempts ?? 5);
  const baseDelayMs = options.baseDelayMs ?? 10;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? wait;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (attempt >= attempts || !isWriteConflict(err)) throw err;
      await sleep(baseDelayMs * 2 ** (attempt - 1) * (0.5 + random()));
    }
  }
}

/** One write transaction, re-run whole on a deadlock or serialization failure ({@link retryWriteConflicts}). */
export function writeTransaction<T>(knex: Knex, work: (trx: Knex.Transaction) => Promise<T>, options?: WriteRetryOptions): Promise<T> {
  return retryWriteConflicts(() => knex.transaction(work), options);
}

/** A total order on text keys that does not depend on the database's collation: every writer locks rows in it. */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
