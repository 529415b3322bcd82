import { hostname } from "node:os";
import type { Secret } from "../secrets.js";
import { checkedText, integer, isUrl, readableFile, secretText, setting, text, withDefaults, type Given, type Group, type Values } from "./setting.js";

/** A topic level: no wildcard, no separator, not empty. */
const TOPIC_LEVELS = /^[^#+/]+(?:\/[^#+/]+)*$/;
/** A tenant id as X-TENANT-ID takes it (contract §9), and a topic level. */
const TENANT = /^[\x21-\x2a\x2c-\x2e\x30-\x7e]{1,128}$/;

/** The client id when MQTT_CLIENT_ID is not set: stable across restarts of the service on one host. */
export function defaultMqttClientId(): string {
  return `process-task-backend-${hostname()}`.replace(/[^A-Za-z0-9_.-]/g, "-").slice(0, 64);
}

/** Events from devices over MQTT (docs/how-to/ingest-over-mqtt.md). */
export const mqttDeclarations = {
  url: setting({
    env: "MQTT_URL",
    kind: checkedText((v) => isUrl(v, ["mqtt:", "mqtts:"]), "must be an mqtt:// or mqtts:// (TLS) URL, like mqtt://localhost:1883", "`mqtt://host:port` or `mqtts://host:port` (TLS)"),
    secret: "password",
    absent: "not started",
    doc: "The broker: starts the MQTT subscriber that ingests events (QoS 1, persistent session).",
  }),
  clientId: setting({
    env: "MQTT_CLIENT_ID",
    kind: checkedText((v) => /^[\x21-\x7e]{1,128}$/.test(v), "must be 1 to 128 visible ASCII characters", "1–128 visible ASCII characters"),
    default: defaultMqttClientId(),
    defaultText: "`process-task-backend-<hostname>`",
    doc: "The client id, which names the persistent session: keep it stable, and give each replica its own.",
  }),
  username: setting({ env: "MQTT_USERNAME", kind: text, absent: "none sent", doc: "The user name the service connects with." }),
  password: setting({ env: "MQTT_PASSWORD", kind: secretText, secret: "value", absent: "none sent", doc: "The password the service connects with (never logged)." }),
  caFile: setting({ env: "MQTT_CA_FILE", kind: readableFile, absent: "the public CAs", doc: "PEM file of the CA that signed the broker's certificate (`mqtts://`)." }),
  certFile: setting({ env: "MQTT_CERT_FILE", kind: readableFile, absent: "none", doc: "Client certificate (PEM) for mutual TLS, with `MQTT_KEY_FILE`." }),
  keyFile: setting({ env: "MQTT_KEY_FILE", kind: readableFile, absent: "none", doc: "Private key (PEM) of the client certificate, with `MQTT_CERT_FILE`." }),
  topicPrefix: setting({
    env: "MQTT_TOPIC_PREFIX",
    kind: checkedText((v) => TOPIC_LEVELS.test(v), "must be topic levels separated by /, without wildcards (+, #)", "topic levels without wildcards"),
    default: "ingest",
    doc: "Events are read from `{prefix}/{tenant}/items/{itemId}/events`; bad messages go to `{prefix}/dead-letter`.",
  }),
  tenant: setting({
    env: "MQTT_TENANT",
    kind: checkedText((v) => TENANT.test(v), "must be a tenant id (1 to 128 visible ASCII characters) without +, # or /", "a tenant id"),
    absent: "each topic's tenant",
    doc: "Pins the connection to one tenant: only `{prefix}/{MQTT_TENANT}/items/+/events` is read.",
    notes: "Without `MQTT_TENANT`, the tenant is read from the topic: the broker's ACLs must bind each device's credentials to its tenant's topics.",
  }),
  batchMessages: setting({
    env: "MQTT_BATCH_MESSAGES",
    kind: integer(1, 65_535),
    default: 500,
    doc: "Most messages written (and then acknowledged) in one batch; two batches are written at once.",
    notes: "Keep it at most a third of `MQTT_MAX_IN_FLIGHT`: while two batches are written, a third gathers and the client keeps reading.",
  }),
  lingerMs: setting({
    env: "MQTT_LINGER_MS",
    kind: integer(0, 60_000, "ms"),
    default: 20,
    doc: "How long a batch waits for more messages once its first arrived.",
  }),
  maxInFlight: setting({
    env: "MQTT_MAX_IN_FLIGHT",
    kind: integer(1, 65_535),
    default: 2000,
    doc: "Most messages received and not yet acknowledged (the client's Receive Maximum); past it, no more is read.",
    notes:
      "Memory held by unacknowledged messages is at most `MQTT_MAX_IN_FLIGHT` × `MQTT_MAX_MESSAGE_BYTES`. " +
      "While the database is unavailable the subscriber stops acknowledging and reading: messages wait in the broker.",
  }),
  maxMessageBytes: setting({
    env: "MQTT_MAX_MESSAGE_BYTES",
    kind: integer(1024, 256 * 1024 * 1024, "bytes"),
    default: 256 * 1024,
    doc: "Largest message the broker may send (the client's Maximum Packet Size); the broker drops a larger one.",
  }),
  keepaliveS: setting({ env: "MQTT_KEEPALIVE_S", kind: integer(5, 65_535, "s"), default: 60, doc: "Keep-alive interval of the connection." }),
  sessionExpiryS: setting({
    env: "MQTT_SESSION_EXPIRY_S",
    kind: integer(60, 4_294_967_295, "s"),
    default: 7 * 24 * 3600,
    doc: "How long the broker keeps the session (and queues messages) while the service is away.",
  }),
  reconnectMaxMs: setting({
    env: "MQTT_RECONNECT_MAX_MS",
    kind: integer(1000, 3_600_000, "ms"),
    default: 30_000,
    doc: "Longest pause between two connection attempts; the pause doubles from 1 s up to it.",
  }),
};

export const mqttGroup: Group = {
  title: "MQTT ingestion",
  about: "See [Ingest over MQTT](../how-to/ingest-over-mqtt.md) for the topics, payloads, security model and the broker's settings.",
  settings: mqttDeclarations,
};

export interface MqttSettings extends Omit<Values<typeof mqttDeclarations>, "url" | "password"> {
  url: string;
  password: Secret | undefined;
}

/** The MQTT subscriber's settings, or undefined when MQTT_URL is not set; cross-field problems pushed. */
export function readMqtt(given: Given<typeof mqttDeclarations>, problems: string[]): MqttSettings | undefined {
  if ((given.certFile === undefined) !== (given.keyFile === undefined)) problems.push("MQTT_CERT_FILE and MQTT_KEY_FILE go together (mutual TLS): set both, or none");
  if (given.url === undefined) return undefined;
  const tls = given.url.startsWith("mqtts:");
  if (!tls && (given.caFile !== undefined || given.certFile !== undefined)) problems.push("MQTT_CA_FILE, MQTT_CERT_FILE and MQTT_KEY_FILE need TLS: use an mqtts:// MQTT_URL");
  const values = withDefaults(mqttDeclarations, given);
  if (values.batchMessages > values.maxInFlight) problems.push(`MQTT_BATCH_MESSAGES (${values.batchMessages}) must not be more than MQTT_MAX_IN_FLIGHT (${values.maxInFlight})`);
  return { ...values, url: given.url, password: given.password };
}
