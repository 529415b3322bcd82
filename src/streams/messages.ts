import type { EventRecord } from "../timeseries/events.js";
import type { BucketJson, EventJson } from "../timeseries/query.js";

/** What a subscriber receives (contract §10), one JSON text per WebSocket message. */
export type StreamMessage = { type: "event"; itemId: string; event: EventJson } | { type: "bucket"; itemId: string; bucket: BucketJson };

/** The PostgreSQL channel every process listens on. */
export const STREAM_CHANNEL = "item_streams";

/** An accepted event as its JSON (contract §4): the fields it was sent with, no empty ones. */
export function eventRecordJson(e: EventRecord): EventJson {
  const json: EventJson = { timestamp: e.timestamp.toISOString(), value: e.value };
  if (e.sourceId !== "") json.sourceId = e.sourceId;
  if (e.tags !== null) json.tags = e.tags;
  if (e.keyValues !== null) json.keyValues = e.keyValues;
  if (e.tenantCodes !== null) json.tenantCodes = e.tenantCodes;
  if (e.entityReferences !== null) json.entityReferences = e.entityReferences;
  if (e.entry !== null) json.entry = e.entry.toISOString();
  if (e.exit !== null) json.exit = e.exit.toISOString();
  if (e.from !== null) json.from = e.from.toISOString();
  if (e.to !== null) json.to = e.to.toISOString();
  return json;
}
