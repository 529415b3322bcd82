import { expect } from "chai";
import type { RunningProcess } from "../support/process.js";
import { randomTenant, TEST_DATABASE_URL } from "../support/backends.js";
import { call, createItem, eventsFrom, startReplica, StreamClient } from "../support/streams.js";
import { adminToken, hsToken, userToken } from "../support/tokens.js";

const T0 = Date.UTC(2025, 0, 1);

/**
 * Live streams across two server processes on one PostgreSQL (contract §10): a subscriber on A
 * receives what is posted to B, through LISTEN/NOTIFY.
 */
describe("live streams across two processes on PostgreSQL", function () {
  this.timeout(60_000);
  let a: { process: RunningProcess; base: string; ws: string };
  let b: { process: RunningProcess; base: string; ws: string };
  let token: string;
  let tenant: string;
  const clients: StreamClient[] = [];
  const client = (url: string, options: ConstructorParameters<typeof StreamClient>[1] = { token, tenant }) => {
    const c = new StreamClient(url, options);
    clients.push(c);
    return c;
  };

  before(async () => {
    // A small buffer so that a slow subscriber is dropped after a few hundred kilobytes.
    const env = { STREAM_BUFFER_BYTES: "65536" };
    [a, b] = await Promise.all([startReplica(TEST_DATABASE_URL, env), startReplica(TEST_DATABASE_URL, env)]);
    token = await adminToken();
  });
  beforeEach(() => {
    tenant = randomTenant();
  });
  afterEach(() => {
    clients.splice(0).forEach((c) => c.close());
  });
  after(() => {
    a?.process.kill();
    b?.process.kill();
  });

  it("pushes the events posted to B to a subscriber on A, in order, after they are committed", async () => {
    const item = await createItem(b.base, token, tenant);
    const sub = client(`${a.ws}/items/${item}/stream`);
    await sub.subscribed();
    for (let k = 0; k < 5; k++) {
      const res = await call(b.base, token, tenant, "POST", `/items/${item}/events`, { events: eventsFrom(T0 + k * 10_000, 10, k * 10) });
      expect(res).to.deep.equal({ status: 200, body: { stored: 10 } });
    }
    await sub.until((c) => c.events.length === 50, "50 events");
    expect(sub.events.map((e) => e.value)).to.deep.equal(Array.from({ length: 50 }, (_, i) => i));
    expect(sub.messages.filter((m) => m.type === "event").every((m) => m.itemId === item)).to.equal(true);
    expect(sub.events[0]).to.deep.equal({ timestamp: new Date(T0).toISOString(), value: 0 });
  });

  it("pushes a STREAM item's events without storing them, unless the item says persist", async () => {
    const streamed = await createItem(b.base, token, tenant, { itemAction: "STREAM" });
    const persisted = await createItem(b.base, token, tenant, { itemAction: "STREAM", persist: true });
    const sub = client(`${a.ws}/streams?itemIds=${streamed},${persisted}`);
    await sub.subscribed();
    const posted = await call(b.base, token, tenant, "POST", "/events", {
      events: [
        { itemId: streamed, timestamp: new Date(T0).toISOString(), value: 1, tags: ["live"] },
        { itemId: persisted, timestamp: new Date(T0).toISOString(), value: 2 },
      ],
    });
    expect(posted).to.deep.equal({ status: 200, body: { stored: 1, streamed: 1 } });
    await sub.until((c) => c.events.length === 2, "two events");
    // One upload's events come in key order (item, then time): per item, in time order.
    const received = sub.messages.filter((m) => m.type === "event").sort((x, y) => (x.itemId === streamed ? -1 : 1) - (y.itemId === streamed ? -1 : 1));
    expect(received).to.deep.equal([
      { type: "event", itemId: streamed, event: { timestamp: new Date(T0).toISOString(), value: 1, tags: ["live"] } },
      { type: "event", itemId: persisted, event: { timestamp: new Date(T0).toISOString(), value: 2 } },
    ]);
    const range = { eventDateRange: { period: "Custom range", from: "2024-01-01T00:00:00Z", to: "2026-01-01T00:00:00Z" } };
    expect((await call(a.base, token, tenant, "POST", `/items/${streamed}/events/query`, range)).body).to.deep.equal({ events: [] });
    expect((await call(a.base, token, tenant, "POST", `/items/${persisted}/events/query`, range)).body).to.deep.equal({ events: [{ timestamp: new Date(T0).toISOString(), value: 2 }] });
  });

  it("delivers an event larger than a notification through the payload table", async () => {
    const item = await createItem(b.base, token, tenant, { itemAction: "STREAM" });
    const sub = client(`${a.ws}/items/${item}/stream`);
    await sub.subscribed();
    const keyValues = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, "x".repeat(400)]));
    const events = [...eventsFrom(T0, 3, 0), { timestamp: new Date(T0 + 3000).toISOString(), value: 3, keyValues }, ...eventsFrom(T0 + 4000, 3, 4)];
    expect((await call(b.base, token, tenant, "POST", `/items/${item}/events`, { events })).status).to.equal(200);
    await sub.until((c) => c.events.length === 7, "seven events");
    expect(sub.events.map((e) => e.value)).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);
    expect(sub.events[3]!.keyValues).to.deep.equal(keyValues);
  });

  it("sends only the subscribed items' events, and nothing of an upload that failed", async () => {
    const mine = await createItem(b.base, token, tenant);
    const other = await createItem(b.base, token, tenant);
    const sub = client(`${a.ws}/items/${mine}/stream`);
    await sub.subscribed();
    const bad = await call(b.base, token, tenant, "POST", `/items/${mine}/events`, { events: [{ timestamp: new Date(T0).toISOString(), value: 1 }, { timestamp: "yesterday", value: 2 }] });
    expect(bad.status).to.equal(400);
    await call(b.base, token, tenant, "POST", `/items/${other}/events`, { events: eventsFrom(T0, 2, 100) });
    await call(b.base, token, tenant, "POST", `/items/${mine}/events`, { events: eventsFrom(T0, 1, 7) });
    await sub.until((c) => c.events.length >= 1, "one event");
    // The last post's event arrives after anything the earlier posts could have sent.
    expect(sub.events).to.deep.equal([{ timestamp: new Date(T0).toISOString(), value: 7 }]);
  });

  it("authenticates by a first message, as browsers must", async () => {
    const item = await createItem(b.base, token, tenant);
    const sub = client(`${a.ws}/items/${item}/stream`, {});
    sub.send({ type: "auth", token, tenant });
    await sub.subscribed();
    await call(b.base, token, tenant, "POST", `/items/${item}/events`, { events: eventsFrom(T0, 1, 5) });
    await sub.until((c) => c.events.length === 1, "one event");
  });

  it("refuses a bad token (4401), a foreign tenant or a missing role (4403), and another tenant's item (4404)", async () => {
    const item = await createItem(b.base, token, tenant);
    const url = `${a.ws}/items/${item}/stream`;
    const expired = await hsToken({ roles: ["admin"], expiresIn: Math.floor(Date.now() / 1000) - 3600 });
    const foreign = await hsToken({ roles: ["admin"], tenants: ["someone-else"] });
    const refusals = [
      client(url, { token: `${token}x`, tenant }),
      client(url, { token: expired, tenant }),
      client(url, { token: foreign, tenant }),
      client(url, { token: await userToken(), tenant }),
      client(url, { token, tenant: randomTenant() }),
    ];
    const byMessage = client(url, {});
    byMessage.send({ type: "auth", token: foreign, tenant });
    const closes = await Promise.all([...refusals, byMessage].map((c) => c.closed));
    expect(closes.map((c) => c.code)).to.deep.equal([4401, 4401, 4403, 4403, 4404, 4403]);
    expect(closes[1]!.reason).to.equal("the token has expired");
    expect(closes[4]!.reason).to.equal(`there is no Item ${item} in this tenant`);
    expect([...refusals, byMessage].every((c) => c.messages.length === 0)).to.equal(true);
  });

  it("drops a subscriber that does not read (4408) while one that reads receives everything", async () => {
    const item = await createItem(b.base, token, tenant, { itemAction: "STREAM" });
    const slow = client(`${a.ws}/items/${item}/stream`);
    const fast = client(`${a.ws}/items/${item}/stream`);
    await Promise.all([slow.subscribed(), fast.subscribed()]);
    // The slow client stops reading its socket: its kernel buffers fill, then the server's.
    (slow.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    const tags = Array.from({ length: 20 }, (_, i) => `tag-${i}-${"y".repeat(40)}`);
    const batches = 40;
    const dropped = a.process.waitFor(/stream subscriber dropped/, 50_000);
    const posting = (async () => {
      for (let k = 0; k < batches; k++) {
        const res = await call(b.base, token, tenant, "POST", `/items/${item}/events`, { events: eventsFrom(T0 + k * 1_000_000, 500, k * 500, { tags }) });
        expect(res.status).to.equal(200);
      }
    })();
    // Read again at once: the server ends a dropped socket that does not take its close frame within 5 s.
    await dropped;
    (slow.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket.resume();
    const closed = await slow.closed;
    await posting;
    await fast.until((c) => c.events.length === batches * 500, "every event", 30_000);
    expect(closed).to.deep.equal({ code: 4408, reason: "too slow: more than 65536 bytes unread (STREAM_BUFFER_BYTES)" });
    expect(slow.events.length).to.be.below(batches * 500);
    expect(fast.socket.readyState).to.equal(fast.socket.OPEN);
  });

  it("resumes from a timestamp: the stored events from then on first, in order, then live ones", async () => {
    const item = await createItem(b.base, token, tenant);
    await call(b.base, token, tenant, "POST", `/items/${item}/events`, { events: eventsFrom(T0, 10, 0) });
    const sub = client(`${a.ws}/items/${item}/stream?since=${new Date(T0 + 4000).toISOString()}`);
    await sub.subscribed();
    await sub.until((c) => c.events.length === 6, "six stored events");
    await call(b.base, token, tenant, "POST", `/items/${item}/events`, { events: eventsFrom(T0 + 10_000, 2, 10) });
    await sub.until((c) => c.events.length === 8, "eight events");
    expect(sub.events.map((e) => e.value)).to.deep.equal([4, 5, 6, 7, 8, 9, 10, 11]);
  });
});

describe("live streams: connection life", function () {
  this.timeout(60_000);

  it("ends a connection that does not answer pings and keeps one that does", async () => {
    const replica = await startReplica(TEST_DATABASE_URL, { STREAM_PING_MS: "200" });
    try {
      const token = await adminToken();
      const tenant = randomTenant();
      const item = await createItem(replica.base, token, tenant);
      const deaf = new StreamClient(`${replica.ws}/items/${item}/stream`, { token, tenant, autoPong: false });
      const alive = new StreamClient(`${replica.ws}/items/${item}/stream`, { token, tenant });
      await Promise.all([deaf.subscribed(), alive.subscribed()]);
      const closed = await deaf.closed;
      expect(closed.code).to.equal(1006);
      expect(alive.socket.readyState).to.equal(alive.socket.OPEN);
      alive.close();
    } finally {
      replica.process.kill();
    }
  });

  it("closes its streams with 1001 going away when the process is stopped", async () => {
    const replica = await startReplica(TEST_DATABASE_URL);
    try {
      const token = await adminToken();
      const tenant = randomTenant();
      const item = await createItem(replica.base, token, tenant);
      const sub = new StreamClient(`${replica.ws}/items/${item}/stream`, { token, tenant });
      await sub.subscribed();
      replica.process.child.kill("SIGTERM");
      expect(await sub.closed).to.deep.equal({ code: 1001, reason: "the server is shutting down" });
      expect(await replica.process.exited).to.equal(0);
    } finally {
      replica.process.kill();
    }
  });
});
