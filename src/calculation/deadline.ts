import { setImmediate as nextTurn } from "node:timers/promises";
import { ProblemError } from "../errors.js";

/** Units of work (a step evaluated, a character compiled, a bucket aligned) between two clock reads. */
const CHECK_EVERY = 1000;
/** Longest the work holds the event loop before it lets other requests run. */
const SLICE_MS = 20;

/**
 * Paces long work on the event loop: it counts work done, reads the clock once every
 * {@link CHECK_EVERY} units (a clock read per step would cost more than many steps), stops the
 * work past its deadline with `422 CALCULATION_FAILED` naming the time-out, and says when the
 * work has held the loop for a slice, so the caller can yield and other requests are not held up.
 *
 * ```ts
 * for (…) { …; if (pace.tick(units)) await pace.yield(); }
 * ```
 */
export class Deadline {
  private untilCheck = CHECK_EVERY;
  private sliceStart: number;

  /** Untimed pacing: the work only yields (checking a definition on save has no time limit). */
  static unlimited(clock: () => number = Date.now): Deadline {
    return new Deadline(Number.POSITIVE_INFINITY, 0, clock);
  }

  constructor(
    /** The instant past which the work is stopped. */
    readonly at: number,
    /** The limit it was set from, for the message (CALCULATION_TIMEOUT_MS). */
    readonly timeoutMs: number,
    private readonly clock: () => number = Date.now,
  ) {
    this.sliceStart = clock();
  }

  /** A deadline `timeoutMs` from now. */
  static after(timeoutMs: number, clock: () => number = Date.now): Deadline {
    return new Deadline(clock() + timeoutMs, timeoutMs, clock);
  }

  /** Reads the clock now: past the deadline, throws `422 CALCULATION_FAILED`. */
  check(): number {
    const now = this.clock();
    if (now > this.at) throw new ProblemError("CALCULATION_FAILED", `the calculation ran longer than ${this.timeoutMs} ms and was stopped`);
    return now;
  }

  /** Counts `units` of work; true when the work has held the loop for a slice and should yield. */
  tick(units = 1): boolean {
    this.untilCheck -= units;
    if (this.untilCheck > 0) return false;
    this.untilCheck = CHECK_EVERY;
    return this.check() - this.sliceStart >= SLICE_MS;
  }

  /** Lets the event loop run what waits, then starts a new slice. */
  async yield(): Promise<void> {
    await nextTurn();
    this.sliceStart = this.clock();
  }
}
