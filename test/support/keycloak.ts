import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { freePort, ROOT } from "./process.js";

const PROJECT = join(ROOT, "test/engines/keycloak");
/** The realm the test imports: clients, users, roles and groups (test/engines/keycloak/realm.json). */
export const KEYCLOAK_REALM = "process-service";
/** Keycloak on this 2-core machine took 60 to 330 s to start (its first start builds its configuration). */
export const KEYCLOAK_START_TIMEOUT_MS = 600_000;

/** The Keycloak version the pom unpacks. */
export function keycloakVersion(): string {
  const match = /<keycloak\.version>([^<]+)<\/keycloak\.version>/.exec(readFileSync(join(PROJECT, "pom.xml"), "utf8"));
  if (match?.[1] === undefined) throw new Error("test/engines/keycloak/pom.xml names no keycloak.version");
  return match[1];
}

/** The unpacked distribution (mvn package in test/engines/keycloak), built when missing. */
function ensureDistribution(version: string): string {
  const home = join(PROJECT, `target/keycloak-${version}`);
  if (existsSync(join(home, "bin/kc.sh")) && statSync(home).mtimeMs > statSync(join(PROJECT, "pom.xml")).mtimeMs) return home;
  const build = spawnSync("mvn", ["-B", "-q", "-Dstyle.color=never", "package"], { cwd: PROJECT, encoding: "utf8", timeout: 900_000 });
  if (build.status !== 0) throw new Error(`unpacking Keycloak ${version} failed:\n${build.stdout}\n${build.stderr}`);
  return home;
}

/** The major version of a JDK home, read from its `release` file; 0 when it has none. */
function javaMajor(home: string): number {
  try {
    const match = /^JAVA_VERSION="(\d+)/m.exec(readFileSync(join(home, "release"), "utf8"));
    return match?.[1] === undefined ? 0 : Number(match[1]);
  } catch {
    return 0;
  }
}

/** A JDK of version 21 or later (Keycloak 26 needs one): KEYCLOAK_JAVA_HOME, JAVA_HOME, else the newest under /usr/lib/jvm. */
export function keycloakJavaHome(): string {
  const candidates = [process.env.KEYCLOAK_JAVA_HOME, process.env.JAVA_HOME].filter((h): h is string => h !== undefined && h !== "");
  const installed = existsSync("/usr/lib/jvm") ? readdirSync("/usr/lib/jvm").map((d) => join("/usr/lib/jvm", d)) : [];
  const found = [...candidates, ...installed.sort((a, b) => javaMajor(b) - javaMajor(a))].find((h) => javaMajor(h) >= 21);
  if (found === undefined) throw new Error(`Keycloak 26 needs Java 21 or later; none found in KEYCLOAK_JAVA_HOME, JAVA_HOME or /usr/lib/jvm (${installed.join(", ")})`);
  return found;
}

/**
 * A real Keycloak (`start-dev`: HTTP, an in-memory database) on free ports of 127.0.0.1, with the
 * test realm imported; its issuer is fixed to http://127.0.0.1:<port>/realms/process-service.
 */
export class Keycloak {
  private constructor(
    readonly baseUrl: string,
    readonly version: string,
    readonly javaHome: string,
    private readonly child: ChildProcess,
    private readonly output: string[],
    /** Milliseconds from the spawn to the realm's discovery document answering. */
    readonly startupMs: number,
  ) {}

  get issuer(): string {
    return `${this.baseUrl}/realms/${KEYCLOAK_REALM}`;
  }

  static async start(): Promise<Keycloak> {
    const version = keycloakVersion();
    const home = ensureDistribution(version);
    const javaHome = keycloakJavaHome();
    mkdirSync(join(home, "data/import"), { recursive: true });
    copyFileSync(join(PROJECT, "realm.json"), join(home, "data/import", `${KEYCLOAK_REALM}-realm.json`));
    const [port, management] = [await freePort(), await freePort()];
    const baseUrl = `http://127.0.0.1:${port}`;
    const args = [
      "start-dev",
      "--import-realm",
      "--db=dev-mem",
      "--http-host=127.0.0.1",
      `--http-port=${port}`,
      `--http-management-port=${management}`,
      `--hostname=${baseUrl}`,
    ];
    // Detached: kc.sh starts java as its child; the whole group is stopped at the end.
    const child = spawn(join(home, "bin/kc.sh"), args, {
      env: { ...process.env, JAVA_HOME: javaHome, PATH: `${join(javaHome, "bin")}:${process.env.PATH ?? ""}` },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const output: string[] = [];
    const keep = (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.length > 400) output.splice(0, output.length - 400);
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    const began = performance.now();
    const deadline = Date.now() + KEYCLOAK_START_TIMEOUT_MS;
    const discovery = `${baseUrl}/realms/${KEYCLOAK_REALM}/.well-known/openid-configuration`;
    while (Date.now() < deadline && child.exitCode === null) {
      if (await fetch(discovery).then((r) => r.ok).catch(() => false)) {
        return new Keycloak(baseUrl, version, javaHome, child, output, performance.now() - began);
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
    const exitCode = child.exitCode;
    await stopGroup(child);
    const tail = output.join("").split("\n").slice(-40).join("\n");
    throw new Error(`Keycloak ${version} (Java ${javaMajor(javaHome)}, ${javaHome}) ${exitCode !== null ? `exited with ${exitCode}` : `was not ready in ${KEYCLOAK_START_TIMEOUT_MS} ms`}:\n${tail}`);
  }

  /** An access token from the realm's token endpoint (client credentials or password grant). */
  async token(form: Record<string, string>): Promise<string> {
    const res = await fetch(`${this.issuer}/protocol/openid-connect/token`, { method: "POST", body: new URLSearchParams(form) });
    const body = (await res.json()) as { access_token?: string; error?: string };
    if (!res.ok || body.access_token === undefined) throw new Error(`token request failed: ${res.status} ${JSON.stringify(body)}`);
    return body.access_token;
  }

  /** What Keycloak printed last, for a failure's message. */
  log(): string {
    return this.output.join("");
  }

  async stop(): Promise<void> {
    await stopGroup(this.child);
  }
}

async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  process.kill(-child.pid, "SIGTERM");
  const late = setTimeout(() => child.exitCode === null && child.pid !== undefined && process.kill(-child.pid, "SIGKILL"), 30_000);
  await exited;
  clearTimeout(late);
}
