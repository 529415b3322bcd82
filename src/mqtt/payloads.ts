import { parseJson } from "../json.js";
import { isSenmlPack, senmlRows } from "./senml.js";

/** The payload forms a message may take (docs/how-to/ingest-over-mqtt.md). */
export type PayloadForm = "json" | "ndjson" | "senml";

/** MQTT 5 content types naming a form; any other (or none) lets the payload say which it is. */
const CONTENT_TYPES: Record<string, PayloadForm> = {
  "application/json": "json",
  "application/x-ndjson": "ndjson",
  "application/senml+json": "senml",
};

export type Decoded = { rows: unknown[]; form: PayloadForm } | { reason: string };

/**
 * The rows (raw events, checked later as an upload's rows are) of a message's payload:
 *
 * - `json`: one contract event (an object) or an array of them;
 * - `ndjson`: one contract event per line, blank lines skipped;
 * - `senml`: a SenML pack (RFC 8428, JSON), see src/mqtt/senml.ts.
 *
 * The MQTT 5 content type decides the form when it names one; otherwise the payload does: an
 * array whose records hold SenML fields only is SenML, text that is one JSON value is JSON, and
 * text of several lines that is not is NDJSON.
 */
export function decodePayload(payload: Buffer, contentType: string | undefined, nowMs: number): Decoded {
  const text = utf8(payload);
  if (text === undefined) return { reason: "the payload is not UTF-8 text" };
  if (text.trim() === "") return { reason: "the payload is empty" };
  const named = contentType === undefined ? undefined : CONTENT_TYPES[contentType.split(";")[0]!.trim().toLowerCase()];
  if (named === "ndjson") return ndjson(text);
  let value: unknown;
  try {
    value = parseJson(text);
  } catch (err) {
    if (named === undefined && text.trim().includes("\n")) return ndjson(text);
    return { reason: `the payload is not JSON: ${(err as Error).message}` };
  }
  if (named === "senml" || (named === undefined && Array.isArray(value) && isSenmlPack(value))) {
    if (!Array.isArray(value)) return { reason: "a SenML pack must be a JSON array of records" };
    const pack = senmlRows(value, nowMs);
    return "reason" in pack ? pack : { rows: pack.rows, form: "senml" };
  }
  if (Array.isArray(value)) return value.length === 0 ? { reason: "the payload is an empty array" } : { rows: value, form: "json" };
  if (value === null || typeof value !== "object") return { reason: "the payload must be an event (a JSON object), an array of events, NDJSON or a SenML pack" };
  return { rows: [value], form: "json" };
}

function ndjson(text: string): Decoded {
  const rows: unknown[] = [];
  const lines = text.split(/\r?\n|\r/);
  for (let k = 0; k < lines.length; k++) {
    const line = lines[k]!;
    if (line.trim() === "") continue;
    try {
      rows.push(parseJson(line));
    } catch (err) {
      return { reason: `line ${k + 1} is not JSON: ${(err as Error).message}` };
    }
  }
  return rows.length === 0 ? { reason: "the payload holds no event" } : { rows, form: "ndjson" };
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/** The payload as text; undefined when it is not UTF-8. */
function utf8(payload: Buffer): string | undefined {
  try {
    return decoder.decode(payload);
  } catch {
    return undefined;
  }
}
