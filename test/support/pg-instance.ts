import { execFileSync, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./process.js";

/** Where Debian's PostgreSQL 15 keeps initdb, pg_ctl and postgres (PG_BIN overrides). */
const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";

/**
 * The user the instance runs as. PostgreSQL refuses to run as root, so a test running as root
 * runs initdb, pg_ctl and the server as `postgres` (through runuser), in a temporary folder that
 * user owns; any other user runs them as itself.
 */
function runAs(): { uid: number; gid: number; prefix: string[] } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
  return { uid, gid, prefix: ["runuser", "-u", "postgres", "--"] };
}

/**
 * A PostgreSQL instance of the test's own: initdb into a temporary folder, trust authentication,
 * 127.0.0.1 on a free port. It can be stopped hard (`-m immediate`), frozen (SIGSTOP of the
 * postmaster and every backend) and started again. Never the system PostgreSQL.
 */
export class TemporaryPostgres {
  private frozen: number[] = [];

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly user: ReturnType<typeof runAs>,
  ) {}

  static async create(): Promise<TemporaryPostgres> {
    const user = runAs();
    const dir = mkdtempSync(join(tmpdir(), "pg-fault-"));
    if (user !== undefined) chownSync(dir, user.uid, user.gid);
    const instance = new TemporaryPostgres(dir, await freePort(), user);
    try {
      instance.run("initdb", ["-D", instance.dataDir, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--no-instructions"]);
      instance.start();
    } catch (err) {
      instance.destroy();
      throw err;
    }
    return instance;
  }

  get dataDir(): string {
    return join(this.dir, "data");
  }

  url(database = "postgres"): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  private run(tool: string, args: string[]): string {
    const command = [...(this.user?.prefix ?? []), join(PG_BIN, tool), ...args];
    const result = spawnSync(command[0]!, command.slice(1), { encoding: "utf8", timeout: 60_000 });
    if (result.status !== 0) throw new Error(`${tool} ${args.join(" ")} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
    return result.stdout;
  }

  /** Starts the server and waits until it takes connections. */
  start(): void {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60`;
    this.run("pg_ctl", ["-D", this.dataDir, "-l", join(this.dir, "server.log"), "-w", "-t", "30", "-o", options, "start"]);
  }

  /** `pg_ctl stop -m immediate`: every backend killed at once, no checkpoint (crash recovery at the next start). */
  stopImmediately(): void {
    this.thaw();
    this.run("pg_ctl", ["-D", this.dataDir, "-m", "immediate", "-w", "stop"]);
  }

  /** The postmaster and all its children, postmaster first. */
  private processes(): number[] {
    const pidFile = join(this.dataDir, "postmaster.pid");
    if (!existsSync(pidFile)) return [];
    const postmaster = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
    const children: number[] = [];
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        // pid (comm) state ppid …: the command may hold spaces, so read after its closing parenthesis.
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        if (ppid === postmaster) children.push(Number(entry));
      } catch {
        // the process ended while being read
      }
    }
    return [postmaster, ...children];
  }

  /** SIGSTOP to the postmaster and every backend: connections are still accepted by the kernel, nothing answers. */
  freeze(): void {
    this.frozen = this.processes();
    for (const pid of this.frozen) process.kill(pid, "SIGSTOP");
  }

  /** SIGCONT to everything frozen, backends first. */
  thaw(): void {
    for (const pid of [...this.frozen].reverse()) {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // already gone
      }
    }
    this.frozen = [];
  }

  /** Stops the server (if running) and removes its folder; never throws, for after() hooks. */
  destroy(): void {
    this.thaw();
    if (existsSync(join(this.dataDir, "postmaster.pid"))) {
      try {
        this.run("pg_ctl", ["-D", this.dataDir, "-m", "immediate", "-w", "stop"]);
      } catch {
        // pg_ctl could not stop it: the processes are killed.
        for (const pid of this.processes()) {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            // already gone
          }
        }
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
