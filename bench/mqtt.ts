/**
 * Sustained ingestion over MQTT next to the same events through `POST /events`, in one run, against
 * the server running as its own process on PostgreSQL. The MQTT side: a publisher on loopback
 * (QoS 1, at most --window messages awaiting the broker's PUBACK) into a Mosquitto of the bench's
 * own (its queue unbounded), for --mqtt-seconds; its rate is the events published over the time
 * until the last of them is stored (the drain counted). The HTTP side: --concurrency clients
 * posting the same events, grouped as the messages are (--per-message events per message and per
 * request), then in bodies of --bulk events, for --http-seconds each; the bulk upload is measured
 * again after the MQTT side, and MQTT compared with the mean of the two. The server's resident
 * memory (VmRSS) is sampled every 5 s of the MQTT side: flat when the last 30 s's peak is within
 * 1.25× the first's. Goal: MQTT ≥ 0.8× the bulk upload. MQTT_BATCH_MESSAGES, MQTT_MAX_IN_FLIGHT
 * and MQTT_LINGER_MS, when set, are passed to the server.
 *
 *   npm run build && node dist/bench/mqtt.js [--per-message=10] [--mqtt-seconds=120] [--http-seconds=30]
 *     [--bulk=1000] [--concurrency=8] [--window=2000] [--ahead=5000] [--spacing-ms=1000] [--database-url=postgres://…] [--profile=folder]
 *
 * CPU per 1,000 events is printed for each side, by process group: the bench process (the HTTP
 * clients, or the MQTT publisher), the server ("child processes"), its database's backends and the
 * bench's Mosquitto; on a 2-core machine they compete, so each side is charged its client too.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Agent } from "node:http";
import { SignJWT } from "jose";
import knexFactory from "knex";
import type { MqttClient } from "mqtt";
import { freePort, startNode } from "../test/support/process.js";
import { publisher, TemporaryMosquitto } from "../test/support/mosquitto.js";
import { cpuBetween, cpuPerUnit, cpuSnapshot, option, post, waitForHealth } from "./harness.js";

const perMessage = Number(option("per-message", "10"));
const mqttSeconds = Number(option("mqtt-seconds", "120"));
const httpSeconds = Number(option("http-seconds", "30"));
const concurrency = Number(option("concurrency", "8"));
const window = Number(option("window", "2000"));
/** Most messages published and not yet stored. */
const ahead = Number(option("ahead", "5000"));
/** Events per request of the second HTTP baseline: an upload's batch. */
const bulk = Number(option("bulk", "1000"));
const databaseUrl = option("database-url", "postgres://postgres@127.0.0.1:5432/test");
/** A folder: the server runs under `node --cpu-prof` and writes its profile there when stopped. */
const profileDir = option("profile", "");
const SECRET = "bench-secret-that-is-at-least-32-bytes-long";
const GOAL = 0.8;
const BASE_MS = Date.UTC(2026, 0, 1);
/**
 * Time between two events of an item (ms). The rollups' upkeep rebuilds every day an item was
 * written in from its events, every 2 s (src/timeseries/rollup-store.ts): with events 1 ms apart,
 * the run's events all fall in one day, which grows to millions of events, each rebuild reading
 * them all, and the longer side (MQTT) pays more per event. A second apart (a device reading once
 * a second), a rebuild reads a day of 86,400 events at most, on both sides alike.
 */
const spacingMs = Number(option("spacing-ms", "1000"));

/** Events `first` … `first + perMessage - 1`, a millisecond apart. */
function events(first: number, n = perMessage): { timestamp: string; value: number; sourceId: string }[] {
  return Array.from({ length: n }, (_, k) => ({ timestamp: new Date(BASE_MS + (first + k) * spacingMs).toISOString(), value: first + k, sourceId: "bench" }));
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))!;
  return Number(line.replace(/\D+/g, "")) / 1024;
}

/**
 * Publishes messages for `seconds`, at most `window` awaiting their PUBACK and at most `ahead`
 * messages ahead of those stored (`stored()`, polled): the broker's queue stays bounded, so the rate
 * is the one the service sustains. Answers how many were published, and the share of its 20 ms
 * turns that found the `ahead` bound reached (the publisher waiting for the service).
 */
function publishFor(client: MqttClient, topic: string, seconds: number, stored: () => number): Promise<{ sent: number; held: number }> {
  const end = Date.now() + seconds * 1000;
  let sent = 0;
  let acked = 0;
  let turns = 0;
  let held = 0;
  return new Promise((resolve, reject) => {
    const done = () => resolve({ sent, held: held / Math.max(turns, 1) });
    const poll = setInterval(() => {
      turns++;
      if (sent - stored() >= ahead) held++;
      pump();
    }, 20);
    const pump = () => {
      if (Date.now() >= end) clearInterval(poll);
      while (sent - acked < window && Date.now() < end && sent - stored() < ahead) {
        const payload = JSON.stringify(events(sent * perMessage));
        sent++;
        client.publish(topic, payload, { qos: 1 }, (err) => {
          if (err != null) return reject(err);
          acked++;
          if (acked === sent && Date.now() >= end) done();
          else if (sent - acked === Math.floor(window / 2)) setImmediate(pump);
        });
      }
      if (Date.now() >= end && acked === sent) done();
    };
    pump();
  });
}

async function main(): Promise<void> {
  const broker = await TemporaryMosquitto.start();
  const port = await freePort();
  const prefix = `bench-${randomUUID().slice(0, 8)}`;
  const server = startNode("dist/src/main.js", {
    DATABASE_URL: databaseUrl,
    JWT_SECRET: SECRET,
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    TRANSFORM_PROCESSES: "1",
    MQTT_URL: broker.url,
    MQTT_TOPIC_PREFIX: prefix,
    MQTT_CLIENT_ID: prefix,
    // The subscriber's tuning, when the bench's environment sets it (else the defaults).
    ...Object.fromEntries(["MQTT_BATCH_MESSAGES", "MQTT_MAX_IN_FLIGHT", "MQTT_LINGER_MS"].flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k]!]]))),
  }, [], profileDir === "" ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]);
  const knex = knexFactory({ client: "pg", connection: databaseUrl, pool: { min: 0, max: 2 } });
  let pub: MqttClient | undefined;
  try {
    await waitForHealth(port, 600).catch((err: unknown) => {
      throw new Error(`${String(err)}:\n${server.lines.join("\n")}`);
    });
    const tenant = `bench-mqtt-${randomUUID()}`;
    const token = await new SignJWT({ roles: ["admin"], tenants: [tenant] }).setProtectedHeader({ alg: "HS256" }).setSubject("bench").setExpirationTime("2h").sign(new TextEncoder().encode(SECRET));
    const headers = { authorization: `Bearer ${token}`, "x-tenant-id": tenant, "content-type": "application/json" };
    const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
    const [mqttItem, httpItem] = [randomUUID(), randomUUID()];
    const created = await post(agent, port, "/graph/entities", headers, JSON.stringify({ entities: [mqttItem, httpItem].map((id) => ({ type: "Item", key: id, id, attributes: { itemAction: "INGEST" } })) }));
    if (created.status !== 200) throw new Error(`items not created: ${created.status} ${created.text}`);
    const count = async (item: string) =>
      ((await knex.raw(`select count(*)::int as n from events where tenant = ? and item_id = ?`, [tenant, item])) as { rows: { n: number }[] }).rows[0]!.n;
    /**
     * Events stored so far, read from the latest one (an index probe, where a count scans every row
     * and, polled, would cost the database more than the writes): the messages come in order and
     * their batches commit in order, so what is stored is a prefix of what was published. The
     * count checks it at the end.
     */
    const storedThrough = async (item: string) => {
      const { rows } = (await knex.raw(`select max(ts) as t from events where tenant = ? and item_id = ?`, [tenant, item])) as { rows: { t: Date | null }[] };
      return rows[0]!.t === null ? 0 : (rows[0]!.t.getTime() - BASE_MS) / spacingMs + 1;
    };

    // Warm-up (not counted): the server's first requests, its transform process starting.
    for (let k = 0; k < 20; k++) await post(agent, port, "/events", headers, JSON.stringify({ events: events(-1_000_000 - k * perMessage).map((e) => ({ ...e, itemId: httpItem })) }));
    // HTTP: the same events, grouped as the messages, through POST /events; then in bodies of `bulk` events.
    const httpRun = async (size: number, first: number): Promise<{ rate: number; requests: number; cpu: string }> => {
      let posted = 0;
      const before = cpuSnapshot();
      const start = Date.now();
      const end = start + httpSeconds * 1000;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (Date.now() < end) {
            const body = JSON.stringify({ events: events(first + posted++ * size, size).map((e) => ({ ...e, itemId: httpItem })) });
            const res = await post(agent, port, "/events", headers, body);
            if (res.status !== 200) throw new Error(`POST /events answered ${res.status}: ${res.text}`);
          }
        }),
      );
      const rate = (posted * size) / ((Date.now() - start) / 1000);
      return { rate, requests: posted, cpu: cpuPerUnit(cpuBetween(before, cpuSnapshot()), (posted * size) / 1000, "1,000 events") };
    };
    const same = await httpRun(perMessage, 0);
    const bulky = await httpRun(bulk, 100_000_000);

    // MQTT: published for mqttSeconds, counted until the last event is stored; RSS every 5 s.
    pub = await publisher(broker.url);
    const topic = `${prefix}/${tenant}/items/${mqttItem}/events`;
    const rss: [number, number][] = [];
    const mqttBefore = cpuSnapshot();
    const mqttStart = Date.now();
    let storedMessages = 0;
    /** Seconds into the run and messages stored then, at every sixth sample (about 30 s apart): the rate sustained, window by window. */
    const storedAt: [number, number][] = [[0, 0]];
    const sampler = setInterval(() => {
      // Counted by samples, not by the clock's seconds: on a loaded machine the timer drifts off any multiple of 30.
      const t = (Date.now() - mqttStart) / 1000;
      rss.push([t, rssMiB(server.child.pid!)]);
      if (rss.length % 6 === 0) storedAt.push([t, storedMessages]);
    }, 5000);
    let counting = false;
    const counter = setInterval(() => {
      if (counting) return;
      counting = true;
      storedThrough(mqttItem)
        .then((n) => (storedMessages = n / perMessage))
        .catch(() => undefined) // a slow read is done again at the next turn
        .finally(() => (counting = false));
    }, 50);
    const { sent: published, held } = await publishFor(pub, topic, mqttSeconds, () => storedMessages);
    clearInterval(counter);
    while ((await storedThrough(mqttItem)) < published * perMessage) await new Promise((r) => setTimeout(r, 20));
    let mqttEnd = Date.now();
    const mqttCpu = cpuPerUnit(cpuBetween(mqttBefore, cpuSnapshot()), (published * perMessage) / 1000, "1,000 events");
    // Every event once, the count says: else the clock runs on until it does (or stops at a loss).
    const giveUp = Date.now() + 60_000;
    for (let n = await count(mqttItem); n !== published * perMessage; n = await count(mqttItem), mqttEnd = Date.now()) {
      if (Date.now() > giveUp) throw new Error(`${n} events stored of ${published * perMessage} published`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const mqttRate = (published * perMessage) / ((mqttEnd - mqttStart) / 1000);
    clearInterval(sampler);
    // The bulk upload again, after: the machine's other load drifts over minutes, and the MQTT side
    // is compared with the mean of the two.
    const bulkAfter = await httpRun(bulk, 200_000_000);
    agent.destroy();
    const bulkRate = (bulky.rate + bulkAfter.rate) / 2;

    // Peaks per window of six samples (the heap's saw-tooth): flat when the last window's peak is within
    // 1.25× the second's — the first holds the climb from an idle server to its working size.
    const peaks: number[] = [];
    rss.forEach(([, m], k) => (peaks[Math.floor(k / 6)] = Math.max(peaks[Math.floor(k / 6)] ?? 0, m)));
    const firstPeak = peaks[Math.min(1, peaks.length - 1)]!;
    const lastPeak = peaks.at(-1)!;
    console.log(`events per message: ${perMessage}; HTTP clients: ${concurrency}; MQTT window: ${window}, at most ${ahead} messages ahead of the stored ones`);
    console.log(`POST /events, ${perMessage} events per request: ${Math.round(same.rate)} events/s (${same.requests} requests in ${httpSeconds} s)`);
    console.log(`POST /events, ${bulk} events per request: ${Math.round(bulky.rate)} events/s before the MQTT side, ${Math.round(bulkAfter.rate)} after (${bulky.requests} and ${bulkAfter.requests} requests in ${httpSeconds} s), mean ${Math.round(bulkRate)}`);
    console.log(`MQTT QoS 1, ${perMessage} events per message: ${Math.round(mqttRate)} events/s (${published} messages in ${mqttSeconds} s, all stored)`);
    console.log(`ratio MQTT / HTTP same grouping: ${(mqttRate / same.rate).toFixed(2)}×; MQTT / HTTP ${bulk}-event bodies: ${(mqttRate / bulkRate).toFixed(2)}× (goal ≥ ${GOAL}×; ${(mqttRate / bulky.rate).toFixed(2)}× the one before, ${(mqttRate / bulkAfter.rate).toFixed(2)}× the one after)`);
    const windows = storedAt.slice(1).map(([t, n], k) => Math.round(((n - storedAt[k]![1]) * perMessage) / (t - storedAt[k]![0])));
    console.log(`MQTT events/s stored per 30 s: ${windows.join(" ")}; the publisher waited on --ahead in ${Math.round(held * 100)}% of its turns`);
    console.log(`CPU, POST ${perMessage}/request: ${same.cpu}`);
    console.log(`CPU, POST ${bulk}/request: ${bulky.cpu}; after: ${bulkAfter.cpu}`);
    console.log(`CPU, MQTT: ${mqttCpu}`);
    console.log(`server RSS peaks per 30 s (MiB): ${peaks.map((m) => m.toFixed(0)).join(" ")}: ${lastPeak <= firstPeak * 1.25 ? "flat" : "GROWING"}`);
  } finally {
    await pub?.endAsync();
    if (profileDir === "") server.kill();
    else {
      // SIGTERM: the server stops cleanly and writes its profile.
      server.child.kill("SIGTERM");
      await server.exited;
    }
    await knex.destroy();
    await broker.destroy();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
