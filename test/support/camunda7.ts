import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { TEST_DATABASE_URL } from "./backends.js";
import { ENGINE_START_TIMEOUT_MS, freePort, ROOT } from "./process.js";

/** An engine of the Camunda 7 API that the tests run: a Spring Boot project under test/engines. */
export interface Camunda7Kind {
  /** As test titles name it. */
  readonly name: string;
  /** The folder under test/engines (also the jar's name, `<project>-engine.jar`, and its Java package). */
  readonly project: "camunda7" | "operaton";
}

/** Camunda 7.24 (the last Community Edition) and Operaton (its Apache-2.0 continuation). */
export const CAMUNDA7_ENGINES: readonly Camunda7Kind[] = [
  { name: "Camunda 7.24", project: "camunda7" },
  { name: "Operaton 1.0.3", project: "operaton" },
];

/** Credentials for the engine REST API's HTTP basic authentication, which is off without them. */
/** How a test engine starts: with HTTP basic authentication on its REST API, or without. */
export interface Camunda7Options {
  basicAuth?: BasicAuth;
}

export interface BasicAuth {
  readonly user: string;
  readonly password: string;
}

/** Builds an engine project afresh (no class of a deleted source left) when its jar is missing or older than its sources; answers the jar. */
function ensureJar(kind: Camunda7Kind): string {
  const project = join(ROOT, "test/engines", kind.project);
  const jar = join(project, `target/${kind.project}-engine.jar`);
  const java = join("src/main/java/local/engines", kind.project);
  const sources = ["pom.xml", "src/main/resources/application.yaml", ...readdirSync(join(project, java)).map((f) => join(java, f))].map((f) => statSync(join(project, f)).mtimeMs);
  if (existsSync(jar) && statSync(jar).mtimeMs > Math.max(...sources)) return jar;
  const build = spawnSync("mvn", ["-B", "-q", "-Dstyle.color=never", "clean", "package", "-DskipTests"], { cwd: project, encoding: "utf8", timeout: 900_000 });
  if (build.status !== 0) throw new Error(`building ${kind.name} failed:\n${build.stdout}\n${build.stderr}`);
  return jar;
}

/** Runs one statement on the tests' PostgreSQL server (TEST_DATABASE_URL's), outside any database of the tests. */
async function onServer(sql: string): Promise<void> {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = "/postgres";
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A real Camunda 7 or Operaton (Spring Boot, engine-rest, Spin) on a free port of 127.0.0.1, on
 * PostgreSQL as production installs run it: each start creates a database of its own on the tests'
 * PostgreSQL server (the engine creates its tables in it), and stop() drops it. With `basicAuth`,
 * the REST API asks for those credentials (the engine creates the user at start), and the helpers
 * here send them.
 */
export class Camunda7Engine {
  /** Milliseconds from the spawn to an engine answering its REST API. */
  startupMs = 0;

  private constructor(
    readonly baseUrl: string,
    /** The engine's own database on the tests' PostgreSQL server. */
    readonly database: string,
    private readonly child: ChildProcess,
    readonly kind: Camunda7Kind,
    private readonly headers: Record<string, string>,
  ) {}

  static async start(kind: Camunda7Kind = CAMUNDA7_ENGINES[0]!, options: Camunda7Options = {}): Promise<Camunda7Engine> {
    const jar = ensureJar(kind);
    const port = await freePort();
    const database = `${kind.project}_${process.pid}_${randomBytes(4).toString("hex")}`;
    await onServer(`create database ${database}`);
    const server = new URL(TEST_DATABASE_URL);
    const { basicAuth } = options;
    // No SERVER_ADDRESS: the engine binds 127.0.0.1 by its own configuration, as when a person runs it.
    const child = spawn("java", ["-Xmx512m", "-jar", jar], {
      env: {
        ...process.env,
        SERVER_PORT: String(port),
        ...(basicAuth === undefined ? {} : { ENGINE_BASIC_AUTH_USER: basicAuth.user, ENGINE_BASIC_AUTH_PASSWORD: basicAuth.password }),
        SPRING_DATASOURCE_URL: `jdbc:postgresql://${server.hostname}:${server.port || "5432"}/${database}`,
        SPRING_DATASOURCE_USERNAME: decodeURIComponent(server.username) || "postgres",
        SPRING_DATASOURCE_PASSWORD: decodeURIComponent(server.password),
      },
      stdio: "ignore",
    });
    const began = performance.now();
    const headers: Record<string, string> = basicAuth === undefined ? {} : { authorization: `Basic ${Buffer.from(`${basicAuth.user}:${basicAuth.password}`).toString("base64")}` };
    const engine = new Camunda7Engine(`http://127.0.0.1:${port}/engine-rest`, database, child, kind, headers);
    const deadline = Date.now() + ENGINE_START_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) break;
      if (await fetch(`${engine.baseUrl}/engine`, { headers }).then((r) => r.ok).catch(() => false)) {
        engine.startupMs = performance.now() - began;
        return engine;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    const exitCode = child.exitCode;
    await engine.stop();
    throw new Error(exitCode !== null ? `${kind.name} exited with ${exitCode}` : `${kind.name} did not become ready in ${ENGINE_START_TIMEOUT_MS} ms`);
  }

  /** Stops the engine and drops its database. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGTERM");
      await exited;
    }
    await onServer(`drop database if exists ${this.database} with (force)`);
  }

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: body === undefined ? this.headers : { ...this.headers, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return (text === "" ? undefined : JSON.parse(text)) as T;
  }

  /** Deploys a BPMN file of the project, for a tenant when one is given; answers the deployment id. */
  async deploy(file: string, tenantId?: string): Promise<string> {
    const form = new FormData();
    form.append("deployment-name", file);
    if (tenantId !== undefined) form.append("tenant-id", tenantId);
    form.append("enable-duplicate-filtering", "true");
    form.append("data", new Blob([readFileSync(join(ROOT, file))]), file.split("/").pop()!);
    const res = await fetch(`${this.baseUrl}/deployment/create`, { method: "POST", body: form, headers: this.headers });
    if (!res.ok) throw new Error(`deploy ${file}: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { id: string }).id;
  }

  /** Starts an instance (of a tenant's deployment when one is given); values that are objects become Json variables. */
  async startInstance(key: string, variables: Record<string, unknown>, tenantId?: string): Promise<string> {
    const typed = Object.fromEntries(
      Object.entries(variables).map(([name, value]) => [name, typeof value === "object" && value !== null ? { value: JSON.stringify(value), type: "Json" } : { value, type: typeof value === "number" ? "Double" : "String" }]),
    );
    const definition = tenantId === undefined ? `/process-definition/key/${key}` : `/process-definition/key/${key}/tenant-id/${encodeURIComponent(tenantId)}`;
    return (await this.call<{ id: string }>("POST", `${definition}/start`, { variables: typed })).id;
  }

  /** Waits until the instance has ended, or has an incident; answers which. */
  async settle(instanceId: string, timeoutMs = 30_000): Promise<"ended" | "incident"> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const history = await this.call<{ state: string }>("GET", `/history/process-instance/${instanceId}`);
      if (history.state === "COMPLETED") return "ended";
      const incidents = await this.call<unknown[]>("GET", `/incident?processInstanceId=${instanceId}`);
      if (incidents.length > 0) return "incident";
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`instance ${instanceId} did not settle in ${timeoutMs} ms`);
  }

  async endEvent(instanceId: string): Promise<string | undefined> {
    const ends = await this.call<{ activityId: string }[]>("GET", `/history/activity-instance?processInstanceId=${instanceId}&activityType=noneEndEvent`);
    return ends[0]?.activityId;
  }

  async variable(instanceId: string, name: string): Promise<{ type: string; value: unknown } | undefined> {
    const found = await this.call<{ type: string; value: unknown }[]>("GET", `/history/variable-instance?processInstanceId=${instanceId}&variableName=${name}&deserializeValues=false`);
    return found[0];
  }
}
