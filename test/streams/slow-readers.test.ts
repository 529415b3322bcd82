import { readFileSync } from "node:fs";
import { expect } from "chai";
import type { RunningProcess } from "../support/process.js";
import { randomTenant, TEST_DATABASE_URL } from "../support/backends.js";
import { call, createItem, startReplica, StreamClient } from "../support/streams.js";
import { adminToken } from "../support/tokens.js";

const T0 = Date.UTC(2025, 0, 1);
const SUBSCRIBERS = 20;
const POSTS = 4;
const EVENTS_PER_POST = 20_000;
/** The default STREAM_BUFFER_BYTES. */
const BUFFER_BYTES = 1024 * 1024;

/** The client's TCP socket, paused so that it reads nothing: its kernel buffers fill, then the server's. */
function rawSocket(client: StreamClient): { pause(): void; resume(): void } {
  return (client.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
}

/**
 * Issue 24 item 4: twenty subscribers that never read, four posts of 20,000 events. Fanning the
 * events out must not stall the process: /health answers within a second throughout (the issue's
 * bound), and each slow subscriber is dropped with 4408 having been sent a bounded amount.
 */
describe("live streams: slow readers do not stall the server", function () {
  this.timeout(180_000);
  let server: { process: RunningProcess; base: string; ws: string };

  before(async () => {
    server = await startReplica(TEST_DATABASE_URL);
  });
  after(async () => { server.process.child.kill("SIGTERM"); await server.process.exited; });

  it("keeps /health under a second while 20 subscribers that never read are dropped with 4408", async () => {
    const token = await adminToken();
    const tenant = randomTenant();
    const item = await createItem(server.base, token, tenant, { itemAction: "STREAM" });
    const clients = Array.from({ length: SUBSCRIBERS }, () => new StreamClient(`${server.ws}/items/${item}/stream`, { token, tenant }));
    const received = clients.map(() => 0);
    clients.forEach((c, i) => c.socket.on("message", (data: Buffer) => (received[i]! += data.length)));
    try {
      await Promise.all(clients.map((c) => c.subscribed()));
      clients.forEach((c) => rawSocket(c).pause());

      // /health, one request after the other, each timed, until the posts are done and every subscriber dropped.
      const answers: { status: number; ms: number }[] = [];
      let polling = true;
      const poller = (async () => {
        while (polling) {
          const started = performance.now();
          const res = await fetch(`${server.base}/health`, { signal: AbortSignal.timeout(20_000) });
          await res.arrayBuffer();
          answers.push({ status: res.status, ms: performance.now() - started });
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();

      const sourceId = `meter-${"s".repeat(40)}`;
      for (let p = 0; p < POSTS; p++) {
        const events = Array.from({ length: EVENTS_PER_POST }, (_, i) => ({ timestamp: new Date(T0 + (p * EVENTS_PER_POST + i) * 1000).toISOString(), value: i, sourceId }));
        const res = await call(server.base, token, tenant, "POST", `/items/${item}/events`, { events });
        expect(res).to.deep.equal({ status: 200, body: { stored: 0, streamed: EVENTS_PER_POST } });
      }
      // Every subscriber is dropped (the server logs each). The polling stops before they read again
      // (at once, before the server ends their sockets): reading megabytes keeps this process busy.
      await waitForLines(server.process, /stream subscriber dropped/, SUBSCRIBERS, 60_000);
      polling = false;
      await poller;
      clients.forEach((c) => rawSocket(c).resume());
      const closes = await Promise.all(clients.map((c) => c.closed));

      expect(closes.map((c) => c.code)).to.deep.equal(clients.map(() => 4408));
      expect(answers.length).to.be.above(5);
      expect(answers.filter((a) => a.status !== 200)).to.deep.equal([]);
      // The responsiveness bound: /health answers within 1 s throughout.
      const slowest = Math.max(...answers.map((a) => a.ms));
      expect(slowest, `slowest /health: ${Math.round(slowest)} ms`).to.be.below(1000);
      // Each received at most what the server may hold for it (STREAM_BUFFER_BYTES) and what the kernel's
      // socket buffers took before that (the server's send buffer, the client's receive buffer), not
      // the 80,000 events (~15 MB) posted. Measured here: ~4.3 MB each.
      const bound = BUFFER_BYTES + kernelSocketBuffers();
      for (const [i, c] of clients.entries()) {
        expect(received[i], `subscriber ${i}: ${c.events.length} events, ${received[i]} bytes`).to.be.below(bound);
      }
    } finally {
      clients.forEach((c) => c.close());
    }
  });
});

/** The most a TCP connection's kernel buffers hold: the send buffer's maximum and the receive buffer's default (Linux; else 4 MiB + 128 KiB). */
function kernelSocketBuffers(): number {
  const read = (name: string, index: number, fallback: number) => {
    try {
      return Number(readFileSync(`/proc/sys/net/ipv4/${name}`, "utf8").trim().split(/\s+/)[index]);
    } catch {
      return fallback;
    }
  };
  return read("tcp_wmem", 2, 4 * 1024 * 1024) + read("tcp_rmem", 1, 128 * 1024);
}

/** Resolves once `count` lines of the process match `pattern`. */
async function waitForLines(process: RunningProcess, pattern: RegExp, count: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (process.lines.filter((l) => pattern.test(l)).length < count) {
    if (Date.now() > deadline) throw new Error(`${process.lines.filter((l) => pattern.test(l)).length} of ${count} lines matching ${pattern} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
