import { randomUUID } from "node:crypto";
import { expect } from "chai";
import fc from "fast-check";
import type { Knex } from "knex";
import { MAX_INSTANT_MS, MIN_INSTANT_MS } from "../../src/input.js";
import { ingestEvents } from "../../src/timeseries/ingest.js";
import { backend, randomTenant } from "../support/backends.js";

/**
 * The events an upload stores are the events it sent, whichever way the rows travel: binary COPY
 * on PostgreSQL (src/db/copy-binary.ts), bound arrays on the embedded database. Every column of
 * random events — text with quotes, backslashes, braces and characters past the BMP, empty and
 * full tag arrays, JSON maps, instants from the year 1000 to 9999, −0, subnormal and extreme
 * doubles — is read back from both databases as PostgreSQL's own text of the row, and the two
 * must be equal; then a re-send of some of them with new values (the ON CONFLICT path, through a
 * staging COPY on PostgreSQL) likewise.
 */

const ITEMS = 3;
/** Text as uploads send it: any code point but NUL (refused at the edge, as lone surrogates are). */
const text = (maxLength: number) => fc.string({ unit: fc.constantFrom("a", "é", '"', "\\", "{", "}", ",", " ", "'", "€", "😀", "\n", "NULL"), maxLength });
const anyText = (maxLength: number) => fc.oneof(text(maxLength), fc.string({ unit: "binary", maxLength }).filter((s) => !s.includes("\u0000")));
const instantMs = fc.oneof(
  fc.integer({ min: MIN_INSTANT_MS, max: MAX_INSTANT_MS - 1 }),
  fc.constantFrom(MIN_INSTANT_MS, MAX_INSTANT_MS - 1, Date.UTC(2000, 0, 1), Date.UTC(2000, 0, 1) - 1, 0, -1, Date.UTC(2026, 2, 29, 1)),
  // A few instants, so that an upload sends the same key twice (the later row wins).
  fc.integer({ min: 0, max: 3 }).map((k) => Date.UTC(2026, 0, 1) + k * 900_000),
);
const mapOfText = fc.dictionary(
  anyText(8).filter((k) => k !== "__proto__"),
  anyText(12),
  { maxKeys: 3 },
);
const event = fc.record(
  {
    item: fc.integer({ min: 0, max: ITEMS - 1 }),
    t: instantMs,
    sourceId: anyText(10),
    value: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(-0, 0, Number.MIN_VALUE, -Number.MAX_VALUE, 0.1, 1 / 3)),
    tags: fc.array(anyText(8), { maxLength: 4 }),
    keyValues: mapOfText,
    tenantCodes: mapOfText,
    entityReferences: fc.array(fc.record({ type: anyText(6), id: anyText(6), role: anyText(6) }, { requiredKeys: ["type", "id"] }), { maxLength: 2 }),
    entry: instantMs,
    exit: instantMs,
    from: instantMs,
    to: instantMs,
  },
  { requiredKeys: ["item", "t", "value"] },
);

type Sent = typeof event extends fc.Arbitrary<infer T> ? T : never;

/** The upload's JSON rows for the items' ids. */
function rows(ids: string[], events: Sent[]): Record<string, unknown>[] {
  return events.map(({ item, t, entry, exit, from, to, ...rest }) => {
    const row: Record<string, unknown> = { ...rest, itemId: ids[item], timestamp: new Date(t).toISOString() };
    for (const [name, at] of Object.entries({ entry, exit, from, to })) if (at !== undefined) row[name] = new Date(at).toISOString();
    return row;
  });
}

/** Every stored event of the tenant as PostgreSQL's text of its columns (the tenant and item ids left out), in key order. */
async function storedText(knex: Knex, tenant: string, ids: string[]): Promise<string[]> {
  const { rows: stored } = (await knex.raw(
    `select array_position(?::uuid[], item_id) as item,
            (ts, source_id, value, tags, key_values, tenant_codes, entity_references, meta_entry, meta_exit, meta_from, meta_to)::text as columns
     from events where tenant = ? order by item_id, ts, source_id`,
    [ids, tenant],
  )) as { rows: { item: number; columns: string }[] };
  return stored.map((r) => `${r.item} ${r.columns}`);
}

describe("ingested events are stored as sent, on both backends alike", function () {
  this.timeout(180_000);

  it("every column of random events (binary COPY on PostgreSQL, arrays on the embedded database), then re-sent with new values (fast-check)", async () => {
    const [embedded, postgres] = [await backend("embedded"), await backend("postgres")];
    await fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 30 }), fc.array(fc.nat(), { maxLength: 10 }), async (events, resent) => {
        const tenant = randomTenant();
        const ids = Array.from({ length: ITEMS }, () => randomUUID()).sort();
        const stored: string[][] = [];
        for (const db of [embedded, postgres]) {
          await db.knex("entities").insert(ids.map((id, k) => ({ tenant, id, type: "Item", key: `i${k}`, attributes: "{}" })));
          const first = await ingestEvents(db.knex, tenant, rows(ids, events));
          expect(first.rejected).to.deep.equal([]);
          const before = await storedText(db.knex, tenant, ids);
          stored.push(before);
          // Some events again, each value changed: their rows replaced, the others kept.
          const again = resent.map((k) => ({ ...events[k % events.length]!, value: k + 0.5, tags: ["again"] }));
          await ingestEvents(db.knex, tenant, rows(ids, again));
          stored.push(await storedText(db.knex, tenant, ids));
        }
        expect(stored[2]).to.deep.equal(stored[0]);
        expect(stored[3]).to.deep.equal(stored[1]);
      }),
      { numRuns: 40 },
    );
  });

  it("a batch of rows with no optional field (COPYed as its key and value only) stores NULLs, and replaces a stored event's optional fields, on both backends alike", async () => {
    const stored: string[][] = [];
    for (const db of [await backend("embedded"), await backend("postgres")]) {
      const tenant = randomTenant();
      const ids = [randomUUID(), randomUUID()].sort();
      await db.knex("entities").insert(ids.map((id, k) => ({ tenant, id, type: "Item", key: `i${k}`, attributes: "{}" })));
      const at = (k: number) => new Date(Date.UTC(2026, 0, 1) + k * 900_000).toISOString();
      await ingestEvents(db.knex, tenant, [
        { itemId: ids[0], timestamp: at(0), value: 1, tags: ["t"], keyValues: { unit: "kWh" }, entry: at(9) },
        { itemId: ids[1], timestamp: at(0), value: 2, sourceId: "s" },
      ]);
      // Plain rows: a new event, and one re-sent over the event with optional fields.
      await ingestEvents(db.knex, tenant, [
        { itemId: ids[0], timestamp: at(0), value: 3 },
        { itemId: ids[1], timestamp: at(1), value: 4, sourceId: "s" },
      ]);
      const rows = await storedText(db.knex, tenant, ids);
      expect(rows, db.kind).to.deep.equal([
        '1 ("2026-01-01 00:00:00+00","",3,,,,,,,,)',
        '2 ("2026-01-01 00:00:00+00",s,2,,,,,,,,)',
        '2 ("2026-01-01 00:15:00+00",s,4,,,,,,,,)',
      ]);
      stored.push(rows);
    }
    expect(stored[1]).to.deep.equal(stored[0]);
  });

  it("stores the instants of the years 1000 and 9999 to the millisecond, −0 as 0, and an empty tag array as {}", async () => {
    for (const db of [await backend("embedded"), await backend("postgres")]) {
      const tenant = randomTenant();
      const id = randomUUID();
      await db.knex("entities").insert({ tenant, id, type: "Item", key: "i", attributes: "{}" });
      const first = new Date(MIN_INSTANT_MS).toISOString();
      const last = new Date(MAX_INSTANT_MS - 1).toISOString();
      await ingestEvents(db.knex, tenant, [
        { itemId: id, timestamp: first, value: -0, tags: [], entry: last },
        { itemId: id, timestamp: last, value: -Number.MAX_VALUE, sourceId: 'q"\\😀', tags: ['{a,"b"}', "NULL"], from: "1999-12-31T23:59:59.999Z" },
      ]);
      const { rows: stored } = (await db.knex.raw(
        `select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS') as ts, value::text, source_id, tags::text, to_char(meta_entry at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS') as entry,
                to_char(meta_from at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS') as "from"
         from events where tenant = ? order by ts`,
        [tenant],
      )) as { rows: Record<string, string | null>[] };
      expect(stored, db.kind).to.deep.equal([
        { ts: "1000-01-01T00:00:00.000", value: "0", source_id: "", tags: "{}", entry: "9999-12-31T23:59:59.998", from: null },
        { ts: "9999-12-31T23:59:59.998", value: "-1.7976931348623157e+308", source_id: 'q"\\😀', tags: '{"{a,\\"b\\"}","NULL"}', entry: null, from: "1999-12-31T23:59:59.999" },
      ]);
    }
  });
});
