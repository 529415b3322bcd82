import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import type { Knex } from "knex";
import { connect, type IClientOptions, type IPublishPacket, type MqttClient } from "mqtt";
import type { Registry } from "prom-client";
import type { MqttSettings } from "../config.js";
import { errorText, isPassingFault, ProblemError } from "../errors.js";
import type { Logger } from "../logger.js";
import { redactUrl } from "../secrets.js";
import { ingestBatch, type DeadLetter, type Inbound, type TopicRule } from "./batch.js";
import { MqttMetrics, type MqttState } from "./metrics.js";
import { deadLetterTopic, eventsFilter } from "./topics.js";

/** A message received on the connection `epoch`, acknowledged once its batch has committed. */
interface Received extends Inbound {
  /** Its packet id; undefined for QoS 0 (nothing to acknowledge). */
  messageId: number | undefined;
  epoch: number;
}

/**
 * Passed to the client's callback of a message instead of nothing: the client then reads the next
 * packet without sending the PUBACK, which {@link MqttIngest} sends itself after the commit.
 */
const ACK_LATER = new Error("acknowledged once its batch has committed");

/**
 * Batches written at once, each in its own transaction: one is checked and sent while the database
 * writes another, and on two cores both are busy. Their PUBACKs still go in the order the messages came.
 */
const WRITERS = 2;

/** A batch taken from the queue, acknowledged once it and every batch taken before it are written. */
interface Taken {
  messages: Received[];
  /** Its messages left unacknowledged (the broker sends them again), once written; undefined while writing. */
  left: Set<Received> | undefined;
}

/** First and longest pause before a failed batch is written again. */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;
const RECONNECT_FIRST_MS = 1000;

/**
 * Events from devices over MQTT (docs/how-to/ingest-over-mqtt.md). Subscribes with QoS 1 in a
 * persistent session (`clean: false`, a stable client id, MQTT 5 session expiry), gathers the
 * messages into batches (MQTT_BATCH_MESSAGES, MQTT_LINGER_MS), stores each batch through the
 * upload path (src/mqtt/batch.ts), {@link WRITERS} at once, publishes its bad messages to
 * `{prefix}/dead-letter`, and only then sends the PUBACKs, in the order the messages came. A crash
 * before that leaves them unacknowledged: the broker sends them again, and writing an event again
 * changes nothing.
 *
 * Back-pressure: at most MQTT_MAX_IN_FLIGHT messages are held unacknowledged (the Receive Maximum
 * the broker is asked to keep, and past it the client reads no further packet). When the database
 * is unavailable, the batch is written again after a growing pause, nothing is acknowledged, and
 * the messages wait in the broker. A lost connection is opened again after a pause doubling from
 * 1 s to MQTT_RECONNECT_MAX_MS; messages of the lost connection are not acknowledged on the new one
 * (the broker sends them again).
 */
export class MqttIngest {
  private readonly client: MqttClient;
  private readonly metrics: MqttMetrics;
  private readonly rule: TopicRule;
  private queue: Received[] = [];
  /** Batches taken from the queue and not acknowledged yet, in the order they were taken. */
  private taken: Taken[] = [];
  /** Batches being written (at most {@link WRITERS}). */
  private readonly writing = new Set<Promise<void>>();
  private unacked = 0;
  /** Callbacks of the client held while MQTT_MAX_IN_FLIGHT messages are unacknowledged: no packet is read meanwhile. */
  private held: ((error?: Error) => void)[] = [];
  private epoch = 0;
  private stopping = false;
  private wake: (() => void) | undefined;
  private readonly loop: Promise<void>;
  private reconnectMs = RECONNECT_FIRST_MS;

  constructor(
    private readonly settings: MqttSettings,
    private readonly knex: Knex,
    private readonly logger: Logger,
    registry: Registry,
  ) {
    this.rule = { prefix: settings.topicPrefix, tenant: settings.tenant };
    this.metrics = new MqttMetrics(registry, () => this.state());
    this.client = connect(settings.url, clientOptions(settings));
    this.client.handleMessage = (packet, callback) => this.receive(packet, callback);
    this.client.on("connect", (connack) => {
      this.reconnectMs = RECONNECT_FIRST_MS;
      this.client.options.reconnectPeriod = RECONNECT_FIRST_MS;
      this.logger.info("mqtt connected", { broker: redactUrl(settings.url), clientId: settings.clientId, sessionPresent: connack.sessionPresent });
      this.client.subscribe(eventsFilter(this.rule.prefix, this.rule.tenant), { qos: 1, rh: 1 }, (err, granted) => {
        const refused = granted?.find((g) => g.qos > 2);
        if (err != null || refused !== undefined) this.logger.error("mqtt subscription refused", { error: err == null ? `reason code ${refused!.qos}` : errorText(err) });
        else this.logger.info("mqtt subscribed", { filter: eventsFilter(this.rule.prefix, this.rule.tenant) });
      });
    });
    this.client.on("close", () => this.lost());
    this.client.on("reconnect", () => {
      this.metrics.reconnects.inc();
      this.reconnectMs = Math.min(this.reconnectMs * 2, settings.reconnectMaxMs);
      this.client.options.reconnectPeriod = this.reconnectMs;
    });
    this.client.on("error", (err) => this.logger.warn("mqtt connection", { broker: redactUrl(settings.url), error: errorText(err) }));
    this.loop = this.run();
  }

  state(): MqttState {
    const oldest = this.taken[0]?.messages[0] ?? this.queue[0];
    return { connected: this.client.connected, unacked: this.unacked, lagSeconds: oldest === undefined ? 0 : (Date.now() - oldest.receivedAt) / 1000 };
  }

  /** Stops reading: the batches being written are finished (and acknowledged), the rest left to the broker; then disconnects. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
    this.releaseHeld();
    await this.client.endAsync();
  }

  private receive(packet: IPublishPacket, callback: (error?: Error) => void): void {
    // A packet of a connection already lost is not kept: the broker sends it again on the next one.
    if (!this.client.connected || this.stopping) return callback(ACK_LATER);
    const messageId = packet.qos > 0 ? packet.messageId : undefined;
    const payload = typeof packet.payload === "string" ? Buffer.from(packet.payload) : Buffer.from(packet.payload);
    this.queue.push({ topic: packet.topic, payload, contentType: packet.properties?.contentType, receivedAt: Date.now(), messageId, epoch: this.epoch });
    this.metrics.received.inc();
    if (messageId === undefined) callback();
    else {
      this.unacked++;
      if (this.unacked >= this.settings.maxInFlight) this.held.push(callback);
      else callback(ACK_LATER);
    }
    if (this.queue.length === 1 || this.queue.length >= this.settings.batchMessages) this.wake?.();
  }

  /** The connection is lost: its messages are dropped from the queue, never acknowledged on another. */
  private lost(): void {
    this.epoch++;
    this.queue = [];
    this.unacked = 0;
    this.releaseHeld();
  }

  private releaseHeld(): void {
    for (const callback of this.held.splice(0)) callback(ACK_LATER);
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      const first = this.queue[0];
      // Waits for a free writer and a first message, then lingers for more, counted from its arrival.
      const full = this.queue.length >= this.settings.batchMessages;
      const wait = this.writing.size >= WRITERS || first === undefined ? Infinity : full ? 0 : first.receivedAt + this.settings.lingerMs - Date.now();
      if (wait > 0) {
        const woken = new Promise<void>((resolve) => (this.wake = resolve));
        await (wait === Infinity ? woken : Promise.race([sleep(wait), woken]));
        continue;
      }
      const taken: Taken = { messages: this.queue.splice(0, this.settings.batchMessages), left: undefined };
      this.taken.push(taken);
      const writing = this.write(taken.messages)
        .catch((err: unknown) => {
          this.logger.error("mqtt batch not written; left unacknowledged", { messages: taken.messages.length, error: errorText(err) });
          return taken.messages;
        })
        .then((left) => {
          taken.left = new Set(left);
          this.acknowledgeWritten();
        });
      this.writing.add(writing);
      void writing.finally(() => {
        this.writing.delete(writing);
        this.wake?.();
      });
    }
    await Promise.all(this.writing);
  }

  /**
   * Acknowledges the batches written, from the first taken up to the first still being written:
   * PUBACKs go in the order the messages came, even when a later batch commits first.
   */
  private acknowledgeWritten(): void {
    for (let first = this.taken[0]; first?.left !== undefined; first = this.taken[0]) {
      const left = first.left;
      this.taken.shift();
      this.acknowledge(left.size === 0 ? first.messages : first.messages.filter((m) => !left.has(m)));
    }
  }

  /**
   * Writes a batch until it commits (a database that fails is tried again after a growing pause) and
   * publishes its dead letters; answers the messages not to acknowledge (all of a batch left to the
   * broker at a stop, a dead letter the broker did not take). A batch that fails for a reason that
   * does not pass is split into its messages, and a message that fails alone is a dead letter.
   */
  private async write(batch: Received[]): Promise<Received[]> {
    let pause = RETRY_FIRST_MS;
    let failures = 0;
    for (;;) {
      try {
        const outcome = await ingestBatch(this.knex, this.rule, batch);
        await this.deadLetter(outcome.deadLetters);
        this.metrics.stored.inc(outcome.stored);
        this.metrics.streamed.inc(outcome.streamed);
        if (failures > 0) this.logger.info("mqtt batch written after the database came back", { messages: batch.length, failures });
        return [];
      } catch (err) {
        failures++;
        this.metrics.batchFailures.inc();
        if (!passes(err)) {
          if (batch.length > 1) {
            const left: Received[] = [];
            for (const message of batch) left.push(...(await this.write([message])));
            return left;
          }
          return this.deadLetterRefused(batch, `the database refused the message: ${errorText(err)}`);
        }
        if (failures === 1) this.logger.warn("mqtt batch not written; retrying, nothing acknowledged meanwhile", { messages: batch.length, error: errorText(err) });
        // At a stop the batch is left unacknowledged: the broker sends it again.
        if (this.stopping) return batch;
        await sleep(pause);
        pause = Math.min(pause * 2, RETRY_MAX_MS);
      }
    }
  }

  /** Publishes the batch to the dead-letter topic; answers the messages not to acknowledge: none once the broker has them, else all. */
  private async deadLetterRefused(batch: Received[], reason: string): Promise<Received[]> {
    try {
      await this.deadLetter(batch.map((message) => ({ message, reason })));
      return [];
    } catch (err) {
      this.logger.warn("mqtt dead letter not published; the message is left unacknowledged", { error: errorText(err) });
      return batch;
    }
  }

  /** Publishes each refused message (QoS 1) with its reason and original payload; resolves once the broker has them all. */
  private async deadLetter(letters: DeadLetter<Received>[]): Promise<void> {
    if (letters.length === 0) return;
    const topic = deadLetterTopic(this.rule.prefix);
    await Promise.all(letters.map(({ message, reason }) => this.client.publishAsync(topic, deadLetterPayload(message, reason), { qos: 1 })));
    this.metrics.deadLettered.inc(letters.length);
    for (const { message, reason } of letters.slice(0, 10)) this.logger.info("mqtt message refused, published to the dead-letter topic", { topic: message.topic, reason });
  }

  /**
   * Sends the PUBACKs of a batch in the order its messages came, those of the current connection
   * only: one write to the connection for the whole batch.
   */
  private acknowledge(batch: Received[]): void {
    const ids: number[] = [];
    for (const message of batch) {
      if (message.messageId === undefined || message.epoch !== this.epoch) continue;
      this.unacked--;
      ids.push(message.messageId);
    }
    if (ids.length > 0 && this.client.connected) this.client.stream.write(pubacks(ids));
    if (this.unacked < this.settings.maxInFlight) this.releaseHeld();
  }
}

/**
 * PUBACK packets of the packet ids, back to back: each the fixed header 0x40, a remaining length of
 * 2 and the id. MQTT 5 (§3.4.2.1) omits the reason code and properties of a success, so the same
 * 4 bytes serve 3.1.1 and 5.
 */
export function pubacks(ids: number[]): Buffer {
  const packets = Buffer.allocUnsafe(ids.length * 4);
  for (let k = 0; k < ids.length; k++) {
    packets[4 * k] = 0x40;
    packets[4 * k + 1] = 2;
    packets.writeUInt16BE(ids[k]!, 4 * k + 2);
  }
  return packets;
}

/** A fault that passes by itself (the database unreachable, slow or restarting): the batch is written again. */
function passes(err: unknown): boolean {
  if (err instanceof ProblemError) return err.code === "UNAVAILABLE";
  return isPassingFault(err) || (err instanceof Error && err.name === "DatabaseTimeoutError");
}

/** What the dead-letter topic gets: the reason, the topic, when, and the original payload (as text, or base64 when it is not UTF-8). */
export function deadLetterPayload(message: Inbound, reason: string): string {
  const text = message.payload.toString("utf8");
  const original = Buffer.from(text, "utf8").equals(message.payload) ? { payload: text } : { payloadBase64: message.payload.toString("base64") };
  return JSON.stringify({ reason, topic: message.topic, receivedAt: new Date(message.receivedAt).toISOString(), contentType: message.contentType, ...original });
}

function clientOptions(settings: MqttSettings): IClientOptions {
  return {
    clientId: settings.clientId,
    clean: false,
    protocolVersion: 5,
    keepalive: settings.keepaliveS,
    reconnectPeriod: RECONNECT_FIRST_MS,
    connectTimeout: 10_000,
    resubscribe: false,
    ...(settings.username === undefined ? {} : { username: settings.username }),
    ...(settings.password === undefined ? {} : { password: settings.password.reveal() }),
    ...(settings.caFile === undefined ? {} : { ca: readFileSync(settings.caFile) }),
    ...(settings.certFile === undefined || settings.keyFile === undefined ? {} : { cert: readFileSync(settings.certFile), key: readFileSync(settings.keyFile) }),
    properties: {
      sessionExpiryInterval: settings.sessionExpiryS,
      receiveMaximum: settings.maxInFlight,
      // The payload's bound, with room for the topic and the properties.
      maximumPacketSize: settings.maxMessageBytes + 4096,
    },
  };
}
