import { Readable } from "node:stream";
import { expect } from "chai";
import fc from "fast-check";
import { neutraliseCell, restoreCell } from "../../src/timeseries/csv-cells.js";
import { CSV_HEADER, csvLine } from "../../src/timeseries/export.js";
import type { EventJson } from "../../src/timeseries/query.js";
import { csvRows } from "../../src/timeseries/upload.js";

/** What an upload reads from the CSV text: its rows as plain objects. */
async function uploaded(text: string): Promise<unknown[]> {
  const rows: unknown[] = [];
  for await (const row of csvRows(Readable.from([Buffer.from(text, "utf8")]), 1024 * 1024)) rows.push(row);
  return rows;
}

/** Text that survives UTF-8 (no lone surrogates): any code point, the formula starts and `'` often. */
const text = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 30 }),
  fc.tuple(fc.constantFrom("=", "+", "-", "@", "\t", "\r", "'", "''", "'=", " =", "\n="), fc.string({ maxLength: 20 })).map(([start, rest]) => start + rest),
  fc.string({ unit: fc.constantFrom("=", "+", "-", "@", "\t", "\r", "\n", "'", '"', ",", "a", "|"), maxLength: 8 }),
);

describe("CSV cells against spreadsheet formulas", () => {
  it("writes a text cell that begins with =, +, -, @, a tab, a carriage return or ' with a leading ', and nothing else", () => {
    expect(["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "'x"].map(neutraliseCell)).to.deep.equal(["'=1+1", "'+1", "'-1", "'@SUM(A1)", "'\tx", "'\rx", "''x"]);
    expect(["", "x=1", " =1", "1", "é"].map(neutraliseCell)).to.deep.equal(["", "x=1", " =1", "1", "é"]);
    expect(["'=1+1", "''x", "x", "'"].map(restoreCell)).to.deep.equal(["=1+1", "'x", "x", ""]);
  });

  it("exports the text columns neutralised, numbers and instants as they are", () => {
    const line = csvLine({ timestamp: "2024-01-01T00:00:00.000Z", value: -1.5, sourceId: '=HYPERLINK("http://x","y")', tags: ["@a", "b"], entry: "2024-01-01T00:00:00.000Z" });
    expect(line).to.equal(`2024-01-01T00:00:00.000Z,-1.5,"'=HYPERLINK(""http://x"",""y"")",'@a|b,2024-01-01T00:00:00.000Z,,,\r\n`);
  });

  it("uploads back exactly the sourceId and tags any export wrote (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        // An empty text is an empty cell, which an upload reads as absent; a tag holding `|` is split (documented).
        text.filter((s) => s !== ""),
        fc.array(text.filter((s) => s !== "" && !s.includes("|")), { minLength: 1, maxLength: 3 }),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        async (sourceId, tags, value) => {
          const event: EventJson = { timestamp: "2024-01-01T00:00:00.000Z", value, sourceId, tags };
          const rows = await uploaded(`${CSV_HEADER.join(",")}\r\n${csvLine(event)}`);
          expect(rows).to.deep.equal([{ timestamp: event.timestamp, value: String(value), sourceId, tags }]);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("reads one leading ' of a hand-written text cell as the escape: two of them store one", async () => {
    const rows = await uploaded("timestamp,value,sourceId,tags\n2024-01-01T00:00:00Z,-2,'=cmd,''x|y\n");
    expect(rows).to.deep.equal([{ timestamp: "2024-01-01T00:00:00Z", value: "-2", sourceId: "=cmd", tags: ["'x", "y"] }]);
  });
});
