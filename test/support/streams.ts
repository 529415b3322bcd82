import { randomUUID } from "node:crypto";
import { expect } from "chai";
import WebSocket from "ws";
import { freePort, startNode, type RunningProcess } from "./process.js";
import { TEST_JWT_SECRET } from "./tokens.js";

/** The service as a process of its own on PostgreSQL (`url`), listening on a free port. */
export async function startReplica(url: string, env: Record<string, string> = {}): Promise<{ process: RunningProcess; base: string; ws: string }> {
  const port = await freePort();
  const child = startNode("dist/src/main.js", { DATABASE_URL: url, PORT: String(port), HOST: "127.0.0.1", JWT_SECRET: TEST_JWT_SECRET, TRANSFORM_PROCESSES: "1", ...env });
  try {
    await child.waitFor(/"message":"listening"/, 30_000);
  } catch (err) {
    child.kill();
    throw err;
  }
  return { process: child, base: `http://127.0.0.1:${port}`, ws: `ws://127.0.0.1:${port}` };
}

/** Sends a JSON request with the token and tenant; answers status and parsed body. */
export async function call(base: string, token: string, tenant: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenant, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : (JSON.parse(text) as unknown) };
}

/** Creates an Item of the tenant with the attributes given; answers its id. */
export async function createItem(base: string, token: string, tenant: string, attributes: Record<string, unknown> = { itemAction: "INGEST" }): Promise<string> {
  const id = randomUUID();
  const res = await call(base, token, tenant, "POST", "/graph/entities", { entities: [{ type: "Item", key: `item-${id}`, id, attributes }] });
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return id;
}

/** A WebSocket client that keeps every message and tells how it closed. */
export class StreamClient {
  readonly messages: { type: string; itemId?: string; event?: { timestamp: string; value: number; [k: string]: unknown }; bucket?: { timestamp: string; value: number | null } }[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly socket: WebSocket;
  private waiters: (() => void)[] = [];

  constructor(url: string, options: { token?: string; tenant?: string; autoPong?: boolean } = {}) {
    const headers: Record<string, string> = {};
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    if (options.tenant !== undefined && options.token !== undefined) headers["x-tenant-id"] = options.tenant;
    this.socket = new WebSocket(url, { headers, autoPong: options.autoPong ?? true });
    this.socket.on("message", (data) => {
      this.messages.push(JSON.parse(data.toString()) as StreamClient["messages"][number]);
      this.waiters.forEach((w) => w());
    });
    this.socket.on("error", () => {});
    this.closed = new Promise((resolve) => this.socket.once("close", (code, reason) => {
      resolve({ code, reason: reason.toString() });
      this.waiters.forEach((w) => w());
    }));
  }

  /** The event messages received. */
  get events(): NonNullable<StreamClient["messages"][number]["event"]>[] {
    return this.messages.filter((m) => m.type === "event").map((m) => m.event!);
  }

  /** Resolves once `test` holds over the messages; rejects when the socket closes first or after `timeoutMs`. */
  until(test: (client: StreamClient) => boolean, what: string, timeoutMs = 15_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`${what}: not within ${timeoutMs} ms; received ${JSON.stringify(this.messages).slice(0, 500)}`)), timeoutMs);
      const done = (err?: Error) => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== check);
        if (err !== undefined) reject(err);
        else resolve();
      };
      const check = () => {
        if (test(this)) done();
        else if (this.socket.readyState === WebSocket.CLOSED) done(new Error(`${what}: the socket closed first; received ${JSON.stringify(this.messages).slice(0, 500)}`));
      };
      this.waiters.push(check);
      check();
    });
  }

  /** Waits for the server's `subscribed` message: events committed from then on are pushed. */
  subscribed(): Promise<void> {
    return this.until((c) => c.messages.some((m) => m.type === "subscribed"), "subscribed");
  }

  send(message: unknown): void {
    const go = () => this.socket.send(JSON.stringify(message));
    if (this.socket.readyState === WebSocket.OPEN) go();
    else this.socket.once("open", go);
  }

  close(): void {
    this.socket.terminate();
  }
}

/** `n` events a second apart from `start`, values from `first`. */
export function eventsFrom(start: number, n: number, first = 0, extra: Record<string, unknown> = {}): { timestamp: string; value: number }[] {
  return Array.from({ length: n }, (_, i) => ({ timestamp: new Date(start + i * 1000).toISOString(), value: first + i, ...extra }));
}
