import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { Camunda8 } from "@camunda8/sdk";
import { freePort, ROOT } from "./process.js";

const PROJECT = join(ROOT, "test/engines/zeebe");
const JAR = join(PROJECT, "target/zeebe-engine.jar");

function ensureJar(): void {
  const sources = ["pom.xml", "src/main/java/local/engines/zeebe/EngineMain.java"].map((f) => statSync(join(PROJECT, f)).mtimeMs);
  if (existsSync(JAR) && statSync(JAR).mtimeMs > Math.max(...sources)) return;
  const build = spawnSync("mvn", ["-B", "-q", "-Dstyle.color=never", "package", "-DskipTests"], { cwd: PROJECT, encoding: "utf8", timeout: 900_000 });
  if (build.status !== 0) throw new Error(`building the Zeebe engine failed:\n${build.stdout}\n${build.stderr}`);
}

/** A real Zeebe engine (zeebe-process-test-engine) with its gRPC gateway on a free port. */
export class ZeebeEngine {
  readonly client: ReturnType<Camunda8["getZeebeGrpcApiClient"]>;

  private constructor(
    readonly address: string,
    private readonly child: ChildProcess,
  ) {
    this.client = new Camunda8({ ZEEBE_GRPC_ADDRESS: `grpc://${address}`, CAMUNDA_AUTH_STRATEGY: "NONE", ZEEBE_CLIENT_LOG_LEVEL: "NONE", CAMUNDA_LOG_LEVEL: "none" } as never).getZeebeGrpcApiClient();
  }

  static async start(): Promise<ZeebeEngine> {
    ensureJar();
    const port = await freePort();
    const child = spawn("java", ["-Xmx512m", "-jar", JAR, String(port)], { stdio: ["ignore", "pipe", "ignore"] });
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
    return new ZeebeEngine(`127.0.0.1:${port}`, child);
  }

  async stop(): Promise<void> {
    await this.client.close();
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.kill("SIGTERM");
    await exited;
  }
}
