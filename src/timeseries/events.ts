import { DateTime } from "luxon";
import { depthFault, INSTANT_RANGE_TEXT, inputFaults, inputSound, instantInRange, isUuid, TEXT_MAX_BYTES, textFault, tooManyBytes, utf8Bytes } from "../input.js";
import { UnreadableRow } from "./upload.js";

/** An event as ingested (contract §4), its item known. */
export interface EventRecord {
  itemId: string;
  timestamp: Date;
  value: number;
  sourceId: string;
  tags: string[] | null;
  keyValues: Record<string, string> | null;
  tenantCodes: Record<string, string> | null;
  entityReferences: { type: string; id: string; role?: string }[] | null;
  entry: Date | null;
  exit: Date | null;
  from: Date | null;
  to: Date | null;
}

export type ParsedEvent = { ok: true; event: EventRecord } | { ok: false; message: string; field: string };

const COMMON_ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/;

/**
 * An ISO-8601 instant, UTC unless it carries an offset. It is on the ingest path, once per event:
 * the form `toISOString` writes is read character by character ({@link canonicalInstant}), the
 * other common calendar forms by a regular expression (six times faster than a general parser);
 * any other ISO form goes to luxon.
 */
export function instant(value: unknown): Date | undefined {
  if (typeof value !== "string") return undefined;
  const ms = canonicalInstant(value);
  if (ms !== undefined) return new Date(ms);
  const text = value.trim();
  const m = COMMON_ISO.exec(text);
  if (m === null) {
    const parsed = DateTime.fromISO(text, { zone: "utc", setZone: true });
    return parsed.isValid ? parsed.toJSDate() : undefined;
  }
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? "0"].map(Number) as [number, number, number, number, number, number];
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  // Not Date.UTC, which reads the years 0–99 as 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number(((m[7] ?? "") + "000").slice(0, 3)));
  let t = date.getTime();
  const check = new Date(t);
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) return undefined;
  const zone = m[8];
  if (zone !== undefined && zone !== "Z") {
    const digits = zone.slice(1).replace(":", "");
    const offsetMinutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || "0");
    if (offsetMinutes > 18 * 60) return undefined;
    t -= (zone[0] === "-" ? -1 : 1) * offsetMinutes * 60_000;
  }
  return new Date(t);
}

const DIGIT_0 = 48;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The digits of `text` from `at` to `at + count` as a number; -1 when one of them is not a digit. */
function digits(text: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const d = text.charCodeAt(i) - DIGIT_0;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * The instant of the form `Date.prototype.toISOString` writes, `YYYY-MM-DDTHH:MM:SS.sssZ` (or
 * without the milliseconds), read character by character: what nearly every upload sends, and
 * ten times faster than the regular expression. Undefined for any other text, even a valid one
 * (the general reading in {@link instant} decides that); an impossible date or time in this form
 * is undefined there too, so the answer is the same either way.
 */
export function canonicalInstant(text: string): number | undefined {
  const length = text.length;
  if ((length !== 20 && length !== 24) || text.charCodeAt(length - 1) !== 90 /* Z */) return undefined;
  if (text[4] !== "-" || text[7] !== "-" || text[10] !== "T" || text[13] !== ":" || text[16] !== ":") return undefined;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  let millis = 0;
  if (length === 24) {
    if (text[19] !== ".") return undefined;
    millis = digits(text, 20, 3);
  }
  if (year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 || millis < 0) return undefined;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!)) return undefined;
  // Days since 1970-01-01 of the proleptic Gregorian calendar (H. Hinnant's days_from_civil).
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const days = era * 146097 + yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear - 719468;
  return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis;
}

function textMap(value: unknown): Record<string, string> | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const entries = Object.entries(value);
  return entries.every(([, v]) => typeof v === "string") ? (Object.fromEntries(entries) as Record<string, string>) : undefined;
}

/** A fraction of a second with a digit other than 0 past the third: finer than the millisecond the service keeps. */
const FINER_THAN_MS = /[.,]\d{3}0*[1-9]/;

/**
 * The bound of a range given with digits finer than a millisecond, as the first whole millisecond
 * at or after it: `instant` cuts those digits (a floor), and an event kept in milliseconds lies in
 * [from, to) exactly when it lies in [ceil(from), ceil(to)). So a range never answers or deletes an
 * event before its `from`, nor leaves out one before its `to`.
 */
export function rangeBoundMillis(text: string, flooredMillis: number): number {
  return FINER_THAN_MS.test(text) ? flooredMillis + 1 : flooredMillis;
}

/**
 * The instant of an ingested field, or why not. Digits finer than a millisecond are accepted when
 * they are zeros (`…:00.123000Z`) and refused otherwise, never cut: two events a microsecond apart
 * would otherwise replace each other (shared/SEMANTICS.md, "Edges, fixed").
 */
function ingestedInstant(field: string, value: unknown): Date | ParsedEvent {
  // The form toISOString writes (nearly every upload's) has no digit past the millisecond.
  const canonical = typeof value === "string" ? canonicalInstant(value) : undefined;
  if (canonical !== undefined) return instantInRange(canonical) ? new Date(canonical) : outOfRange(field, value);
  const at = instant(value);
  if (at === undefined) return { ok: false, field, message: `${field} ${JSON.stringify(value)} is not an ISO-8601 date-time` };
  if ((value as string).length >= 24 && FINER_THAN_MS.test(value as string)) {
    return { ok: false, field, message: `${field} ${JSON.stringify(value)} has digits finer than a millisecond that are not zeros; the service keeps milliseconds and does not cut them` };
  }
  if (!instantInRange(at.getTime())) return outOfRange(field, value);
  return at;
}

function outOfRange(field: string, value: unknown): ParsedEvent {
  return { ok: false, field, message: `${field} ${JSON.stringify(value)} is outside the accepted dates, ${INSTANT_RANGE_TEXT}` };
}

/**
 * Checks one event of an upload and returns it typed, or says what is wrong with which field.
 * `itemId` comes from the URL (one item) or from the event itself (many items). A numeric string
 * is accepted as the value only where the format has no numbers (CSV).
 */
export function parseEvent(raw: unknown, itemIdFromPath: string | undefined, numericStrings = false): ParsedEvent {
  const plain = plainEvent(raw, itemIdFromPath);
  return plain !== undefined ? { ok: true, event: plain } : readEvent(raw, itemIdFromPath, numericStrings);
}

/** {@link parseEvent} without its short way for the common row ({@link plainEvent}): every row read in full. */
export function readEvent(raw: unknown, itemIdFromPath: string | undefined, numericStrings = false): ParsedEvent {
  if (raw instanceof UnreadableRow) return { ok: false, field: "", message: raw.message };
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return { ok: false, field: "", message: "an event must be an object" };
  // A streamed row is checked here as a JSON body is at the edge: its text, its keys and its depth
  // (a row inputSound passes nests less than 8 levels).
  const fault = inputSound(raw) ? undefined : (inputFaults(raw, "")[0] ?? depthFault(raw, ""));
  if (fault !== undefined) return { ok: false, field: fault.path ?? "", message: fault.message };
  const e = raw as Record<string, unknown>;
  const itemId = itemIdFromPath ?? e.itemId;
  if (!isUuid(itemId)) return { ok: false, field: "itemId", message: "itemId must be the uuid of an Item" };
  const timestamp = ingestedInstant("timestamp", e.timestamp);
  if (!(timestamp instanceof Date)) return timestamp;
  let value = e.value;
  if (numericStrings && typeof value === "string" && value.trim() !== "") value = Number(value);
  if (typeof value !== "number" || !Number.isFinite(value)) return { ok: false, field: "value", message: `value ${JSON.stringify(e.value)} is not a finite number` };
  if (e.sourceId !== undefined && e.sourceId !== null && typeof e.sourceId !== "string") return { ok: false, field: "sourceId", message: "sourceId must be text" };
  // Part of the events' primary key: bounded in bytes by its index (docs/reference/input-limits.md).
  if (typeof e.sourceId === "string" && e.sourceId.length > TEXT_MAX_BYTES.sourceId / 3) {
    const bytes = utf8Bytes(e.sourceId);
    if (bytes > TEXT_MAX_BYTES.sourceId) return { ok: false, field: "sourceId", message: `sourceId ${tooManyBytes(TEXT_MAX_BYTES.sourceId, bytes)}` };
  }
  let tags: string[] | null = null;
  if (e.tags !== undefined && e.tags !== null) {
    if (!Array.isArray(e.tags) || !e.tags.every((t) => typeof t === "string")) return { ok: false, field: "tags", message: "tags must be an array of text" };
    tags = e.tags as string[];
  }
  const keyValues = textMapField(e, "keyValues");
  if (keyValues === undefined) return { ok: false, field: "keyValues", message: "keyValues must be an object of text values" };
  const tenantCodes = textMapField(e, "tenantCodes");
  if (tenantCodes === undefined) return { ok: false, field: "tenantCodes", message: "tenantCodes must be an object of text values" };
  let entityReferences: EventRecord["entityReferences"] = null;
  if (e.entityReferences !== undefined && e.entityReferences !== null) {
    const refs = e.entityReferences;
    const valid =
      Array.isArray(refs) &&
      refs.every((r) => r !== null && typeof r === "object" && typeof (r as { type?: unknown }).type === "string" && typeof (r as { id?: unknown }).id === "string");
    if (!valid) return { ok: false, field: "entityReferences", message: "entityReferences must be an array of { type, id, role? }" };
    entityReferences = refs as EventRecord["entityReferences"];
  }
  const entry = metaInstant(e, "entry");
  if (entry !== null && !(entry instanceof Date)) return entry;
  const exit = metaInstant(e, "exit");
  if (exit !== null && !(exit instanceof Date)) return exit;
  const from = metaInstant(e, "from");
  if (from !== null && !(from instanceof Date)) return from;
  const to = metaInstant(e, "to");
  if (to !== null && !(to instanceof Date)) return to;
  return {
    ok: true,
    event: { itemId: itemId.toLowerCase(), timestamp, value, sourceId: typeof e.sourceId === "string" ? e.sourceId : "", tags, keyValues, tenantCodes, entityReferences, entry, exit, from, to },
  };
}

/** An event's map of text values, null when absent; undefined when it is not one. */
function textMapField(e: Record<string, unknown>, name: "keyValues" | "tenantCodes"): Record<string, string> | null | undefined {
  return e[name] === undefined || e[name] === null ? null : textMap(e[name]);
}

/** An event's optional instant (entry, exit, from, to), null when absent, or why it is refused. */
function metaInstant(e: Record<string, unknown>, name: "entry" | "exit" | "from" | "to"): Date | ParsedEvent | null {
  return e[name] === undefined || e[name] === null ? null : ingestedInstant(name, e[name]);
}

/** The last item id {@link plainEvent} read, and its lower-case form: a feed's rows repeat a few ids. */
let lastItemId: string | undefined;
let lastItemLower = "";

/**
 * The event of the common row — `itemId` (unless the path gives it), `timestamp` in the form
 * `toISOString` writes, a number `value`, optionally a short sound `sourceId`, the other fields
 * absent or null — read in one pass over its keys, without the general walk of {@link inputSound}
 * (none of these texts can hold what it looks for, but the source id, which is checked here), with
 * no temporary object. Undefined for any other row, even a valid one: {@link parseEvent} then reads
 * it in full ({@link readEvent}), so an event this accepts is the one the full reading answers
 * (test/timeseries/parse-event.test.ts), and every other row gets the same answer as before.
 */
export function plainEvent(raw: unknown, itemIdFromPath: string | undefined): EventRecord | undefined {
  if (raw === null || typeof raw !== "object" || Object.getPrototypeOf(raw) !== Object.prototype) return undefined;
  const e = raw as Record<string, unknown>;
  let sourceId = "";
  // Inherited enumerable keys too (for…in): any key not listed sends the row to the full reading.
  for (const key in e) {
    switch (key) {
      case "itemId":
        if (!isUuid(e.itemId)) return undefined;
        break;
      case "timestamp":
      case "value":
        break;
      case "sourceId": {
        const s = e.sourceId;
        if (s === null || s === undefined) break;
        if (typeof s !== "string" || s.length > TEXT_MAX_BYTES.sourceId / 3 || textFault(s) !== undefined) return undefined;
        sourceId = s;
        break;
      }
      case "tags":
      case "keyValues":
      case "tenantCodes":
      case "entityReferences":
      case "entry":
      case "exit":
      case "from":
      case "to":
        if (e[key] !== null && e[key] !== undefined) return undefined;
        break;
      default:
        return undefined;
    }
  }
  const value = e.value;
  if (typeof value !== "number" || !Number.isFinite(value)) return undefined;
  const text = e.timestamp;
  const ms = typeof text === "string" ? canonicalInstant(text) : undefined;
  if (ms === undefined || !instantInRange(ms)) return undefined;
  const itemId = itemIdFromPath ?? e.itemId;
  if (typeof itemId !== "string") return undefined;
  if (itemId !== lastItemId) {
    if (!isUuid(itemId)) return undefined;
    lastItemLower = itemId.toLowerCase();
    lastItemId = itemId;
  }
  return { itemId: lastItemLower, timestamp: new Date(ms), value, sourceId, tags: null, keyValues: null, tenantCodes: null, entityReferences: null, entry: null, exit: null, from: null, to: null };
}
