import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { zeebeClient, type ZeebeClient } from "../../workers/zeebe/worker.js";
import { ENGINE_START_TIMEOUT_MS, freePort, onRunEnd, ROOT } from "./process.js";

const PROJECT = join(ROOT, "test/engines/zeebe");
const VERSION = "8.6.0";
/** The camunda-zeebe distribution from Maven Central, unpacked by the project's build. */
const DIST = join(PROJECT, `target/camunda-zeebe-${VERSION}`);
const EXPORTER_JAR = join(PROJECT, "target/zeebe-records-exporter.jar");
/** The broker's class-data archive (AppCDS): written when a broker exits, read by the next start. */
const CDS_ARCHIVE = join(PROJECT, "target/broker.jsa");

let shared: Promise<ZeebeEngine> | undefined;

/** One record of the broker's log, as Zeebe's exporters see it. */
export interface ZeebeRecord {
  position: number;
  key: number;
  timestamp: number;
  valueType: string;
  intent: string;
  recordType: "EVENT" | "COMMAND" | "COMMAND_REJECTION";
  value: Record<string, unknown> & { processInstanceKey?: number; bpmnElementType?: string; elementId?: string };
}

/** The JDK the broker runs on: ZEEBE_JAVA_HOME, else the newest JDK ≥ 21 under /usr/lib/jvm (never JAVA_HOME). */
export function zeebeJavaHome(): string {
  const found = spawnSync("bash", [join(PROJECT, "java-home")], { encoding: "utf8" });
  if (found.status !== 0) throw new Error(found.stderr.trim());
  return found.stdout.trim();
}

/** Builds the exporter and unpacks the broker (test/engines/zeebe) when missing or older than their sources. */
function ensureBuilt(javaHome: string): void {
  const sources = ["pom.xml", "src/main/java/local/engines/zeebe/RecordsExporter.java"].map((f) => statSync(join(PROJECT, f)).mtimeMs);
  if (existsSync(join(DIST, "lib")) && existsSync(EXPORTER_JAR) && statSync(EXPORTER_JAR).mtimeMs > Math.max(...sources)) return;
  const build = spawnSync("mvn", ["-B", "-q", "-Dstyle.color=never", "package", "-DskipTests"], {
    cwd: PROJECT,
    encoding: "utf8",
    timeout: 900_000,
    env: { ...process.env, JAVA_HOME: javaHome },
  });
  if (build.status !== 0) throw new Error(`building the Zeebe broker failed:\n${build.stdout}\n${build.stderr}`);
}

async function answers(url: string): Promise<boolean> {
  return fetch(url, { signal: AbortSignal.timeout(2000) })
    .then((r) => r.ok)
    .catch(() => false);
}

/**
 * A real Zeebe 8.6 broker (one node, one partition, the gateway embedded) on free ports of
 * 127.0.0.1, its data in a temporary directory of its own; its records served by the project's
 * exporter (test/engines/zeebe).
 */
export class ZeebeEngine {
  readonly client: ZeebeClient;
  /** Milliseconds from the spawn to a broker ready to take commands. */
  startupMs = 0;

  private constructor(
    readonly address: string,
    private readonly recordsUrl: string,
    private readonly child: ChildProcess,
    private readonly home: string,
  ) {
    this.client = zeebeClient({ address });
  }

  /**
   * The broker the test files share (started by the first that asks, stopped after every suite):
   * a start costs 20–100 s here. The files keep apart by their own process instances.
   */
  static shared(): Promise<ZeebeEngine> {
    if (shared === undefined) {
      const starting = ZeebeEngine.start();
      shared = starting;
      starting.then(
        (engine) => onRunEnd(() => engine.stop()),
        () => (shared = undefined),
      );
    }
    return shared;
  }

  static async start(): Promise<ZeebeEngine> {
    const javaHome = zeebeJavaHome();
    ensureBuilt(javaHome);
    const [gateway, command, internal, server, management, records] = await Promise.all(Array.from({ length: 6 }, () => freePort()));
    const home = mkdtempSync(join(tmpdir(), "zeebe-broker-"));
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "",
      ZEEBE_BROKER_GATEWAY_ENABLE: "true",
      ZEEBE_BROKER_NETWORK_HOST: "127.0.0.1",
      ZEEBE_BROKER_GATEWAY_NETWORK_HOST: "127.0.0.1",
      ZEEBE_BROKER_GATEWAY_NETWORK_PORT: String(gateway),
      ZEEBE_BROKER_NETWORK_COMMANDAPI_PORT: String(command),
      ZEEBE_BROKER_NETWORK_INTERNALAPI_PORT: String(internal),
      ZEEBE_BROKER_DATA_DIRECTORY: join(home, "data"),
      ZEEBE_BROKER_THREADS_CPUTHREADCOUNT: "1",
      ZEEBE_BROKER_THREADS_IOTHREADCOUNT: "1",
      SERVER_ADDRESS: "127.0.0.1",
      SERVER_PORT: String(server),
      MANAGEMENT_SERVER_ADDRESS: "127.0.0.1",
      MANAGEMENT_SERVER_PORT: String(management),
      ZEEBE_BROKER_EXPORTERS_RECORDS_CLASSNAME: "local.engines.zeebe.RecordsExporter",
      ZEEBE_BROKER_EXPORTERS_RECORDS_JARPATH: EXPORTER_JAR,
      ZEEBE_BROKER_EXPORTERS_RECORDS_ARGS_PORT: String(records),
    };
    const args = [
      "-Xmx512m",
      "-XX:+ExitOnOutOfMemoryError",
      "-Dfile.encoding=UTF-8",
      `-XX:SharedArchiveFile=${CDS_ARCHIVE}`,
      "-XX:+AutoCreateSharedArchive",
      `-Xlog:cds*=info:file=${join(home, "cds.log")}`,
      `-Dapp.home=${home}`,
      // The class path holds jars only (a class-data archive refuses a directory in it): the
      // distribution's configuration is read from its folder.
      "-cp",
      join(DIST, "lib/*"),
      `-Dspring.config.additional-location=file:${join(DIST, "config")}/`,
      `-Dlogging.config=${join(DIST, "config/log4j2.xml")}`,
      "io.camunda.application.StandaloneBroker",
    ];
    const output = openSync(join(home, "broker.out"), "a");
    const began = performance.now();
    const child = spawn(join(javaHome, "bin/java"), args, { env, stdio: ["ignore", output, output] });
    const engine = new ZeebeEngine(`127.0.0.1:${gateway}`, `http://127.0.0.1:${records}/records`, child, home);
    const deadline = Date.now() + ENGINE_START_TIMEOUT_MS;
    try {
      // Ready: Spring's readiness (the broker has started its partition) and the exporter opened
      // (the partition's leader exports), then a topology with a healthy leader.
      while (!(await answers(`http://127.0.0.1:${management}/actuator/health/readiness`)) || !(await answers(`${engine.recordsUrl}?valueType=DEPLOYMENT`))) {
        if (child.exitCode !== null) throw new Error(`Zeebe exited with ${child.exitCode}`);
        if (Date.now() > deadline) throw new Error(`Zeebe did not become ready in ${ENGINE_START_TIMEOUT_MS} ms`);
        await new Promise((r) => setTimeout(r, 250));
      }
      for (;;) {
        const topology = await engine.client.topology().catch(() => undefined);
        if (topology?.brokers.some((b) => b.partitions.some((p) => String(p.role) === "LEADER" && String(p.health) === "HEALTHY"))) break;
        if (Date.now() > deadline) throw new Error(`Zeebe has no healthy partition leader after ${ENGINE_START_TIMEOUT_MS} ms`);
        await new Promise((r) => setTimeout(r, 250));
      }
    } catch (e) {
      const log = engine.log();
      await engine.stop();
      throw new Error(`${(e as Error).message}; the broker's last lines:\n${log.split("\n").slice(-40).join("\n")}`, { cause: e });
    }
    engine.startupMs = performance.now() - began;
    return engine;
  }

  /** What the broker wrote so far (its console output). */
  log(): string {
    try {
      return readFileSync(join(this.home, "broker.out"), "utf8");
    } catch {
      return "";
    }
  }

  /** The broker's records of one value type (PROCESS_INSTANCE, JOB, INCIDENT, …), oldest first. */
  async records(valueType: string): Promise<ZeebeRecord[]> {
    const res = await fetch(`${this.recordsUrl}?valueType=${encodeURIComponent(valueType)}`);
    if (!res.ok) throw new Error(`records ${valueType}: ${res.status}`);
    return (await res.json()) as ZeebeRecord[];
  }

  private async ofInstance(valueType: string, processInstanceKey: string): Promise<ZeebeRecord[]> {
    return (await this.records(valueType)).filter((r) => r.recordType === "EVENT" && String(r.value.processInstanceKey) === String(processInstanceKey));
  }

  /** Incidents created for an instance. */
  async incidents(processInstanceKey: string): Promise<ZeebeRecord[]> {
    return (await this.ofInstance("INCIDENT", processInstanceKey)).filter((r) => r.intent === "CREATED");
  }

  /** The ids of the elements an instance completed, in order (the path it took). */
  async completedElements(processInstanceKey: string): Promise<string[]> {
    return (await this.ofInstance("PROCESS_INSTANCE", processInstanceKey)).filter((r) => r.intent === "ELEMENT_COMPLETED" && r.value.bpmnElementType !== "PROCESS").map((r) => String(r.value.elementId));
  }

  /** Waits until the instance has completed, or has an incident; answers which. */
  async settle(processInstanceKey: string, timeoutMs = 30_000): Promise<"ended" | "incident"> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const events = await this.ofInstance("PROCESS_INSTANCE", processInstanceKey);
      if (events.some((r) => r.intent === "ELEMENT_COMPLETED" && r.value.bpmnElementType === "PROCESS")) return "ended";
      if ((await this.incidents(processInstanceKey)).length > 0) return "incident";
      await new Promise((r) => setTimeout(r, 200));
    }
    // Which workers had its jobs, to tell a slow worker from one that swallowed a job.
    const batches = (await this.records("JOB_BATCH")).filter((r) => r.intent === "ACTIVATED" && JSON.stringify(r.value).includes(String(processInstanceKey)));
    const jobs = (await this.ofInstance("JOB", processInstanceKey)).map((r) => `${r.intent} ${String(r.value.worker)} retries ${String(r.value.retries)}`);
    throw new Error(`instance ${processInstanceKey} did not settle in ${timeoutMs} ms; jobs: ${jobs.join(", ")}; activated by: ${batches.map((b) => String(b.value.worker)).join(", ")}`);
  }

  /** The end event an instance reached. */
  async endEvent(processInstanceKey: string): Promise<string | undefined> {
    const ends = (await this.ofInstance("PROCESS_INSTANCE", processInstanceKey)).filter((r) => r.intent === "ELEMENT_COMPLETED" && r.value.bpmnElementType === "END_EVENT");
    return ends[0]?.value.elementId as string | undefined;
  }

  /** Stops the broker (SIGTERM: it shuts down cleanly and writes the class-data archive) and removes its data. */
  async stop(): Promise<void> {
    await this.client.close();
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once("exit", resolve));
      this.child.kill("SIGTERM");
      const timer = setTimeout(() => this.child.kill("SIGKILL"), 60_000);
      await exited;
      clearTimeout(timer);
    }
    if (process.env.ZEEBE_KEEP_HOME !== "1") rmSync(this.home, { recursive: true, force: true });
  }
}
