import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { connectAsync, type MqttClient } from "mqtt";
import { freePort } from "./process.js";

/** The machine's shared broker (never stopped by a test). */
export const SHARED_BROKER_URL = process.env.TEST_MQTT_URL ?? "mqtt://127.0.0.1:1883";

/**
 * A Mosquitto of the test's own, in the foreground as a child process: its own port, config and
 * persistence folder, so it can be stopped and started again (its sessions and queued messages
 * kept on disk) without touching the shared broker. Its queue per client is unbounded: a test
 * that streams tens of thousands of messages while the service is away loses none to the
 * broker's default limit (max_queued_messages 1000).
 */
export class TemporaryMosquitto {
  private child: ChildProcess | undefined;
  readonly log: string[] = [];

  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  static async start(): Promise<TemporaryMosquitto> {
    const dir = mkdtempSync(join(tmpdir(), "mosquitto-"));
    const broker = new TemporaryMosquitto(dir, await freePort());
    writeFileSync(
      broker.configFile,
      [
        `listener ${broker.port} 127.0.0.1`,
        "allow_anonymous true",
        // Run as root, mosquitto would change to the user `mosquitto`, who cannot write the folder.
        `user ${userInfo().username}`,
        "persistence true",
        `persistence_location ${dir}/`,
        "max_queued_messages 0",
        "max_inflight_messages 0",
        "log_dest stdout",
        "log_type error",
        "log_type warning",
        "",
      ].join("\n"),
    );
    await broker.resume();
    return broker;
  }

  get configFile(): string {
    return join(this.dir, "mosquitto.conf");
  }

  get url(): string {
    return `mqtt://127.0.0.1:${this.port}`;
  }

  /** Starts the broker (again) on its port and persistence, and waits until it takes connections. */
  async resume(): Promise<void> {
    const child = spawn("mosquitto", ["-c", this.configFile], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (chunk: Buffer) => this.log.push(chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => this.log.push(chunk.toString()));
    this.child = child;
    const deadline = Date.now() + 15_000;
    while (!(await listening(this.port))) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`mosquitto did not start on ${this.port}:\n${this.log.join("")}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Stops the broker with SIGTERM (it saves its sessions and queues to disk) and waits for its exit. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }

  /** Stops it and removes its folder; never throws, for after() hooks. */
  async destroy(): Promise<void> {
    await this.stop().catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** A publisher (MQTT 5, clean session) on the broker at `url`. */
export function publisher(url: string, clientId = `test-pub-${process.pid}-${Math.random().toString(36).slice(2)}`): Promise<MqttClient> {
  return connectAsync(url, { clientId, protocolVersion: 5, reconnectPeriod: 200 });
}

/** Ends the persistent session of `clientId` on the broker (a clean connection under its id), so a test leaves none behind. */
export async function dropSession(url: string, clientId: string): Promise<void> {
  const client = await connectAsync(url, { clientId, clean: true, protocolVersion: 5, reconnectPeriod: 0, properties: { sessionExpiryInterval: 0 } });
  await client.endAsync();
}
