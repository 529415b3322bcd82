/**
 * The limits every input is held to, wherever it comes from (docs/reference/input-limits.md). The HTTP edge
 * checks strings once (src/http/input.ts); the domain checks dates, numbers and ids with these.
 */
import type { ProblemDetail } from "./errors.js";

/** An id is a plain uuid: 8-4-4-4-12 hex digits, no `urn:uuid:` prefix, no braces. */
export const UUID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
export const UUID = new RegExp(UUID_PATTERN);

/** True for a plain uuid (either case): {@link UUID}, read character by character (once per ingested event, faster than the expression). */
export function isUuid(value: unknown): value is string {
  if (typeof value !== "string" || value.length !== 36) return false;
  for (let k = 0; k < 36; k++) {
    const c = value.charCodeAt(k);
    if (k === 8 || k === 13 || k === 18 || k === 23) {
      if (c !== 45 /* - */) return false;
    } else if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70))) return false;
  }
  return true;
}

/** The longest `externalId` of an API or calculation definition, in the body and as a path parameter alike (ASCII: characters are bytes). */
export const EXTERNAL_ID_MAX_LENGTH = 200;

/**
 * The longest text of each indexed column, in UTF-8 bytes (docs/reference/input-limits.md). A PostgreSQL
 * btree entry holds at most 2,704 bytes, and a composite key shares them: each limit below is sized
 * so the longest key of its index, incompressible, fits with the 128-byte tenant, the 4-byte
 * length word of every text and the 8-byte entry header, on both backends.
 * - entities (tenant, type, key): 8 + 132 + 404 + 2,004 = 2,548 bytes;
 * - links (tenant, from, relation, to) and its reverse: 8 + 132 + 16 + 404 + 16 = 576;
 * - events (tenant, item, timestamp, sourceId): 8 + 132 + 16 + 8 + 2,004 = 2,168;
 * - api and calculation definitions (tenant, externalId): ASCII, {@link EXTERNAL_ID_MAX_LENGTH}.
 * Characters are not the measure: 1,000 CJK characters are 3,000 bytes.
 */
export const TEXT_MAX_BYTES = {
  /** An entity's `type` and a link's `relation`. */
  name: 400,
  /** An entity's `key`. */
  key: 2000,
  /** An event's `sourceId`. */
  sourceId: 2000,
} as const;

/** The length of a string in UTF-8 bytes (a lone surrogate counted as the three bytes of U+FFFD). */
export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/** The message of a text longer than its byte limit. */
export function tooManyBytes(limit: number, bytes: number): string {
  return `is ${bytes} bytes in UTF-8, longer than the ${limit} bytes allowed`;
}

/**
 * The deepest a JSON value may nest (objects and arrays), in a body, an upload row or a process
 * variable. Far below what the service's own recursive code (JSON.stringify, the schema validator,
 * JSONata) can take — some thousands of levels — and far above any real definition or event.
 */
export const MAX_JSON_DEPTH = 64;

/** The longest a path named in a depth problem is written: the middle is elided. */
const MAX_PATH_TEXT = 300;

/**
 * Where `value` first nests deeper than {@link MAX_JSON_DEPTH} (the path of the container one level
 * past it, under `base`), or undefined. Iterative, so any depth a parser let in is walked.
 */
export function depthFault(value: unknown, base: string): ProblemDetail | undefined {
  const steps = deepestSteps(value, 0);
  if (steps === undefined) return undefined;
  let at = base;
  for (let i = steps.length - 1; i >= 0; i--) {
    const step = steps[i]!;
    at = typeof step === "number" ? `${at}[${step}]` : memberPath(at, step);
  }
  if (at.length > MAX_PATH_TEXT) at = `${at.slice(0, MAX_PATH_TEXT / 2)}…${at.slice(-MAX_PATH_TEXT / 2)}`;
  return { path: at, message: `nests deeper than ${MAX_JSON_DEPTH} levels of objects and arrays, the most a JSON value may` };
}

/**
 * The steps (innermost first) to the first value nested MAX_JSON_DEPTH levels deep, or undefined.
 * Recursive, but never deeper than MAX_JSON_DEPTH frames; it allocates nothing on a sound value,
 * so a wide body (millions of small arrays) costs one pass and no garbage.
 */
function deepestSteps(value: unknown, depth: number): (string | number)[] | undefined {
  if (value === null || typeof value !== "object") return undefined;
  if (depth >= MAX_JSON_DEPTH) return [];
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const child: unknown = value[i];
      if (child === null || typeof child !== "object") continue;
      const steps = deepestSteps(child, depth + 1);
      if (steps !== undefined) {
        steps.push(i);
        return steps;
      }
    }
    return undefined;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const child = (value as Record<string, unknown>)[key];
    if (child === null || typeof child !== "object") continue;
    const steps = deepestSteps(child, depth + 1);
    if (steps !== undefined) {
      steps.push(key);
      return steps;
    }
  }
  return undefined;
}
export const EXTERNAL_ID_PATTERN = "^[A-Za-z0-9._:~-]+$";

/**
 * The largest `offset` of any paged answer: PostgreSQL's `integer`, far beyond any real page and
 * small enough that `offset + limit` stays exact in a double and in a `bigint`.
 */
export const MAX_OFFSET = 2_147_483_647;

/**
 * The instants accepted anywhere: four-digit years, from 1000-01-01T00:00:00Z up to, not including,
 * 9999-12-31T23:59:59.999Z, at which a range may end (so that every stored event can be asked
 * for). PostgreSQL and luxon go far beyond; the embedded database's driver reads the years 0–99
 * as 1900–1999 and cannot send a year past 9999, and no series here reaches back a thousand years.
 */
export const MIN_INSTANT_MS = Date.parse("1000-01-01T00:00:00Z");
export const MAX_INSTANT_MS = Date.parse("9999-12-31T23:59:59.999Z");
export const INSTANT_RANGE_TEXT = "from 1000-01-01T00:00:00Z up to, not including, 9999-12-31T23:59:59.999Z (at which a range may end)";

/**
 * True when the instant (ms since the epoch) lies in the accepted range; `rangeEnd`: the end of a
 * half-open range, which may be the first instant past it, so that the last one can be asked for.
 */
export function instantInRange(ms: number, rangeEnd = false): boolean {
  return Number.isFinite(ms) && ms >= MIN_INSTANT_MS && (ms < MAX_INSTANT_MS || (rangeEnd && ms === MAX_INSTANT_MS));
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** What is wrong with a piece of text: a NUL character or a lone surrogate; undefined when it is sound. */
export function textFault(text: string): string | undefined {
  if (text.includes("\u0000")) return "holds a NUL character (U+0000), which text here may not contain";
  const lone = LONE_SURROGATE.exec(text);
  if (lone !== null) {
    return `holds a lone surrogate (U+${lone[0].charCodeAt(0).toString(16).toUpperCase()}), which is not Unicode text; send well-formed UTF-8 or \\u escapes in pairs`;
  }
  return undefined;
}

/** A key of a JSON object that names a JavaScript prototype: refused, never read as data. */
function protoKeyFault(key: string, parentKey: string | undefined): string | undefined {
  if (key === "__proto__") return 'the key "__proto__" is refused: it names an object\'s prototype in JavaScript';
  if (key === "prototype" && parentKey === "constructor") return 'the key "constructor.prototype" is refused: it names a prototype in JavaScript';
  return undefined;
}

/** `base.key` for a plain name, `base["key"]` (JSON-escaped) for anything else. */
function memberPath(base: string, key: string): string {
  const plain = /^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(key);
  if (base === "") return plain ? key : `[${JSON.stringify(key)}]`;
  return plain ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`;
}

const MAX_FAULTS = 20;

/** How deep {@link inputSound} looks before it leaves the answer to {@link inputFaults}. */
const SOUND_DEPTH = 8;

/**
 * True only when {@link inputFaults} would find nothing in `value` — the same checks, without
 * building a path for every member; false also when the value nests deeper than it looks, so a
 * caller then asks {@link inputFaults} for the faults (or the certainty that there are none).
 * On the ingest path, once per event: the paths cost more than the checks.
 */
export function inputSound(value: unknown, parentKey?: string, depth = 0): boolean {
  if (typeof value === "string") return textFault(value) === undefined;
  if (value === null || typeof value !== "object") return true;
  if (depth >= SOUND_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!inputSound(value[i], undefined, depth + 1)) return false;
    return true;
  }
  for (const k of Object.keys(value)) {
    if (textFault(k) !== undefined || protoKeyFault(k, parentKey) !== undefined) return false;
    if (!inputSound((value as Record<string, unknown>)[k], k, depth + 1)) return false;
  }
  return true;
}

/**
 * Every string of a parsed JSON value, keys included, checked for NUL and lone surrogates, and
 * every key for a prototype name. Returns at most 20 problems, each naming its path under `base`.
 * Iterative, so a deeply nested body cannot exhaust the stack.
 */
export function inputFaults(value: unknown, base: string): ProblemDetail[] {
  // A sound value (nearly every one) is answered by a walk that builds no path: a wide body of
  // millions of small values must not cost a path string per value.
  if (inputSound(value)) return [];
  const faults: ProblemDetail[] = [];
  const stack: { value: unknown; path: string; key: string | undefined }[] = [{ value, path: base, key: undefined }];
  while (stack.length > 0 && faults.length < MAX_FAULTS) {
    const { value: v, path, key } = stack.pop()!;
    if (typeof v === "string") {
      const fault = textFault(v);
      if (fault !== undefined) faults.push({ path, message: fault });
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: `${path}[${i}]`, key: undefined });
    } else if (v !== null && typeof v === "object") {
      const children: typeof stack = [];
      for (const k of Object.keys(v)) {
        const at = memberPath(path, k);
        const fault = textFault(k) ?? protoKeyFault(k, key);
        if (fault !== undefined) faults.push({ path: at, message: fault.startsWith("the key") ? fault : `the key ${fault}` });
        else children.push({ value: (v as Record<string, unknown>)[k], path: at, key: k });
      }
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
    }
  }
  return faults.slice(0, MAX_FAULTS);
}
