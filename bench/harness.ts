/** Times `fn` `iterations` times after `warmup` runs; returns milliseconds per run, sorted. */
export async function timeRuns(fn: (i: number) => Promise<unknown>, iterations: number, warmup = Math.min(20, iterations)): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn(i);
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = performance.now();
    await fn(i);
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b);
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export function summary(label: string, sorted: number[]): string {
  return `${label.padEnd(34)} p50 ${percentile(sorted, 50).toFixed(3).padStart(9)} ms   p99 ${percentile(sorted, 99).toFixed(3).padStart(9)} ms`;
}

/** Reads `--name=value` from the command line. */
export function option(name: string, fallback: string): string {
  const prefix = `--${name}=`;
  return process.argv.find((a) => a.startsWith(prefix))?.slice(prefix.length) ?? fallback;
}

/** Waits until the server on `port` answers `/health` with 2xx. */
export async function waitForHealth(port: number, attempts = 150): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("the server did not become healthy");
}
