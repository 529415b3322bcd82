import { setImmediate } from "node:timers/promises";

/**
 * How much of the rebuild one statement takes, on a backend that bounds background statements
 * (`Backend.backgroundStatementMs`, src/db/backend.ts): a number of marked days, or below one, a slice of one day
 * (down to one 15-minute cell). It starts at one cell (a day of dense events in one statement held
 * the embedded database over 1.5 s on a loaded machine), and after each statement of a sliced day,
 * or each chunk of whole days, moves towards the bound: down as far as the slowest statement's time
 * asks, up one step when it was under a quarter of it. Without a bound every mark goes in one
 * chunk, each step in one statement.
 */
const SPANS = [1 / 96, 1 / 24, 1 / 8, 1 / 2, 1, 4, 16, 64, 256, 1024, 4096];

export class Pace {
  private step = 0;
  private slowest = 0;
  constructor(private readonly boundMs: number | undefined) {}

  /** Marks per chunk (all of them without a bound), and the slices each day of a single mark is cut into. */
  get span(): { marks: number; slices: number } {
    if (this.boundMs === undefined) return { marks: Number.POSITIVE_INFINITY, slices: 1 };
    const span = SPANS[this.step]!;
    return span >= 1 ? { marks: span, slices: 1 } : { marks: 1, slices: Math.round(1 / span) };
  }

  /** Runs one statement: under a bound, after the event loop has turned, and timed. */
  async run<T>(statement: () => Promise<T>): Promise<T> {
    if (this.boundMs === undefined) return statement();
    await setImmediate();
    const started = performance.now();
    try {
      return await statement();
    } finally {
      this.slowest = Math.max(this.slowest, performance.now() - started);
    }
  }

  /** Moves the span from the slowest statement since the last move. */
  adapt(): void {
    if (this.boundMs === undefined) return;
    const ratio = this.slowest / this.boundMs;
    if (ratio > 1) this.step = Math.max(0, this.step - Math.ceil(Math.log(ratio) / Math.log(4)));
    else if (ratio < 0.25) this.step = Math.min(SPANS.length - 1, this.step + 1);
    this.slowest = 0;
  }
}
