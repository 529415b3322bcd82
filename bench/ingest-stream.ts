/**
 * Streams one million events as NDJSON through `POST /items/{id}/events` to the server running as
 * its own process with its old-generation heap capped at 64 MiB — less than the one million event
 * objects take when held at once (measured in this process, the same run) — and reports the
 * server's peak memory. The upload succeeding is the proof that it streams.
 *
 *   npm run build && node --expose-gc dist/bench/ingest-stream.js [--events=1000000] [--backend=postgres|embedded] [--heap=64]
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT } from "jose";
import { freePort, startNode } from "../test/support/process.js";
import { option } from "./harness.js";

const events = Number(option("events", "1000000"));
const backend = option("backend", "postgres");
const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/test");
const heapMiB = Number(option("heap", "64"));
const SECRET = "bench-secret-that-is-at-least-32-bytes-long";

/** Peak resident memory of a process, in MiB (VmHWM). */
function peakMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmHWM:"))!;
  return Number(line.replace(/\D+/g, "")) / 1024;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "bench-ingest-"));
  const port = await freePort();
  const env: Record<string, string> = {
    JWT_SECRET: SECRET,
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    DATA_DIR: dir,
    NODE_OPTIONS: `--max-old-space-size=${heapMiB}`,
  };
  if (backend === "postgres") env.DATABASE_URL = databaseUrl;
  const server = startNode("dist/src/main.js", env);
  const tenant = `bench-stream-${randomUUID()}`;
  try {
    await server.waitFor(/listening/).catch(() => undefined);
    for (let i = 0; i < 100 && !(await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok).catch(() => false)); i++) await new Promise((r) => setTimeout(r, 200));
    const token = await new SignJWT({ roles: ["admin"], tenants: [tenant] }).setProtectedHeader({ alg: "HS256" }).setSubject("bench").setExpirationTime("1h").sign(new TextEncoder().encode(SECRET));
    const headers = { authorization: `Bearer ${token}`, "x-tenant-id": tenant };
    const created = (await (
      await fetch(`http://127.0.0.1:${port}/graph/entities`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ entities: [{ type: "Item", key: "stream" }] }) })
    ).json()) as { entities: { id: string }[] };
    const itemId = created.entities[0]!.id;
    const before = peakMiB(server.child.pid!);

    const started = performance.now();
    const answer = await new Promise<string>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, method: "POST", path: `/items/${itemId}/events`, headers: { ...headers, "content-type": "application/x-ndjson" } }, (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve(body));
      });
      req.on("error", reject);
      let i = 0;
      const base = Date.UTC(2024, 0, 1);
      const write = () => {
        while (i < events) {
          let chunk = "";
          for (let k = 0; k < 1000 && i < events; k++, i++) chunk += `{"timestamp":"${new Date(base + i * 1000).toISOString()}","value":${i % 1000}}\n`;
          if (!req.write(chunk)) return void req.once("drain", write);
        }
        req.end();
      };
      write();
    });
    const seconds = (performance.now() - started) / 1000;
    const after = peakMiB(server.child.pid!);

    // Baseline: the same events as objects, all held at once.
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const held = Array.from({ length: events }, (_, i) => ({ timestamp: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString(), value: i % 1000 }));
    const heldMiB = (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024;

    console.log(`${backend}: streamed ${events.toLocaleString("en")} events as NDJSON in ${seconds.toFixed(1)} s (${Math.round(events / seconds).toLocaleString("en")} events/s): ${answer}`);
    console.log(`server (old-generation heap capped at ${heapMiB} MiB) peak resident memory: ${before.toFixed(0)} MiB before, ${after.toFixed(0)} MiB after (+${(after - before).toFixed(0)} MiB)`);
    console.log(`the same events held as ${held.length.toLocaleString("en")} objects: ${heldMiB.toFixed(0)} MiB; growth / held = ${((after - before) / heldMiB).toFixed(2)}`);
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
    if (backend === "postgres") {
      const { default: knexFactory } = await import("knex");
      const knex = knexFactory({ client: "pg", connection: databaseUrl });
      await knex("events").where({ tenant }).del();
      await knex("entities").where({ tenant }).del();
      await knex.destroy();
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
