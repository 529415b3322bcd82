import type { Knex } from "knex";
import { itemIngestKinds } from "../graph/items.js";
import { parseEvent, type EventRecord } from "../timeseries/events.js";
import { ingestEvents, ingestRefusal } from "../timeseries/ingest.js";
import { decodePayload } from "./payloads.js";
import { topicTarget, type TopicTarget } from "./topics.js";

/** A message as received, before it is checked. */
export interface Inbound {
  topic: string;
  payload: Buffer;
  /** The MQTT 5 content type, when the publisher gave one. */
  contentType: string | undefined;
  /** When it arrived (ms since the epoch): SenML's relative times count from it. */
  receivedAt: number;
}

export interface DeadLetter<M extends Inbound> {
  message: M;
  reason: string;
}

export interface BatchOutcome<M extends Inbound> {
  /** Events stored. */
  stored: number;
  /** Events of STREAM items pushed to subscribers and not stored. */
  streamed: number;
  /** Messages refused, each with its reason. */
  deadLetters: DeadLetter<M>[];
}

/** Where the subscriber reads events: the topics' prefix and the tenant pinned, if any. */
export interface TopicRule {
  prefix: string;
  tenant: string | undefined;
}

/** A checked message: its tenant and item, and its events (each of the item). */
interface Accepted<M extends Inbound> {
  message: M;
  tenant: string;
  itemId: string;
  events: EventRecord[];
}

/**
 * Stores the events of a batch of messages through the upload path (src/timeseries/ingest.ts:
 * COPY, idempotent by `(item, timestamp, sourceId)`, STREAM items pushed to their subscribers),
 * one transaction per tenant. Each message is checked as an upload is, whole: its topic, its
 * payload, every event of it (parseEvent) and its item (an Item of the tenant, not derived); one bad
 * event refuses the message, which is answered as a dead letter and none of its events stored.
 * Throws when the database fails: nothing is acknowledged then, and the batch is written again.
 */
export async function ingestBatch<M extends Inbound>(knex: Knex, rule: TopicRule, messages: M[]): Promise<BatchOutcome<M>> {
  const deadLetters: DeadLetter<M>[] = [];
  const byTenant = new Map<string, Accepted<M>[]>();
  // A batch's messages share few topics: each is read once.
  const targets = new Map<string, TopicTarget>();
  for (const message of messages) {
    const checked = checkMessage(rule, message, targets);
    if ("reason" in checked) deadLetters.push({ message, reason: checked.reason });
    else {
      const list = byTenant.get(checked.tenant);
      if (list === undefined) byTenant.set(checked.tenant, [checked]);
      else list.push(checked);
    }
  }
  let stored = 0;
  let streamed = 0;
  for (const [tenant, accepted] of byTenant) {
    const refusals = await itemRefusals(knex, tenant, [...new Set(accepted.map((a) => a.itemId))]);
    const writable = accepted.filter((a) => {
      const reason = refusals.get(a.itemId);
      if (reason !== undefined) deadLetters.push({ message: a.message, reason });
      return reason === undefined;
    });
    if (writable.length === 0) continue;
    // The message of each row, to name the messages of rows the ingest refuses after all (an item
    // deleted since it was checked): those are dead letters too.
    const owners: Accepted<M>[] = [];
    const rows: EventRecord[] = [];
    for (const a of writable) {
      for (const event of a.events) {
        rows.push(event);
        owners.push(a);
      }
    }
    // Checked already, message by message: the ingest does not parse them again.
    const result = await ingestEvents(knex, tenant, rows, { partial: true, checked: true });
    stored += result.stored;
    streamed += result.streamed;
    const late = new Map<Accepted<M>, string>();
    for (const problem of result.rejected) {
      const owner = owners[problem.row as number];
      if (owner !== undefined && !late.has(owner)) late.set(owner, `${problem.path}: ${problem.message}`);
    }
    for (const [owner, reason] of late) deadLetters.push({ message: owner.message, reason: `${reason} (checked before the write; events of the message may be stored)` });
  }
  // In the order the messages came, whichever check refused them.
  const order = new Map(messages.map((m, k) => [m, k]));
  deadLetters.sort((x, y) => order.get(x.message)! - order.get(y.message)!);
  return { stored, streamed, deadLetters };
}

/** The message's tenant, item and events, or why it is refused. */
function checkMessage<M extends Inbound>(rule: TopicRule, message: M, targets: Map<string, TopicTarget>): Accepted<M> | { reason: string } {
  let target = targets.get(message.topic);
  if (target === undefined) targets.set(message.topic, (target = topicTarget(rule.prefix, rule.tenant, message.topic)));
  if ("reason" in target) return target;
  const decoded = decodePayload(message.payload, message.contentType, message.receivedAt);
  if ("reason" in decoded) return decoded;
  const events: EventRecord[] = [];
  for (let k = 0; k < decoded.rows.length; k++) {
    // The topic names the item, as the URL of POST /items/{itemId}/events does: an itemId in the event is not read.
    const parsed = parseEvent(decoded.rows[k], target.itemId);
    if (!parsed.ok) return { reason: `events[${k}]${parsed.field === "" ? "" : `.${parsed.field}`}: ${parsed.message}` };
    events.push(parsed.event);
  }
  return { message, tenant: target.tenant, itemId: target.itemId, events };
}

/** The items of the list that may not take events, each with the reason (as the upload words it). */
async function itemRefusals(knex: Knex, tenant: string, itemIds: string[]): Promise<Map<string, string>> {
  const found = await itemIngestKinds(knex, tenant, itemIds);
  const refused = new Map<string, string>();
  for (const id of itemIds) {
    const reason = ingestRefusal(id, found.get(id));
    if (reason !== null) refused.set(id, `itemId: ${reason}`);
  }
  return refused;
}
