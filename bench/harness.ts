import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { type Agent, request as httpRequest } from "node:http";
import { cpus } from "node:os";
import pg from "pg";

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

/** CPU time (ms, user + system) of every process on the machine, by pid, with a group name. */
export type CpuSnapshot = Map<number, { group: string; ms: number }>;

/** Clock ticks per second of /proc's counters (USER_HZ: 100 on Linux). */
const TICK_MS = 10;

/**
 * Reads /proc: this process, the processes it started and theirs (a server process and its transform
 * processes), a Java process (an engine), PostgreSQL backends by database (from their process
 * titles), a Mosquitto it started, and everything else. Lets a benchmark say where the CPU of a round went, which on a
 * 2-core machine decides its throughput.
 */
export function cpuSnapshot(): CpuSnapshot {
  const snapshot: CpuSnapshot = new Map();
  const read: { pid: number; ppid: number; ms: number; cmdline: string }[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " ").trim();
      read.push({ pid: Number(entry), ppid: Number(fields[1]), ms: (Number(fields[11]) + Number(fields[12])) * TICK_MS, cmdline });
    } catch {
      // the process ended while being read
    }
  }
  const parent = new Map(read.map((p) => [p.pid, p.ppid]));
  const descends = (pid: number): boolean => {
    for (let up = parent.get(pid), depth = 0; up !== undefined && up > 1 && depth < 32; up = parent.get(up), depth++) if (up === process.pid) return true;
    return false;
  };
  for (const { pid, ms, cmdline } of read) {
    let group = "other";
    if (pid === process.pid) group = "this process";
    else if (cmdline.includes("node") && descends(pid)) group = "child processes";
    else if (cmdline.startsWith("mosquitto") && descends(pid)) group = "mosquitto";
    else if (cmdline.includes("java")) group = "java";
    else if (cmdline.startsWith("postgres:")) group = postgresGroup(cmdline);
    else if (cmdline.includes("postgres")) group = "postgres (server)";
    snapshot.set(pid, { group, ms });
  }
  return snapshot;
}

/**
 * "postgres <database>" for a backend ("postgres: [15/main: ]user database host state"), else
 * "postgres <process>" (checkpointer, walwriter …).
 */
function postgresGroup(title: string): string {
  const words = title.replace(/^postgres: (\S+\/\S+: )?/, "").split(" ");
  return words.length >= 3 && /\(\d+\)$|^\[local\]$/.test(words[2]!) ? `postgres ${words[1]}` : `postgres ${words[0]}`;
}

/** CPU ms per group between two snapshots (processes that started in between count from zero). */
export function cpuBetween(before: CpuSnapshot, after: CpuSnapshot): Map<string, number> {
  const groups = new Map<string, number>();
  for (const [pid, now] of after) {
    const spent = now.ms - (before.get(pid)?.ms ?? 0);
    if (spent > 0) groups.set(now.group, (groups.get(now.group) ?? 0) + spent);
  }
  return new Map([...groups].sort((a, b) => b[1] - a[1]));
}

/** "group 1.23 ms, …": CPU per unit of work (`units` tasks, requests …), largest first. */
export function cpuPerUnit(spent: Map<string, number>, units: number, unit: string): string {
  return [...spent].map(([group, ms]) => `${group} ${(ms / units).toFixed(2)} ms`).join(", ") + ` (CPU per ${unit})`;
}

/**
 * Puts the engine and the worker on cores of their own, as on hosts of their own: the engine's JVM
 * and the backends of its database on `engineCpu`; this process (the workers), its child processes
 * and the backends of `workerDatabase` on `workerCpu`. Processes that appear later (a pool's new
 * connection) are pinned as they are seen, every 200 ms. Returns the function that stops watching
 * and gives every pinned process back all cores. Linux (`taskset`).
 */
export function pinApart(settings: { engineDatabase?: string; workerDatabase: string; engineCpu: number; workerCpu: number }): () => void {
  const pinned = new Set<number>();
  const pin = (pid: number, cpu: string) => {
    try {
      execFileSync("taskset", ["-a", "-p", "-c", cpu, String(pid)], { stdio: "ignore" });
      pinned.add(pid);
    } catch {
      // the process ended meanwhile
    }
  };
  const sweep = () => {
    for (const [pid, { group }] of cpuSnapshot()) {
      if (pinned.has(pid)) continue;
      if (group === "java" || (settings.engineDatabase !== undefined && group === `postgres ${settings.engineDatabase}`)) pin(pid, String(settings.engineCpu));
      else if (group === "this process" || group === "child processes" || group === `postgres ${settings.workerDatabase}`) pin(pid, String(settings.workerCpu));
    }
  };
  sweep();
  const timer = setInterval(sweep, 200);
  return () => {
    clearInterval(timer);
    const all = `0-${cpus().length - 1}`;
    for (const pid of pinned) pin(pid, all);
    pinned.clear();
  };
}

/** A POST over `agent` (keep-alive) to 127.0.0.1:`port`: the status and the body as text. */
export function post(agent: Agent, port: number, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, method: "POST", agent, headers: { ...headers, "content-length": Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** The database of a PostgreSQL URL, made when missing (through the server's `postgres` database). */
export async function ensureDatabase(url: string): Promise<void> {
  const u = new URL(url);
  const name = u.pathname.slice(1);
  u.pathname = "/postgres";
  const admin = new pg.Client({ connectionString: u.toString() });
  await admin.connect();
  try {
    const found = await admin.query("select 1 from pg_database where datname = $1", [name]);
    if (found.rowCount === 0) await admin.query(`create database "${name.replace(/"/g, '""')}"`);
  } finally {
    await admin.end();
  }
}

/** Runs `work`, and answers its result with the longest time the event loop did not turn meanwhile (ms; a 5 ms timer's lateness). */
export async function withLongestStall<T>(work: () => Promise<T>): Promise<{ result: T; stallMs: number }> {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 5);
  try {
    const result = await work();
    return { result, stallMs: Math.max(worst, performance.now() - last) };
  } finally {
    clearInterval(timer);
  }
}
