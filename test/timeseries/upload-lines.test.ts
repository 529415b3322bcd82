import { Readable } from "node:stream";
import { expect } from "chai";
import fc from "fast-check";
import { ProblemError } from "../../src/errors.js";
import { ndjsonRows, UnreadableRow } from "../../src/timeseries/upload.js";

/** The NDJSON reader's line splitting and its line limit (UPLOAD_LINE_LIMIT_BYTES), whatever the chunking. */

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
