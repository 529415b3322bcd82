/**
 * Live-stream fan-out: events posted through REST to a STREAM item are pushed to 100 WebSocket
 * subscribers; the subscribers are on process A, the posts go to process B (two replicas on one
 * PostgreSQL, LISTEN/NOTIFY between them). Reports events per second delivered (all subscribers)
 * and the post-to-delivery delay (p50, p99), next to the baseline: the same posts to an INGEST
 * item with nobody subscribed (REST ingestion alone), measured in the same run.
 *
 *   npm run build && npx node dist/bench/streams.js [--subscribers=100] [--posts=200] [--batch=10] [--database-url=…]
 */
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { SignJWT } from "jose";
import { freePort, startNode, type RunningProcess } from "../test/support/process.js";
import { option, percentile, waitForHealth } from "./harness.js";

const subscribers = Number(option("subscribers", "100"));
const posts = Number(option("posts", "200"));
const batch = Number(option("batch", "10"));
const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/test");
const SECRET = "bench-secret-that-is-at-least-32-bytes-long";

async function replica(): Promise<{ process: RunningProcess; port: number }> {
  const port = await freePort();
  const child = startNode("dist/src/main.js", { DATABASE_URL: databaseUrl, JWT_SECRET: SECRET, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn", TRANSFORM_PROCESSES: "1" });
  await waitForHealth(port);
  return { process: child, port };
}

async function main(): Promise<void> {
  const [a, b] = await Promise.all([replica(), replica()]);
  try {
    const tenant = `bench-streams-${randomUUID()}`;
    const token = await new SignJWT({ roles: ["admin"], tenants: [tenant] }).setProtectedHeader({ alg: "HS256" }).setSubject("bench").setExpirationTime("1h").sign(new TextEncoder().encode(SECRET));
    const headers = { authorization: `Bearer ${token}`, "x-tenant-id": tenant, "content-type": "application/json" };
    const baseB = `http://127.0.0.1:${b.port}`;
    const item = async (itemAction: string) => {
      const id = randomUUID();
      const res = await fetch(`${baseB}/graph/entities`, { method: "POST", headers, body: JSON.stringify({ entities: [{ type: "Item", key: id, id, attributes: { itemAction } }] }) });
      if (res.status !== 200) throw new Error(`item: ${res.status}`);
      return id;
    };
    const postAll = async (itemId: string) => {
      const started = performance.now();
      for (let p = 0; p < posts; p++) {
        const sentAt = Date.now();
        const events = Array.from({ length: batch }, (_, i) => ({ timestamp: new Date(Date.UTC(2025, 0, 1) + (p * batch + i) * 1000).toISOString(), value: sentAt }));
        const res = await fetch(`${baseB}/items/${itemId}/events`, { method: "POST", headers, body: JSON.stringify({ events }) });
        if (res.status !== 200) throw new Error(`post: ${res.status} ${await res.text()}`);
      }
      return performance.now() - started;
    };

    // Baseline: REST ingestion alone, nobody subscribed.
    const baselineMs = await postAll(await item("INGEST"));

    const stream = await item("STREAM");
    const total = posts * batch;
    const delays: number[] = [];
    let delivered = 0;
    let lastDelivery = 0;
    let allDelivered!: () => void;
    const done = new Promise<void>((resolve) => (allDelivered = resolve));
    const sockets = await Promise.all(
      Array.from({ length: subscribers }, () => new Promise<WebSocket>((resolve, reject) => {
        const ws = new WebSocket(`ws://127.0.0.1:${a.port}/items/${stream}/stream`, { headers: { authorization: headers.authorization, "x-tenant-id": tenant } });
        ws.on("message", (data) => {
          const message = JSON.parse(data.toString()) as { type: string; event?: { value: number } };
          if (message.type === "subscribed") return resolve(ws);
          if (message.type !== "event") return;
          delays.push(Date.now() - message.event!.value);
          delivered++;
          lastDelivery = performance.now();
          if (delivered === total * subscribers) allDelivered();
        });
        ws.on("close", (code) => reject(new Error(`closed ${code}`)));
        ws.on("error", reject);
      })),
    );
    const started = performance.now();
    const postingMs = await postAll(stream);
    await done;
    const streamMs = lastDelivery - started;
    sockets.forEach((ws) => ws.terminate());

    delays.sort((x, y) => x - y);
    const rate = (n: number, ms: number) => Math.round((n / ms) * 1000);
    console.log(`${subscribers} subscribers on A, ${posts} posts of ${batch} events to B (${total} events)`);
    console.log(`baseline, REST ingestion alone (INGEST item, no subscriber): ${baselineMs.toFixed(0)} ms, ${rate(total, baselineMs)} events/s posted`);
    console.log(`streamed (STREAM item): posting ${postingMs.toFixed(0)} ms (${(postingMs / baselineMs).toFixed(2)}× the baseline), ${rate(total, postingMs)} events/s posted`);
    console.log(`delivered ${delivered} messages in ${streamMs.toFixed(0)} ms: ${rate(delivered, streamMs)} events/s delivered (all subscribers)`);
    console.log(`post-to-delivery delay: p50 ${percentile(delays, 50)} ms, p99 ${percentile(delays, 99)} ms, max ${delays[delays.length - 1]} ms`);
  } finally {
    a.process.kill();
    b.process.kill();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
