import { Readable } from "node:stream";
import { expect } from "chai";
import fc from "fast-check";
import { ProblemError } from "../../src/errors.js";
import { csvRows, ndjsonRows, UnreadableRow } from "../../src/timeseries/upload.js";

/** The NDJSON reader's line splitting and its line limit (UPLOAD_LINE_LIMIT_BYTES), whatever the chunking; the CSV reader's blank lines. */

/** `text` as a stream of byte chunks cut at `cuts`. */
function chunked(text: string, cuts: number[]): Readable {
  const bytes = Buffer.from(text, "utf8");
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((x, y) => x - y);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const cut of [...at, bytes.length]) {
    if (cut > from) pieces.push(bytes.subarray(from, cut));
    from = Math.max(from, cut);
  }
  return Readable.from(pieces, { objectMode: false });
}

async function rows(stream: Readable, limit: number): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const row of ndjsonRows(stream, limit)) out.push(row instanceof UnreadableRow ? "unreadable" : row);
  return out;
}

describe("NDJSON lines", () => {
  it("are the same rows however the bytes are chunked: LF, CR LF (even split between chunks), lone CR, blank lines, multi-byte characters", async () => {
    const text = '{"a":"中"}\r\n\n{"b":"😀"}\r{"c":1}\n   \n{"d":"é"}';
    const expected = [{ a: "中" }, { b: "😀" }, { c: 1 }, { d: "é" }];
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(100), { maxLength: 12 }), async (cuts) => {
        expect(await rows(chunked(text, cuts), 1024)).to.deep.equal(expected);
      }),
      { numRuns: 200, seed: 24 },
    );
  });

  it("hold at most the limit, line ending not counted: exactly the limit is read, one byte more is a 413 naming the line", async () => {
    const line = (bytes: number) => {
      const head = '{"pad":"';
      return `${head}${"x".repeat(bytes - head.length - 5)}中"}`;
    };
    expect(Buffer.byteLength(line(1024))).to.equal(1024);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(3000), { maxLength: 6 }), fc.constantFrom("\n", "\r\n"), async (cuts, end) => {
        expect(await rows(chunked(`{}${end}${line(1024)}${end}`, cuts), 1024)).to.have.length(2);
        let thrown: unknown;
        try {
          await rows(chunked(`{}${end}${line(1025)}${end}`, cuts), 1024);
        } catch (err) {
          thrown = err;
        }
        expect(thrown).to.be.instanceOf(ProblemError);
        expect((thrown as ProblemError).status).to.equal(413);
        expect((thrown as ProblemError).errors).to.deep.equal([{ path: "body", line: 2, message: "line 2 of the upload is longer than 1024 bytes, the most UPLOAD_LINE_LIMIT_BYTES allows" }]);
      }),
      { numRuns: 100, seed: 24 },
    );
  });
});

describe("CSV blank lines", () => {
  /** The rows of a CSV upload: objects, and the message of each unreadable one. */
  async function csv(stream: Readable): Promise<unknown[]> {
    const out: unknown[] = [];
    for await (const row of csvRows(stream, 1024)) out.push(row instanceof UnreadableRow ? row.message : row);
    return out;
  }

  it("are passed over, spaces and tabs and all, however chunked; inside a quoted field they are kept, and lines keep their numbers", async () => {
    const blank = fc.constantFrom("", " ", "\t", "  \t ");
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("\n", "\r\n"),
        fc.array(fc.record({ before: blank, inside: blank, quoted: fc.boolean() }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.nat(200), { maxLength: 12 }),
        async (end, rows, cuts) => {
          let text = `timestamp,value,sourceId${end}`;
          let line = 2;
          const expected: unknown[] = [];
          rows.forEach(({ before, inside, quoted }, i) => {
            text += `${before}${end}`;
            line++;
            // A quoted sourceId holding a line of only white space, kept as it is (LF inside: csv-parse
            // counts a CR LF inside quotes as two lines, with the filter or without it).
            const sourceId = quoted ? `a\n${inside}\nb` : `s${i}`;
            text += `2024-01-01T00:00:0${i}Z,${i},${quoted ? `"${sourceId}"` : sourceId}${end}`;
            expected.push({ timestamp: `2024-01-01T00:00:0${i}Z`, value: String(i), sourceId });
            line += quoted ? 3 : 1;
          });
          // A row narrower than the header after them: named by its line, counted with the blank ones.
          text += ` \t${end}1${end}`;
          expected.push(`line ${line + 1} has 1 fields where the header has 3`);
          expect(await csv(chunked(text, cuts))).to.deep.equal(expected);
        },
      ),
      { numRuns: 300, seed: 24 },
    );
  });
});
