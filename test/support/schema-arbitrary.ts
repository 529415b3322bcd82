import fc from "fast-check";

/**
 * fast-check arbitraries from the JSON schemas of an OpenAPI description: values the schema allows,
 * mixed with hostile ones (NUL, lone surrogates, huge text, SQL- and JSONata-like text, prototype
 * names, numbers past every bound, dates out of every range) so a route sees both what it accepts
 * and what it must refuse with a clear 4xx.
 */

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  patternProperties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  minLength?: number;
  maxLength?: number;
  /** Most UTF-8 bytes of a string (an extension keyword of the service's schemas). */
  "x-maxBytes"?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  default?: unknown;
}

/** Text that has broken parsers, databases and evaluators before. */
export const hostileStrings: string[] = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfffy",
  "\ud83d",
  "😀𝕏\u200b\u202e\ufeff",
  "x".repeat(70_000),
  "é".repeat(5_000),
  "' OR '1'='1' --",
  "'; DROP TABLE entities; --",
  '"); SELECT pg_sleep(10); --',
  "$$; select 1; $$",
  "${x}",
  "{{?cons}}",
  "$eval('1')",
  '$string($)',
  "result(?x) { $ }",
  "Agreement ?a; link:meter Item:?i.",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "value-",
  "constructor-",
  "../../etc/passwd",
  "%00",
  "%2F",
  "urn:uuid:00000000-0000-4000-8000-000000000000",
  "NaN",
  "Infinity",
  "-Infinity",
  "1e300",
  "-0",
  "9999999999999999999",
  "true",
  "null",
];

/** Numbers, and numbers written as text, past every bound. */
export const hostileNumbers: unknown[] = [
  0,
  -0,
  -1,
  0.5,
  1e300,
  -1e300,
  5e-324,
  Number.MAX_SAFE_INTEGER + 2,
  -Number.MAX_SAFE_INTEGER - 2,
  2 ** 31,
  -(2 ** 31) - 1,
  1e19,
  "Infinity",
  "-Infinity",
  "NaN",
  "1e300",
  "-0",
  "9999999999999999999",
  "0x10",
  "",
];

/** Dates PostgreSQL and Luxon cannot hold, and text that is no date. */
export const hostileDates: unknown[] = [
  "+100000-01-01T00:00:00Z",
  "-200000-01-01T00:00:00Z",
  "+275760-09-13T00:00:00Z",
  "0000-01-01T00:00:00Z",
  "-000001-01-01T00:00:00Z",
  "4714-11-24T00:00:00Z BC",
  "2024-02-30T00:00:00Z",
  "2024-13-01T00:00:00Z",
  "2024-01-01T25:00:00Z",
  "2024-01-01T00:00:00+25:00",
  "2024-01-01",
  "yesterday",
  "infinity",
  "-infinity",
  "epoch",
  "",
  0,
  -1,
  1e300,
  null,
  true,
  [],
  {},
];

/** Object keys that have confused lookups on plain objects. */
export const hostileKeys: string[] = ["__proto__", "constructor", "prototype", "toString", "valueOf", "hasOwnProperty", "", "\u0000", "\ud800", "a.b", "$", "?x", "x".repeat(5_000)];

/** A small deterministic generator (mulberry32), so text drawn from a seed is the same on every run. */
function seeded(seed: number): () => number {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

/** Code point ranges of characters of 1, 2, 3 and 4 UTF-8 bytes (letters, CJK, emoji: no surrogates, no NUL). */
const WIDTHS: Record<1 | 2 | 3 | 4, [number, number]> = { 1: [0x21, 0x7e], 2: [0x0400, 0x04ff], 3: [0x4e00, 0x9fff], 4: [0x1f300, 0x1f5ff] };

/**
 * Text of exactly `bytes` UTF-8 bytes, in characters of `width` bytes (the rest in ASCII), drawn at
 * random from `seed`: no compression shortens it, as a database's index would a repeated one.
 */
export function textOfBytes(bytes: number, width: 1 | 2 | 3 | 4, seed: number): string {
  const random = seeded(seed);
  const [from, to] = WIDTHS[width];
  const pick = (lo: number, hi: number) => String.fromCodePoint(lo + Math.floor(random() * (hi - lo + 1)));
  let text = "";
  for (let i = 0; i < Math.floor(bytes / width); i++) text += pick(from, to);
  for (let i = 0; i < bytes % width; i++) text += pick(0x61, 0x7a);
  return text;
}

/** `count` characters of `width` UTF-8 bytes each. */
export function textOfCharacters(count: number, width: 1 | 2 | 3 | 4, seed: number): string {
  return textOfBytes(count * width, width, seed);
}

/**
 * Byte sizes on either side of every limit text meets on its way to the database: the tenant
 * (128), a name (200 characters, 400 bytes), a key or sourceId (1,000 characters, 2,000 bytes),
 * a btree entry (2,704 bytes with its key's other columns), PostgreSQL's short text (126) and
 * page-size boundaries.
 */
export const LIMIT_BYTES = [126, 127, 128, 129, 199, 200, 201, 399, 400, 401, 999, 1000, 1001, 1999, 2000, 2001, 2600, 2703, 2704, 2705, 3000, 4000, 8192];

const width = fc.constantFrom<1 | 2 | 3 | 4>(1, 2, 3, 4);

/** Text sized in UTF-8 bytes near a limit, in characters of one to four bytes. */
export const sizedText: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom(...LIMIT_BYTES), width, fc.integer())
  .map(([bytes, w, seed]) => textOfBytes(bytes, w, seed));

/**
 * Text at a schema's own limits, in characters of one to four bytes: `maxLength` characters and
 * `x-maxBytes` bytes, and one less; when `hostile`, one more too.
 */
function nearLimits(schema: JsonSchema, hostile: boolean): fc.Arbitrary<string> | undefined {
  const sizes = (max: number) => fc.constantFrom(...[max - 1, max, ...(hostile ? [max + 1] : [])].filter((n) => n >= (schema.minLength ?? 0)));
  const choices: fc.Arbitrary<string>[] = [];
  const { maxLength, "x-maxBytes": maxBytes } = schema;
  if (maxLength !== undefined) {
    // Within a byte limit too, unless hostile.
    const fits = (n: number, w: 1 | 2 | 3 | 4) => hostile || maxBytes === undefined || n * w <= maxBytes;
    choices.push(fc.tuple(sizes(maxLength), width, fc.integer()).filter(([n, w]) => fits(n, w)).map(([n, w, seed]) => textOfCharacters(n, w, seed)));
  }
  if (maxBytes !== undefined) {
    const fits = (n: number, w: 1 | 2 | 3 | 4) => hostile || maxLength === undefined || Math.floor(n / w) + (n % w) <= maxLength;
    choices.push(fc.tuple(sizes(maxBytes), width, fc.integer()).filter(([n, w]) => fits(n, w)).map(([n, w, seed]) => textOfBytes(n, w, seed)));
  }
  return choices.length === 0 ? undefined : fc.oneof(...choices);
}

/**
 * JSON nested deeper than any code that recurses can follow: written as a marker string (see
 * {@link jsonText}), since JSON.stringify itself cannot write 20,000 levels.
 */
export const NESTING_DEPTHS = [63, 64, 65, 100, 1000, 5000, 10_000, 20_000];
const NESTED = "\u2063nested:";

export const deepValue: fc.Arbitrary<string> = fc.tuple(fc.constantFrom(...NESTING_DEPTHS), fc.constantFrom("array", "object")).map(([depth, kind]) => `${NESTED}${depth}:${kind}`);

/**
 * JSON.stringify, with every {@link deepValue} marker written as the nesting it stands for:
 * `[[[…1…]]]` or `{"a":{"a":…1…}}`.
 */
export function jsonText(value: unknown): string | undefined {
  const text = JSON.stringify(value);
  if (text === undefined || !text.includes(NESTED)) return text;
  return text.replace(/"\u2063nested:(\d+):(array|object)"/g, (_, depth: string, kind: string) => {
    const n = Number(depth);
    return kind === "array" ? `${"[".repeat(n)}1${"]".repeat(n)}` : `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;
  });
}

export const hostileString: fc.Arbitrary<string> = fc.constantFrom(...hostileStrings);
export const hostileKey: fc.Arbitrary<string> = fc.constantFrom(...hostileKeys);

/** Any JSON value, hostile text included. */
export const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 2, arbitrary: hostileString },
  { weight: 1, arbitrary: sizedText },
  { weight: 1, arbitrary: deepValue },
  { weight: 1, arbitrary: fc.constantFrom(...hostileNumbers) },
  { weight: 1, arbitrary: fc.constantFrom(...hostileDates) },
  { weight: 1, arbitrary: fc.dictionary(hostileKey, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }).map(ownKeys) },
);

/**
 * Values for properties the schemas leave open (`eventDateRange`, `queryOptions`, …): plausible
 * shapes, so the route's own checks run, with hostile leaves.
 */
export type Hints = Record<string, fc.Arbitrary<unknown>>;

export interface Options {
  /** Weight of a hostile value against one of the schema, at every level. */
  hostile: number;
  hints: Hints;
}

/** An object whose keys are all own, enumerable data properties, `__proto__` included. */
export function ownKeys(entries: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(entries)) Object.defineProperty(out, key, { value: entries[key], enumerable: true, writable: true, configurable: true });
  return out;
}

/** Builds an object from [key, value] pairs, keeping `__proto__` an own key. */
function fromPairs(pairs: [string, unknown][]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of pairs) Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  return out;
}

function typesOf(schema: JsonSchema): string[] {
  if (schema.type === undefined) return [];
  return Array.isArray(schema.type) ? schema.type : [schema.type];
}

/** Values that satisfy `schema` (mostly), and, with the weight `options.hostile`, values that do not. */
export function arbitraryOf(schema: JsonSchema, options: Options, name = ""): fc.Arbitrary<unknown> {
  const valid = validArbitrary(schema, options, name);
  if (options.hostile <= 0) return valid;
  return fc.oneof({ weight: 10, arbitrary: valid }, { weight: options.hostile, arbitrary: anyValue });
}

function validArbitrary(schema: JsonSchema, options: Options, name: string): fc.Arbitrary<unknown> {
  const hint = options.hints[name];
  if (hint !== undefined && schema.const === undefined && schema.enum === undefined) {
    return fc.oneof({ weight: 3, arbitrary: hint }, { weight: 1, arbitrary: structural(schema, options, name) });
  }
  return structural(schema, options, name);
}

function structural(schema: JsonSchema, options: Options, name: string): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum !== undefined) return fc.constantFrom(...schema.enum);
  const union = schema.anyOf ?? schema.oneOf;
  if (union !== undefined) return fc.oneof(...union.map((s) => arbitraryOf(s, options, name)));
  if (schema.allOf !== undefined) {
    return fc.tuple(...schema.allOf.map((s) => validArbitrary(s, options, name))).map((parts) =>
      fromPairs(parts.flatMap((p) => (p !== null && typeof p === "object" && !Array.isArray(p) ? Object.entries(p as Record<string, unknown>) : []))),
    );
  }
  const types = typesOf(schema);
  if (types.length > 1) return fc.oneof(...types.map((type) => structural({ ...schema, type }, options, name)));
  switch (types[0]) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "integer":
      return fc.integer({ min: Math.max(schema.minimum ?? -1_000_000, -1_000_000), max: Math.min(schema.maximum ?? 1_000_000, 1_000_000) });
    case "number":
      return fc.double({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9, noNaN: true, noDefaultInfinity: true });
    case "string":
      return stringArbitrary(schema, options);
    case "array":
      return fc.array(arbitraryOf(schema.items ?? {}, options, name), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 4, 4) });
    case "object":
      return objectArbitrary(schema, options);
    default:
      return anyValue;
  }
}

function stringArbitrary(schema: JsonSchema, options: Options): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 40, 40);
  if (schema.format === "uuid") return fc.uuid();
  if (schema.format === "date-time") return fc.date({ min: new Date("1900-01-01T00:00:00Z"), max: new Date("2200-01-01T00:00:00Z"), noInvalidDate: true }).map((d) => d.toISOString());
  if (schema.pattern !== undefined) {
    return fc
      .stringMatching(new RegExp(schema.pattern))
      .map((s) => s.slice(0, schema.maxLength ?? 200))
      .filter((s) => s.length >= min);
  }
  const text = fc.string({ minLength: min, maxLength: Math.max(min, max), unit: "binary" });
  const near = nearLimits(schema, options.hostile > 0);
  return near === undefined ? text : fc.oneof({ weight: 3, arbitrary: text }, { weight: 1, arbitrary: near });
}

function objectArbitrary(schema: JsonSchema, options: Options): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const names = Object.keys(properties);
  const fields = fc.tuple(
    ...names.map((key) =>
      fc.tuple(
        fc.constant(key),
        // A required property is there (most of the time, when hostile), an optional one about half of it.
        required.has(key) ? (options.hostile > 0 ? fc.oneof({ weight: 12, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }) : fc.constant(true)) : fc.boolean(),
        arbitraryOf(properties[key]!, options, key),
      ),
    ),
  );
  const open = schema.additionalProperties !== false;
  const valueOfExtra: JsonSchema = typeof schema.additionalProperties === "object" ? schema.additionalProperties : (Object.values(schema.patternProperties ?? {})[0] ?? {});
  // A closed object gets a stray key only when hostile.
  const extraKey = open ? fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), hostileKey) : fc.oneof({ weight: 5, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: hostileKey });
  const extras = fc.array(fc.tuple(extraKey, arbitraryOf(valueOfExtra, options, "")), { maxLength: open ? 3 : options.hostile > 0 ? 1 : 0 });
  return fc.tuple(fields, extras).map(([present, extra]) =>
    fromPairs([
      ...present.filter(([, here]) => here).map(([key, , value]) => [key, value] as [string, unknown]),
      ...extra.filter((pair): pair is [string, unknown] => pair[0] !== null),
    ]),
  );
}
