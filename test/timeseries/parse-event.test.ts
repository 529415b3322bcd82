import { expect } from "chai";
import fc from "fast-check";
import { MAX_INSTANT_MS, MIN_INSTANT_MS } from "../../src/input.js";
import { parseEvent, plainEvent, readEvent } from "../../src/timeseries/events.js";

/**
 * parseEvent reads the common row (itemId, a canonical timestamp, a number, a short source id, no
 * other field) the short way (plainEvent) and every other row in full (readEvent). The short way
 * must answer what the full reading answers, for every row: rows drawn around its edges — ids in
 * either case or not ids, instants in and out of range and in other forms, values of other types,
 * source ids with NUL, lone surrogates or too many bytes, optional fields null, absent or set, keys
 * it does not know, a `__proto__` key from JSON, objects of other prototypes.
 */

const UUIDS = ["0b6f1f9e-3c1a-4c59-9d4e-8f0a1b2c3d4e", "0B6F1F9E-3C1A-4C59-9D4E-8F0A1B2C3D4E", "7d1c2b3a-0000-4000-8000-00000000abcd"];
const itemId = fc.oneof(fc.constantFrom(...UUIDS), fc.constantFrom("not-a-uuid", "", "0b6f1f9e3c1a4c599d4e8f0a1b2c3d4e0000", 42, null));
const timestamp = fc.oneof(
  fc.integer({ min: MIN_INSTANT_MS - 1000, max: MAX_INSTANT_MS + 1000 }).map((ms) => new Date(ms).toISOString()),
  fc.integer({ min: 0, max: 4e12 }).map((ms) => new Date(ms).toISOString().replace(".000Z", "Z")),
  fc.constantFrom("2026-01-01T00:00:00+01:00", "2026-01-01T00:00:00.000001Z", "2026-02-30T00:00:00.000Z", "2026-01-01 00:00:00Z", "2026-01-01T24:00:00Z", "x", 1767225600000),
);
const value = fc.oneof(fc.double(), fc.constantFrom(-0, 0, "1.5", "", null, true));
const sourceId = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.string({ unit: "binary", maxLength: 4 }),
  fc.constantFrom("a\u0000b", "\ud800", "x\udc00", "😀", "é".repeat(667), "a".repeat(2001), null, 7),
);
const optional = fc.constantFrom(null, undefined, "x", ["t"], { k: "v" }, "2026-01-01T00:00:00.000Z");
const row = fc
  .record(
    {
      itemId,
      timestamp,
      value,
      sourceId,
      tags: optional,
      keyValues: optional,
      entry: optional,
      to: optional,
      other: fc.constantFrom(1, "y\u0000"),
    },
    { requiredKeys: [] },
  )
  .chain((r) =>
    fc.constantFrom<unknown>(
      r,
      // Through JSON, as an upload's rows come (undefined fields dropped), with a __proto__ key at times.
      JSON.parse(JSON.stringify(r)),
      JSON.parse(`{"__proto__": {"tags": 1}, ${JSON.stringify(r).slice(1)}`.replace(", }", "}")),
      Object.assign(Object.create(null), r),
    ),
  );

describe("parseEvent: the short way for the common row answers what the full reading answers", () => {
  it("every row, with and without the item of the path (fast-check)", () => {
    fc.assert(
      fc.property(row, fc.constantFrom(undefined, UUIDS[0], UUIDS[1]), fc.boolean(), (raw, fromPath, numericStrings) => {
        const full = readEvent(raw, fromPath, numericStrings);
        expect(parseEvent(raw, fromPath, numericStrings)).to.deep.equal(full);
        const plain = plainEvent(raw, fromPath);
        if (plain !== undefined) expect({ ok: true, event: plain }).to.deep.equal(full);
      }),
      { numRuns: 3000 },
    );
  });

  it("takes the short way for the rows feeds send, the item's id in lower case", () => {
    const rows = [
      { itemId: UUIDS[1], timestamp: "2026-01-01T00:15:00.000Z", value: 1.5 },
      { itemId: UUIDS[1], timestamp: "2026-01-01T00:30:00Z", value: -0, sourceId: "s", tags: null },
      { itemId: UUIDS[2], timestamp: "2026-01-01T00:45:00.000Z", value: 2, sourceId: null, keyValues: undefined },
    ];
    for (const raw of rows) {
      const plain = plainEvent(raw, undefined);
      expect(plain, JSON.stringify(raw)).to.not.equal(undefined);
      expect({ ok: true, event: plain }).to.deep.equal(readEvent(raw, undefined));
    }
    expect(plainEvent(rows[0], undefined)!.itemId).to.equal(UUIDS[0]);
    // Rows it leaves to the full reading.
    expect(plainEvent({ ...rows[0], tags: ["t"] }, undefined)).to.equal(undefined);
    expect(plainEvent({ ...rows[0], sourceId: "a\u0000" }, undefined)).to.equal(undefined);
    expect(plainEvent({ ...rows[0], timestamp: "2026-01-01T00:15:00+00:00" }, undefined)).to.equal(undefined);
  });
});
