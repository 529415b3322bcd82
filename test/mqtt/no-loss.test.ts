import { randomUUID } from "node:crypto";
import { expect } from "chai";
import knexFactory, { type Knex } from "knex";
import type { MqttClient } from "mqtt";
import { randomTenant, TEST_DATABASE_URL } from "../support/backends.js";
import { publisher, TemporaryMosquitto } from "../support/mosquitto.js";
import { TemporaryPostgres } from "../support/pg-instance.js";
import { freePort, startNode, type RunningProcess } from "../support/process.js";
import { createItem } from "../support/streams.js";
import { adminToken, TEST_JWT_SECRET } from "../support/tokens.js";
import { waitUntil } from "../support/workers.js";

/** Bounds of the database connections, short so that an outage is seen quickly (as test/db/faults.test.ts). */
const DATABASE_LIMITS = {
  DATABASE_STATEMENT_TIMEOUT_MS: "2000",
  QUERY_TIMEOUT_MS: "1000",
  DATABASE_CONNECT_TIMEOUT_MS: "1000",
  DATABASE_ACQUIRE_TIMEOUT_MS: "2000",
  DATABASE_PROBE_TIMEOUT_MS: "500",
  DATABASE_KEEPALIVE_MS: "1000",
};

/** One event per message, a second apart: event `i` has the value `i`. */
function eventPayload(i: number): string {
  return JSON.stringify({ timestamp: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(), value: i, sourceId: "dev" });
}

/** Publishes messages `from` to `to - 1` with QoS 1, at most `window` awaiting the broker's PUBACK at once. */
async function publishRange(pub: MqttClient, topic: string, from: number, to: number, window = 500): Promise<void> {
  for (let start = from; start < to; start += window) {
    const end = Math.min(start + window, to);
    await Promise.all(Array.from({ length: end - start }, (_, k) => pub.publishAsync(topic, eventPayload(start + k), { qos: 1 })));
  }
}

/** Count, distinct timestamps and sum of values of the item's events. */
async function tally(knex: Knex, tenant: string, itemId: string): Promise<{ count: number; distinct: number; sum: number }> {
  const { rows } = (await knex.raw(`select count(*)::int as count, count(distinct ts)::int as distinct, coalesce(sum(value), 0)::float8 as sum from events where tenant = ? and item_id = ?`, [
    tenant,
    itemId,
  ])) as { rows: { count: number; distinct: number; sum: number }[] };
  return rows[0]!;
}

/** Every event 0 … n-1 stored exactly once. */
function exactlyOnce(n: number): { count: number; distinct: number; sum: number } {
  return { count: n, distinct: n, sum: (n * (n - 1)) / 2 };
}

/** A metric's value from the service's /metrics. */
async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(" ")[1]);
}

/**
 * The MQTT subscriber as its own process, against a Mosquitto of the test's own (so the broker can
 * be restarted, and queues without the default limit): no message lost, none stored twice.
 */
describe("MQTT ingestion with no message lost", function () {
  this.timeout(300_000);
  let broker: TemporaryMosquitto;
  let knex: Knex;
  const running: RunningProcess[] = [];
  const service = async (databaseUrl: string, env: Record<string, string>) => {
    const port = await freePort();
    const child = startNode("dist/src/main.js", { DATABASE_URL: databaseUrl, PORT: String(port), HOST: "127.0.0.1", JWT_SECRET: TEST_JWT_SECRET, TRANSFORM_PROCESSES: "1", ...DATABASE_LIMITS, MQTT_URL: broker.url, ...env });
    running.push(child);
    // A loaded machine (two cores, other suites) has taken over 30 s to start the service.
    await child.waitFor(/"message":"mqtt subscribed"/, 120_000);
    return { process: child, base: `http://127.0.0.1:${port}` };
  };

  before(async () => {
    broker = await TemporaryMosquitto.start();
    knex = knexFactory({ client: "pg", connection: TEST_DATABASE_URL, pool: { min: 0, max: 2 } });
  });
  afterEach(() => running.splice(0).forEach((p) => p.kill()));
  after(async () => {
    await knex?.destroy();
    await broker?.destroy();
  });

  it("stores every one of 50,000 events exactly once when the service is killed (SIGKILL) while they stream in", async () => {
    const n = 50_000;
    const env = { MQTT_CLIENT_ID: `kill-${randomUUID()}`, MQTT_TOPIC_PREFIX: "kill" };
    const first = await service(TEST_DATABASE_URL, env);
    const token = await adminToken();
    const tenant = randomTenant();
    const item = await createItem(first.base, token, tenant);
    const pub = await publisher(broker.url);
    try {
      const publishing = publishRange(pub, `kill/${tenant}/items/${item}/events`, 0, n);
      await waitUntil(async () => (await tally(knex, tenant, item)).count >= 10_000, "10,000 events stored before the kill", 120_000);
      first.process.kill();
      expect(await first.process.exited).to.equal(null);
      const stored = (await tally(knex, tenant, item)).count;
      expect(stored).to.be.below(n);
      // Started again under the same client id: its session, and every message left unacknowledged, is waiting.
      const second = await service(TEST_DATABASE_URL, env);
      await publishing;
      await waitUntil(async () => (await tally(knex, tenant, item)).count >= n, "all events stored after the restart", 180_000);
      await waitUntil(async () => (await metric(second.base, "mqtt_messages_unacked")) === 0, "everything acknowledged", 30_000);
      expect(await tally(knex, tenant, item)).to.deep.equal(exactlyOnce(n));
    } finally {
      await pub.endAsync();
    }
  });

  it("stops acknowledging while the database is down for 20 s, holding at most MQTT_MAX_IN_FLIGHT messages, then stores them all", async () => {
    const pg = await TemporaryPostgres.create();
    const own = knexFactory({ client: "pg", connection: pg.url(), pool: { min: 0, max: 2 } });
    const pub = await publisher(broker.url);
    try {
      const started = await service(pg.url(), { MQTT_CLIENT_ID: `outage-${randomUUID()}`, MQTT_TOPIC_PREFIX: "outage", MQTT_MAX_IN_FLIGHT: "300", MQTT_BATCH_MESSAGES: "100" });
      const token = await adminToken();
      const tenant = randomTenant();
      const item = await createItem(started.base, token, tenant);
      const topic = `outage/${tenant}/items/${item}/events`;
      await publishRange(pub, topic, 0, 1000);
      await waitUntil(async () => (await tally(own, tenant, item)).count === 1000, "the first 1,000 events stored");

      await own.destroy();
      pg.stopImmediately();
      const down = Date.now();
      await publishRange(pub, topic, 1000, 5000);
      // The messages wait: no more than MQTT_MAX_IN_FLIGHT held by the service, the rest in the broker.
      await waitUntil(async () => (await metric(started.base, "mqtt_messages_unacked")) >= 299, "the in-flight window full", 30_000);
      const held: number[] = [];
      while (Date.now() - down < 20_000) {
        held.push(await metric(started.base, "mqtt_messages_unacked"));
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(Math.max(...held)).to.be.at.most(300);
      expect(await metric(started.base, "mqtt_batch_failures_total")).to.be.above(0);
      expect(await metric(started.base, "mqtt_lag_seconds")).to.be.above(5);

      pg.start();
      const back = knexFactory({ client: "pg", connection: pg.url(), pool: { min: 0, max: 2 } });
      try {
        await waitUntil(async () => (await tally(back, tenant, item)).count >= 5000, "every event stored once the database is back", 120_000);
        await waitUntil(async () => (await metric(started.base, "mqtt_messages_unacked")) === 0, "everything acknowledged", 30_000);
        expect(await tally(back, tenant, item)).to.deep.equal(exactlyOnce(5000));
      } finally {
        await back.destroy();
      }
    } finally {
      await pub.endAsync();
      await own.destroy().catch(() => undefined);
      pg.destroy();
    }
  });

  it("connects again after the broker restarts, pausing longer between attempts, and loses nothing", async () => {
    const started = await service(TEST_DATABASE_URL, { MQTT_CLIENT_ID: `restart-${randomUUID()}`, MQTT_TOPIC_PREFIX: "restart" });
    const token = await adminToken();
    const tenant = randomTenant();
    const item = await createItem(started.base, token, tenant);
    const topic = `restart/${tenant}/items/${item}/events`;
    let pub = await publisher(broker.url);
    await publishRange(pub, topic, 0, 2000);
    await pub.endAsync();
    await broker.stop();
    // Down for 8 s: attempts after 1, 2 and 4 s fail, each pause twice the last.
    await new Promise((resolve) => setTimeout(resolve, 8000));
    expect(await metric(started.base, "mqtt_connected")).to.equal(0);
    const attempts = await metric(started.base, "mqtt_reconnects_total");
    expect(attempts).to.be.within(2, 4);
    await broker.resume();
    await waitUntil(() => started.process.lines.filter((l) => l.includes('"message":"mqtt subscribed"')).length === 2, "subscribed again", 30_000);
    await waitUntil(async () => (await metric(started.base, "mqtt_connected")) === 1, "connected again", 30_000);
    pub = await publisher(broker.url);
    try {
      await publishRange(pub, topic, 2000, 4000);
      await waitUntil(async () => (await tally(knex, tenant, item)).count >= 4000, "every event stored", 60_000);
      expect(await tally(knex, tenant, item)).to.deep.equal(exactlyOnce(4000));
      expect(started.process.lines.filter((l) => l.includes('"message":"mqtt connected"'))).to.have.length(2);
    } finally {
      await pub.endAsync();
    }
  });
});
