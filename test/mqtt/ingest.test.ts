import { randomUUID } from "node:crypto";
import { expect } from "chai";
import type { MqttClient } from "mqtt";
import { loadConfig } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { MqttIngest } from "../../src/mqtt/subscriber.js";
import { backend, randomTenant } from "../support/backends.js";
import { dropSession, publisher, SHARED_BROKER_URL } from "../support/mosquitto.js";
import { testServer, type TestServer } from "../support/server.js";
import { createItem, StreamClient } from "../support/streams.js";
import { adminToken, TEST_JWT_SECRET } from "../support/tokens.js";
import { waitUntil } from "../support/workers.js";

interface StoredEvent {
  ts: Date;
  value: number;
  source_id: string;
  key_values: Record<string, string> | null;
}

/** The MQTT subscriber in this process, on the shared broker, under a prefix of its own. */
describe("MQTT ingestion on the shared broker", function () {
  this.timeout(60_000);
  const prefix = `test-${randomUUID()}`;
  let db: Database;
  let server: TestServer;
  let base: string;
  let token: string;
  let ingest: MqttIngest;
  let pub: MqttClient;
  const deadLetters: Record<string, unknown>[] = [];
  const tenant = randomTenant();
  const clientId = `test-${randomUUID()}`;

  const stored = async (itemId: string): Promise<StoredEvent[]> =>
    (await db.knex("events").where({ tenant, item_id: itemId }).orderBy(["ts", "source_id"]).select("ts", "value", "source_id", "key_values")) as StoredEvent[];
  const publish = (itemId: string, payload: string, options: { contentType?: string; tenantOf?: string } = {}) =>
    pub.publishAsync(`${prefix}/${options.tenantOf ?? tenant}/items/${itemId}/events`, payload, {
      qos: 1,
      ...(options.contentType === undefined ? {} : { properties: { contentType: options.contentType } }),
    });

  before(async () => {
    db = await backend("postgres");
    server = await testServer(db);
    base = await server.app.listen({ port: 0, host: "127.0.0.1" });
    token = await adminToken();
    const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET, MQTT_URL: SHARED_BROKER_URL, MQTT_TOPIC_PREFIX: prefix, MQTT_CLIENT_ID: clientId, MQTT_LINGER_MS: "5" });
    ingest = new MqttIngest(config.mqtt!, db.knex, server.logger, server.metrics.registry);
    pub = await publisher(SHARED_BROKER_URL);
    await pub.subscribeAsync(`${prefix}/dead-letter`, { qos: 1 });
    pub.on("message", (topic, payload) => {
      if (topic === `${prefix}/dead-letter`) deadLetters.push(JSON.parse(payload.toString()) as Record<string, unknown>);
    });
    await waitUntil(() => ingest.state().connected, "subscriber connected");
  });
  after(async () => {
    await ingest?.stop();
    await dropSession(SHARED_BROKER_URL, clientId);
    await pub?.endAsync();
    await server?.app.close();
  });

  it("stores a contract event, an array of them and NDJSON, each under the topic's item", async () => {
    const item = await createItem(base, token, tenant);
    await publish(item, JSON.stringify({ timestamp: "2026-01-01T00:00:00Z", value: 1, sourceId: "a" }));
    await publish(item, JSON.stringify([{ timestamp: "2026-01-01T00:00:01Z", value: 2 }, { timestamp: "2026-01-01T00:00:02Z", value: 3, tags: ["x"] }]));
    await publish(item, '{"timestamp":"2026-01-01T00:00:03Z","value":4}\n\n{"timestamp":"2026-01-01T00:00:04Z","value":5,"keyValues":{"k":"v"}}\n');
    await waitUntil(async () => (await stored(item)).length === 5, "five events stored");
    const events = await stored(item);
    expect(events.map((e) => [e.ts.toISOString(), e.value, e.source_id])).to.deep.equal([
      ["2026-01-01T00:00:00.000Z", 1, "a"],
      ["2026-01-01T00:00:01.000Z", 2, ""],
      ["2026-01-01T00:00:02.000Z", 3, ""],
      ["2026-01-01T00:00:03.000Z", 4, ""],
      ["2026-01-01T00:00:04.000Z", 5, ""],
    ]);
    expect(events[4]!.key_values).to.deep.equal({ k: "v" });
  });

  it("stores a SenML pack: base name, base time and base unit applied, the name as sourceId and the unit in keyValues", async () => {
    const item = await createItem(base, token, tenant);
    const pack = [
      { bn: "urn:dev:ow:10e2073a01080063:", bt: 1.767225600e9, bu: "Cel", n: "temp", v: 23.5 },
      { n: "temp", t: 60, v: 23.75 },
      { n: "door", t: 60, vb: true, u: "" },
      { n: "humidity", u: "%RH", t: 120, v: 40 },
    ];
    await publish(item, JSON.stringify(pack), { contentType: "application/senml+json" });
    await waitUntil(async () => (await stored(item)).length === 4, "four SenML records stored");
    expect((await stored(item)).map((e) => [e.ts.toISOString(), e.value, e.source_id, e.key_values])).to.deep.equal([
      ["2026-01-01T00:00:00.000Z", 23.5, "urn:dev:ow:10e2073a01080063:temp", { unit: "Cel" }],
      ["2026-01-01T00:01:00.000Z", 1, "urn:dev:ow:10e2073a01080063:door", { unit: "" }],
      ["2026-01-01T00:01:00.000Z", 23.75, "urn:dev:ow:10e2073a01080063:temp", { unit: "Cel" }],
      ["2026-01-01T00:02:00.000Z", 40, "urn:dev:ow:10e2073a01080063:humidity", { unit: "%RH" }],
    ]);
  });

  it("stores an event sent again once, with the value it had: redelivery changes nothing", async () => {
    const item = await createItem(base, token, tenant);
    const event = JSON.stringify({ timestamp: "2026-02-01T00:00:00Z", value: 42, sourceId: "s" });
    for (let k = 0; k < 3; k++) await publish(item, event);
    await waitUntil(async () => ingest.state().unacked === 0 && (await stored(item)).length === 1, "the event stored");
    expect((await stored(item)).map((e) => [e.ts.toISOString(), e.value, e.source_id])).to.deep.equal([["2026-02-01T00:00:00.000Z", 42, "s"]]);
  });

  it("publishes bad messages to the dead-letter topic with the reason and the payload, acknowledges them, and stores none of their events", async () => {
    const item = await createItem(base, token, tenant);
    const derived = await createItem(base, token, tenant, { itemAction: "CALCULATE" });
    const before = deadLetters.length;
    const bad: [string, string, RegExp][] = [
      [item, "not json at all", /not JSON/],
      [item, JSON.stringify([{ timestamp: "2026-03-01T00:00:00Z", value: 1 }, { timestamp: "2026-03-01T00:00:01Z", value: "x" }]), /events\[1\]\.value: value "x" is not a finite number/],
      [randomUUID(), JSON.stringify({ timestamp: "2026-03-01T00:00:00Z", value: 1 }), /there is no Item .* in this tenant/],
      [derived, JSON.stringify({ timestamp: "2026-03-01T00:00:00Z", value: 1 }), /derived \(itemAction CALCULATE\)/],
      ["not-a-uuid", JSON.stringify({ timestamp: "2026-03-01T00:00:00Z", value: 1 }), /is not the uuid of an Item/],
      [item, JSON.stringify([{ n: "label", vs: "hello" }]), /no numeric value/],
      [item, "", /empty/],
    ];
    for (const [target, payload] of bad) await publish(target, payload);
    await waitUntil(() => deadLetters.length === before + bad.length, "a dead letter for each bad message");
    const letters = deadLetters.slice(before);
    bad.forEach(([target, payload, reason], k) => {
      expect(letters[k]!.reason, payload).to.match(reason);
      expect(letters[k]!.payload).to.equal(payload);
      expect(letters[k]!.topic).to.equal(`${prefix}/${tenant}/items/${target}/events`);
    });
    // The good event of the second message is not stored: a message is refused whole.
    expect(await stored(item)).to.deep.equal([]);
    await waitUntil(() => ingest.state().unacked === 0, "every message acknowledged");
    const metrics = await server.metrics.registry.metrics();
    expect(metrics).to.match(/^mqtt_messages_dead_lettered_total \d+/m);
    expect(metrics).to.match(/^mqtt_messages_received_total \d+/m);
    expect(metrics).to.match(/^mqtt_events_stored_total \d+/m);
    expect(metrics).to.match(/^mqtt_messages_unacked 0/m);
    expect(metrics).to.match(/^mqtt_lag_seconds /m);
  });

  it("pushes the events of a STREAM item that arrive by MQTT to its WebSocket subscribers, without storing them", async () => {
    const live = await createItem(base, token, tenant, { itemAction: "STREAM" });
    const sub = new StreamClient(`${base.replace("http", "ws")}/items/${live}/stream`, { token, tenant });
    try {
      await sub.subscribed();
      await publish(live, JSON.stringify([{ timestamp: "2026-04-01T00:00:00Z", value: 7 }, { timestamp: "2026-04-01T00:00:01Z", value: 8 }]));
      await sub.until((c) => c.events.length === 2, "two events pushed");
      expect(sub.events.map((e) => [e.timestamp, e.value])).to.deep.equal([
        ["2026-04-01T00:00:00.000Z", 7],
        ["2026-04-01T00:00:01.000Z", 8],
      ]);
      expect(await stored(live)).to.deep.equal([]);
    } finally {
      sub.close();
    }
  });
});
