import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { zeebeClient, type ZeebeClient } from "../../workers/zeebe/worker.js";
import { freePort, ROOT } from "./process.js";

const PROJECT = join(ROOT, "test/engines/zeebe");
const JAR = join(PROJECT, "target/zeebe-engine.jar");

/** One record of the engine's log, as Zeebe's exporters see it. */
export interface ZeebeRecord {
  position: number;
  key: number;
  timestamp: number;
  valueType: string;
  intent: string;
  recordType: "EVENT" | "COMMAND" | "COMMAND_REJECTION";
  value: Record<string, unknown> & { processInstanceKey?: number; bpmnElementType?: string; elementId?: string };
}

function ensureJar(): void {
  const sources = ["pom.xml", "src/main/java/local/engines/zeebe/EngineMain.java"].map((f) => statSync(join(PROJECT, f)).mtimeMs);
  if (existsSync(JAR) && statSync(JAR).mtimeMs > Math.max(...sources)) return;
  const build = spawnSync("mvn", ["-B", "-q", "-Dstyle.color=never", "package", "-DskipTests"], { cwd: PROJECT, encoding: "utf8", timeout: 900_000 });
  if (build.status !== 0) throw new Error(`building the Zeebe engine failed:\n${build.stdout}\n${build.stderr}`);
}

/** A real Zeebe engine (zeebe-process-test-engine) with its gRPC gateway on a free port. */
export class ZeebeEngine {
  readonly client: ZeebeClient;

  private constructor(
    readonly address: string,
    private readonly recordsUrl: string,
    private readonly child: ChildProcess,
  ) {
    this.client = zeebeClient({ address });
  }

  static async start(): Promise<ZeebeEngine> {
    ensureJar();
    const port = await freePort();
    const recordsPort = await freePort();
    const child = spawn("java", ["-Xmx512m", "-jar", JAR, String(port), String(recordsPort)], { stdio: ["ignore", "pipe", "ignore"] });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("Zeebe did not become ready in 60 s")), 60_000);
      child.stdout!.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("zeebe engine ready")) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code) => reject(new Error(`Zeebe exited with ${code}`)));
    });
    return new ZeebeEngine(`127.0.0.1:${port}`, `http://127.0.0.1:${recordsPort}/records`, child);
  }

  /** The engine's records of one value type (PROCESS_INSTANCE, JOB, INCIDENT, …), oldest first. */
  async records(valueType: string): Promise<ZeebeRecord[]> {
    const res = await fetch(`${this.recordsUrl}?valueType=${encodeURIComponent(valueType)}`);
    if (!res.ok) throw new Error(`records ${valueType}: ${res.status}`);
    return (await res.json()) as ZeebeRecord[];
  }

  private async ofInstance(valueType: string, processInstanceKey: string): Promise<ZeebeRecord[]> {
    return (await this.records(valueType)).filter((r) => r.recordType === "EVENT" && String(r.value.processInstanceKey) === String(processInstanceKey));
  }

  /** Moves the engine's clock forward: due timers and job back-offs fire. */
  async addTime(ms: number): Promise<void> {
    const res = await fetch(`${this.recordsUrl.replace(/\/records$/, "/clock")}?addMillis=${ms}`, { method: "POST" });
    if (res.status !== 204) throw new Error(`clock: ${res.status}`);
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

  async stop(): Promise<void> {
    await this.client.close();
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.kill("SIGTERM");
    await exited;
  }
}
