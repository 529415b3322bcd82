import { integer, setting, type Group, type Values } from "./setting.js";

/** Live streams over WebSocket (contract §10). */
export const streamSettings = {
  bufferBytes: setting({
    env: "STREAM_BUFFER_BYTES",
    kind: integer(1024, 1024 * 1024 * 1024, "bytes"),
    default: 1024 * 1024,
    doc: "Bytes a stream subscriber may leave unread before it is dropped with close code 4408.",
  }),
  pingMs: setting({
    env: "STREAM_PING_MS",
    kind: integer(100, 3_600_000, "ms"),
    default: 30_000,
    doc: "A ping to every stream subscriber this often; one that has not answered the previous ping is ended.",
  }),
  debounceMs: setting({
    env: "STREAM_DEBOUNCE_MS",
    kind: integer(0, 600_000, "ms"),
    default: 250,
    doc: "A subscribed `CALCULATE` item's latest bucket is recomputed at most once per this many ms.",
  }),
};

export type StreamSettings = Values<typeof streamSettings>;

export const streamGroup: Group = { title: "Live streams", settings: streamSettings };
