import { expect } from "chai";
import fc from "fast-check";
import { DateTime } from "luxon";
import { inputFaults, inputSound, isUuid, UUID } from "../../src/input.js";
import { canonicalInstant, instant } from "../../src/timeseries/events.js";

describe("reading event timestamps", () => {
  it("reads back every instant written as ISO-8601", () => {
    fc.assert(
      fc.property(fc.date({ min: new Date("1900-01-01T00:00:00Z"), max: new Date("2200-01-01T00:00:00Z"), noInvalidDate: true }), (d) => {
        expect(instant(d.toISOString())?.getTime()).to.equal(d.getTime());
      }),
      { numRuns: 2000 },
    );
  });

  it("agrees with luxon on the common form, offsets, missing seconds and impossible dates included", () => {
    const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, "0"));
    const text = fc
      .tuple(fc.integer({ min: 1970, max: 2100 }), two(13), two(32), two(23), two(59), fc.option(two(59)), fc.option(fc.integer({ min: 0, max: 999999 })), fc.constantFrom("", "Z", "+02:00", "-05:30", "+0100", "-11"))
      .map(([y, mo, d, h, mi, s, frac, zone]) => `${y}-${mo}-${d}T${h}:${mi}${s === null ? "" : `:${s}${frac === null ? "" : `.${frac}`}`}${zone}`);
    fc.assert(
      fc.property(text, (t) => {
        const luxon = DateTime.fromISO(t, { zone: "utc", setZone: true });
        expect(instant(t)?.getTime(), t).to.equal(luxon.isValid ? luxon.toMillis() : undefined);
      }),
      { numRuns: 3000 },
    );
  });

  it("refuses what is not a date-time", () => {
    for (const bad of ["", "yesterday", "2024-13-01T00:00:00Z", "2024-01-01T25:00:00Z", "2024-01-01T00:00:00+19:00", "1704067200000"]) expect(instant(bad), bad).to.equal(undefined);
    expect(instant(1704067200000)).to.equal(undefined);
  });
});

describe("the fast readers and writers of the ingest path", () => {
  const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, "0"));
  // toISOString's form, impossible dates and times included (month 00 and 13, day 00 to 32, hour 24, minute and second 60).
  const canonical = fc
    .tuple(fc.integer({ min: 0, max: 9999 }), two(13), two(32), two(24), two(60), two(60), fc.option(fc.integer({ min: 0, max: 999 })))
    .map(([y, mo, d, h, mi, s, ms]) => `${String(y).padStart(4, "0")}-${mo}-${d}T${h}:${mi}:${s}${ms === null ? "" : `.${String(ms).padStart(3, "0")}`}Z`);

  it("reads toISOString's form as luxon does, refusing the same impossible dates", () => {
    fc.assert(
      fc.property(canonical, (t) => {
        const luxon = DateTime.fromISO(t, { zone: "utc", setZone: true });
        // Luxon takes ISO 8601's 24:00:00 (the end of a day); the service refuses it, as RFC 3339's
        // hours (00–23) do and as the general reading always has (instant: hour > 23).
        const expected = luxon.isValid && t.slice(11, 13) !== "24" ? luxon.toMillis() : undefined;
        expect(instant(t)?.getTime(), t).to.equal(expected);
        const fast = canonicalInstant(t);
        // The fast reader answers for every possible date of its form, and only for its form.
        expect(fast, t).to.equal(expected);
      }),
      { numRuns: 5000 },
    );
    for (const t of ["2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2000-02-29T23:59:59.999Z", "0000-01-01T00:00:00.000Z"]) {
      const luxon = DateTime.fromISO(t, { zone: "utc", setZone: true });
      expect(canonicalInstant(t), t).to.equal(luxon.isValid ? luxon.toMillis() : undefined);
    }
    // The case fast-check found once in many thousand runs: luxon's end of day, refused by both readers.
    for (const t of ["1115-03-05T24:00:00.000Z", "3433-01-24T24:00:00Z"]) {
      expect(DateTime.fromISO(t, { zone: "utc", setZone: true }).isValid, t).to.equal(true);
      expect(canonicalInstant(t), t).to.equal(undefined);
      expect(instant(t), t).to.equal(undefined);
    }
  });

  it("leaves every other form to the general reading", () => {
    for (const t of ["2024-01-01T00:00:00+00:00", "2024-01-01T00:00:00.1Z", "2024-01-01T00:00Z", " 2024-01-01T00:00:00Z", "2024-01-01t00:00:00z", "2024-01-01T00:00:00.0000Z", "2024-01-01 00:00:00Z", "+02024-01-01T00:00:00Z"]) {
      expect(canonicalInstant(t), t).to.equal(undefined);
    }
    expect(instant(" 2024-01-01T00:00:00Z")?.getTime()).to.equal(Date.UTC(2024, 0, 1));
  });

  it("reads a uuid character by character exactly as the UUID expression does", () => {
    const hex = "0123456789abcdefABCDEF";
    // Uuids, each with one character changed, dropped or added now and then, and any text.
    const nearUuid = fc
      .tuple(fc.uuid(), fc.nat(40), fc.constantFrom("", "g", "-", "G", "0", " ", "é", "\u0000"), fc.constantFrom("replace", "insert", "drop", "keep", "upper"))
      .map(([u, at, c, how]) => (how === "keep" ? u : how === "upper" ? u.toUpperCase() : how === "drop" ? u.slice(0, at) + u.slice(at + 1) : u.slice(0, at) + c + u.slice(how === "replace" ? at + 1 : at)));
    const hexText = fc.string({ unit: fc.constantFrom(...hex, "-"), minLength: 30, maxLength: 40 });
    fc.assert(
      fc.property(fc.oneof(nearUuid, hexText, fc.string()), (text) => {
        expect(isUuid(text)).to.equal(UUID.test(text));
      }),
      { numRuns: 5000 },
    );
    expect([isUuid(undefined), isUuid(12), isUuid("123e4567-e89b-12d3-a456-426614174000"), isUuid("123E4567-E89B-12D3-A456-42661417400G")]).to.deep.equal([false, false, true, false]);
  });

  it("finds an input sound exactly when the full check finds no fault", () => {
    const awkwardText = fc.oneof(fc.string(), fc.constantFrom("__proto__", "constructor", "prototype", "a\u0000b", "\ud800", "x\udc00", "\ud83d\ude00"));
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: "small" }, awkwardText, fc.double(), fc.boolean(), fc.constant(null), fc.array(tie("node"), { maxLength: 4 }), fc.dictionary(awkwardText, tie("node"), { maxKeys: 4 })),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        // JSON-shaped: "__proto__" as an own key, as JSON.parse makes it.
        const parsed = JSON.parse(JSON.stringify(v) ?? "null") as unknown;
        expect(inputSound(parsed)).to.equal(inputFaults(parsed, "").length === 0);
      }),
      { numRuns: 3000 },
    );
    const deep = JSON.parse(`${"[".repeat(20)}"a\\u0000"${"]".repeat(20)}`) as unknown;
    expect(inputSound(deep)).to.equal(false);
    const deepSound = JSON.parse(`${"[".repeat(20)}1${"]".repeat(20)}`) as unknown;
    // Deeper than it looks: not called sound, the full check then says there is no fault.
    expect(inputSound(deepSound)).to.equal(false);
    expect(inputFaults(deepSound, "")).to.deep.equal([]);
    expect(inputSound(JSON.parse('{"constructor":{"prototype":1}}'))).to.equal(false);
    expect(inputSound(JSON.parse('{"__proto__":1}'))).to.equal(false);
  });
});
