import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/**
 * How long an engine may take to start: a cold Zeebe broker took up to 171 s here while other work
 * loaded both cores. The suites' before hooks that start one allow this and a minute more.
 */
export const ENGINE_START_TIMEOUT_MS = 300_000;

/** A port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/** A child process whose output lines are kept and can be waited for. */
export class RunningProcess {
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;
  private waiters: { test: (line: string) => boolean; resolve: (line: string) => void }[] = [];

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n").filter((l) => l.trim() !== "")) {
        this.lines.push(line);
        this.waiters = this.waiters.filter((w) => (w.test(line) ? (w.resolve(line), false) : true));
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    this.exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  }

  /** Resolves with the first line (past or future) that matches, or rejects after the timeout. */
  waitFor(pattern: RegExp, timeoutMs = 90_000): Promise<string> {
    const seen = this.lines.find((l) => pattern.test(l));
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms:\n${this.lines.join("\n")}`)), timeoutMs);
      this.waiters.push({
        test: (l) => pattern.test(l),
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      });
    });
  }

  kill(): void {
    if (this.child.exitCode === null) this.child.kill("SIGKILL");
  }
}

/** Starts `node [nodeArgs] <script> [args]` from the project root with exactly the environment given (plus PATH). */
export function startNode(script: string, env: Record<string, string>, args: string[] = [], nodeArgs: string[] = []): RunningProcess {
  const child = spawn(process.execPath, [...nodeArgs, script, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? "", ...env } });
  return new RunningProcess(child);
}

const atRunEnd: (() => Promise<void>)[] = [];

/** Registers a stop to run once after every suite (engines shared by several test files). */
export function onRunEnd(stop: () => Promise<void>): void {
  atRunEnd.push(stop);
}

/** Runs the stops registered with onRunEnd (the root hook's afterAll). */
export async function runEndStops(): Promise<void> {
  await Promise.all(atRunEnd.splice(0).map((stop) => stop()));
}
