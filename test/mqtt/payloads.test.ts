import { expect } from "chai";
import { ConfigError, loadConfig } from "../../src/config.js";
import { decodePayload } from "../../src/mqtt/payloads.js";
import { senmlRows } from "../../src/mqtt/senml.js";
import { deadLetterPayload, pubacks } from "../../src/mqtt/subscriber.js";
import { eventsFilter, topicTarget } from "../../src/mqtt/topics.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";

const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);
const ITEM = "0b6f1c7e-4a8e-4f6e-9f3a-6c1d2e3f4a5b";
const decode = (text: string, contentType?: string) => decodePayload(Buffer.from(text), contentType, NOW);

describe("MQTT payloads and topics", () => {
  it("reads one contract event, an array of them, and NDJSON (by its lines or its content type)", () => {
    const event = { timestamp: "2026-01-01T00:00:00Z", value: 1 };
    expect(decode(JSON.stringify(event))).to.deep.equal({ rows: [event], form: "json" });
    expect(decode(JSON.stringify([event, event]))).to.deep.equal({ rows: [event, event], form: "json" });
    expect(decode(`${JSON.stringify(event)}\n\n${JSON.stringify(event)}\n`)).to.deep.equal({ rows: [event, event], form: "ndjson" });
    expect(decode(JSON.stringify(event), "application/x-ndjson")).to.deep.equal({ rows: [event], form: "ndjson" });
  });

  it("names what is wrong with a payload it cannot read", () => {
    expect(decode("")).to.deep.equal({ reason: "the payload is empty" });
    expect(decode("[]")).to.deep.equal({ reason: "the payload is an empty array" });
    expect(decode("42")).to.have.property("reason").that.matches(/must be an event/);
    expect(decode("{nope")).to.have.property("reason").that.matches(/^the payload is not JSON/);
    expect(decode('{"a":1}\n{nope')).to.have.property("reason").that.matches(/^line 2 is not JSON/);
    expect(decodePayload(Buffer.from([0xff, 0xfe, 0x00]), undefined, NOW)).to.deep.equal({ reason: "the payload is not UTF-8 text" });
    expect(decode('{"n":"x","v":1}', "application/senml+json")).to.deep.equal({ reason: "a SenML pack must be a JSON array of records" });
  });

  it("reads SenML (RFC 8428): base name, time, unit and value; relative times from now; booleans as 1 and 0", () => {
    const pack = [
      { bn: "dev1/", bt: 1767225600, bu: "Cel", bv: 10, n: "t", v: 1.5 },
      { n: "t", t: 30, v: 2 },
      { n: "open", vb: false, u: "" },
      { bn: "dev2/", bt: -5, n: "h", u: "%RH", v: 40 },
    ];
    expect(decode(JSON.stringify(pack))).to.deep.equal({
      form: "senml",
      rows: [
        { timestamp: "2026-01-01T00:00:00.000Z", value: 11.5, sourceId: "dev1/t", keyValues: { unit: "Cel" } },
        { timestamp: "2026-01-01T00:00:30.000Z", value: 12, sourceId: "dev1/t", keyValues: { unit: "Cel" } },
        { timestamp: "2026-01-01T00:00:00.000Z", value: 0, sourceId: "dev1/open", keyValues: { unit: "" } },
        { timestamp: "2026-06-01T11:59:55.000Z", value: 50, sourceId: "dev2/h", keyValues: { unit: "%RH" } },
      ],
    });
    // Neither time given: now. No name: no sourceId. No unit: no keyValues.
    expect(senmlRows([{ v: 3 }], NOW)).to.deep.equal({ rows: [{ timestamp: "2026-06-01T12:00:00.000Z", value: 3 }] });
  });

  it("refuses a SenML record without a number, with a field of the wrong type, or with a field SenML does not have", () => {
    expect(senmlRows([{ n: "label", vs: "on" }], NOW)).to.deep.equal({ reason: "senml[0]: the record has no numeric value (v or vb); an event's value is a number" });
    expect(senmlRows([{ n: "x", v: "1" }], NOW)).to.deep.equal({ reason: "senml[0].v must be a number" });
    expect(senmlRows([{ n: "x", v: 1, q: 2 }], NOW)).to.deep.equal({ reason: "senml[0]: q is not a SenML field (RFC 8428)" });
    expect(senmlRows([{ bn: "only-base/" }], NOW)).to.deep.equal({ reason: "the SenML pack holds no record with a value" });
    // An array of contract events is not taken for SenML.
    expect(decode(JSON.stringify([{ timestamp: "2026-01-01T00:00:00Z", value: 1 }]))).to.have.property("form", "json");
  });

  it("reads the tenant and item of a topic, and refuses the others", () => {
    expect(eventsFilter("ingest", undefined)).to.equal("ingest/+/items/+/events");
    expect(eventsFilter("a/b", "acme")).to.equal("a/b/acme/items/+/events");
    expect(topicTarget("ingest", undefined, `ingest/acme/items/${ITEM.toUpperCase()}/events`)).to.deep.equal({ tenant: "acme", itemId: ITEM });
    expect(topicTarget("ingest", undefined, "ingest/acme/items/nope/events")).to.have.property("reason").that.matches(/not the uuid of an Item/);
    expect(topicTarget("ingest", undefined, `ingest/acme/items/${ITEM}`)).to.have.property("reason").that.matches(/does not name an item/);
    expect(topicTarget("ingest", "acme", `ingest/other/items/${ITEM}/events`)).to.have.property("reason").that.matches(/MQTT_TENANT/);
  });

  it("writes a dead letter with the reason, the topic and the payload (base64 when it is not UTF-8)", () => {
    const letter = (payload: Buffer) => JSON.parse(deadLetterPayload({ topic: "t", payload, contentType: undefined, receivedAt: NOW }, "why")) as Record<string, unknown>;
    expect(letter(Buffer.from("héllo"))).to.deep.equal({ reason: "why", topic: "t", receivedAt: "2026-06-01T12:00:00.000Z", payload: "héllo" });
    expect(letter(Buffer.from([0xff, 0x00]))).to.deep.equal({ reason: "why", topic: "t", receivedAt: "2026-06-01T12:00:00.000Z", payloadBase64: "/wA=" });
  });

  it("writes the PUBACKs of a batch back to back, each 0x40, remaining length 2 and the packet id (MQTT 5 omits a success's reason code)", () => {
    expect([...pubacks([1, 0x1234, 65535])]).to.deep.equal([0x40, 2, 0, 1, 0x40, 2, 0x12, 0x34, 0x40, 2, 0xff, 0xff]);
    expect(pubacks([])).to.have.length(0);
  });

  it("reads the MQTT settings: absent without MQTT_URL, a stable client id by default, problems named", () => {
    const base = { JWT_SECRET: TEST_JWT_SECRET };
    expect(loadConfig(base).mqtt).to.equal(undefined);
    const mqtt = loadConfig({ ...base, MQTT_URL: "mqtt://user:pw@broker:1883", MQTT_PASSWORD: "s3cret" }).mqtt!;
    expect(mqtt.clientId).to.equal(loadConfig({ ...base, MQTT_URL: "mqtt://broker" }).mqtt!.clientId);
    expect(mqtt).to.include({ topicPrefix: "ingest", maxInFlight: 2000, batchMessages: 500 });
    expect(JSON.stringify(mqtt)).not.to.include("s3cret");
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig({ ...base, ...env });
        return [];
      } catch (err) {
        return (err as ConfigError).problems;
      }
    };
    expect(problems({ MQTT_URL: "http://broker" })).to.deep.equal(["MQTT_URL: MQTT_URL must be an mqtt:// or mqtts:// (TLS) URL, like mqtt://localhost:1883"]);
    expect(problems({ MQTT_URL: "mqtt://b", MQTT_TOPIC_PREFIX: "a/+/b" })).to.have.length(1);
    expect(problems({ MQTT_URL: "mqtt://b", MQTT_BATCH_MESSAGES: "500", MQTT_MAX_IN_FLIGHT: "100" })).to.deep.equal(["MQTT_BATCH_MESSAGES (500) must not be more than MQTT_MAX_IN_FLIGHT (100)"]);
  });
});
