import { type Readable, Transform } from "node:stream";
import { CsvError, parse } from "csv-parse";
import { ProblemError } from "../errors.js";
import { parseJson } from "../json.js";
import { CSV_TEXT_COLUMNS, restoreCell } from "./csv-cells.js";

/** A row of an upload that could not even be read (bad JSON, a CSV line of the wrong width). */
export class UnreadableRow {
  constructor(readonly message: string) {}
}

/**
 * A line (NDJSON) or row (CSV) longer than the limit: the upload ends there, `413`, before more of
 * the line is held (docs/reference/input-limits.md).
 */
export function lineTooLong(line: number | undefined, limit: number, what: "line" | "row"): ProblemError {
  const message = `${what}${line === undefined ? "" : ` ${line}`} of the upload is longer than ${limit} bytes, the most UPLOAD_LINE_LIMIT_BYTES allows`;
  return new ProblemError("INVALID_REQUEST", `${message}; nothing was stored`, {
    status: 413,
    errors: [{ path: "body", ...(line === undefined ? {} : { line }), message }],
  });
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The lines of a stream, split at line feeds (a carriage return ends a line too, as for readline),
 * each at most `limit` bytes: the bytes of a line are held only up to the limit, so one endless line
 * costs no more memory than that. Lines of ASCII white space only are not yielded. The stream is
 * not destroyed when reading stops early: the caller answers, then reads the rest away.
 */
async function* boundedLines(stream: Readable, limit: number): AsyncGenerator<string> {
  let pieces: Buffer[] = [];
  let held = 0;
  let line = 1;
  const take = () => {
    const text = pieces.length === 1 ? pieces[0]!.toString("utf8") : Buffer.concat(pieces, held).toString("utf8");
    pieces = [];
    held = 0;
    return text.includes("\r") ? text.split("\r") : [text];
  };
  for await (const chunk of stream.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer | string>) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    let start = 0;
    for (;;) {
      const end = bytes.indexOf(LF, start);
      const stop = end === -1 ? bytes.length : end;
      held += stop - start;
      // A line's ending (CR LF) is not part of it: one byte more is held until its LF is seen.
      if (held > limit + 1 || (end !== -1 && held - (endsWithCr(bytes, stop, pieces) ? 1 : 0) > limit)) throw lineTooLong(line, limit, "line");
      if (stop > start) pieces.push(bytes.subarray(start, stop));
      if (end === -1) break;
      // A blank line is passed over here, not decoded and handed on: millions of them (a few bytes
      // of gzip can hold 30 M) cost a scan of their bytes, which BODY_LIMIT_BYTES bounds when encoded.
      if (isBlank(pieces)) {
        pieces = [];
        held = 0;
      } else yield* take();
      line++;
      start = end + 1;
    }
  }
  if (held > 0) yield* take();
}

/** ASCII white space (space, tab, CR, vertical tab, form feed): what a blank NDJSON line may hold. */
const BLANK = new Uint8Array(256);
for (const c of [0x20, 0x09, CR, 0x0b, 0x0c]) BLANK[c] = 1;

/** Whether the bytes of `pieces` are all ASCII white space; stops at the first that is not (a row's first byte). */
function isBlank(pieces: Buffer[]): boolean {
  for (const piece of pieces) {
    for (let i = 0; i < piece.length; i++) if (BLANK[piece[i]!] === 0) return false;
  }
  return true;
}

/** Whether the line ending at `stop` of `bytes` (its start perhaps in `pieces`) ends with a CR. */
function endsWithCr(bytes: Buffer, stop: number, pieces: Buffer[]): boolean {
  if (stop > 0) return bytes[stop - 1] === CR;
  const last = pieces.at(-1);
  return last !== undefined && last[last.length - 1] === CR;
}

/**
 * NDJSON: one JSON event per line, read as the upload streams in; blank lines are skipped (those of
 * ASCII white space before they are decoded, see {@link boundedLines}). A line
 * longer than `maxLineBytes` ends the upload with a `413` (see {@link lineTooLong}).
 */
export async function* ndjsonRows(stream: Readable, maxLineBytes: number): AsyncGenerator<unknown> {
  for await (const line of boundedLines(stream, maxLineBytes)) {
    if (line.trim() === "") continue;
    try {
      yield parseJson(line);
    } catch (err) {
      yield new UnreadableRow(`the line is not JSON: ${(err as Error).message}`);
    }
  }
}

const QUOTE = 0x22;
const SPACE = 0x20;
const TAB = 0x09;

/**
 * A CSV stream's bytes with the spaces and tabs of its blank lines (outside a quoted field) taken
 * out, their line endings kept, so csv-parse counts the same lines. It passes over an empty line
 * for next to nothing, but a line of spaces is a row narrower than the header, for which it builds
 * an error (~0.1 ms each: minutes for the 5 M lines of 10 MiB). Quotes are followed by their
 * parity, which is exact for every CSV csv-parse reads (a stray quote ends the upload there).
 */
function withoutBlankLines(): Transform {
  let quoted = false;
  /** The line so far holds only spaces and tabs, and began outside a quoted field. */
  let blank = true;
  /** Its bytes in earlier chunks, not yet passed on. */
  let held: Buffer[] = [];
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const out = Buffer.allocUnsafe(chunk.length);
      let length = 0;
      let lineStart = 0; // where the line begins in `out`
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i]!;
        if (quoted) {
          if (byte === QUOTE) quoted = false; // an escaped quote ("") turns it on again at once
        } else if (byte === LF || byte === CR) {
          if (blank) {
            length = lineStart;
            held = [];
          }
          blank = true;
          out[length++] = byte;
          lineStart = length;
          continue;
        } else if (!blank || (byte !== SPACE && byte !== TAB)) {
          if (blank) for (const piece of held.splice(0)) this.push(piece);
          blank = false;
          if (byte === QUOTE) quoted = true;
        }
        out[length++] = byte;
      }
      if (blank && length > lineStart) {
        held.push(Buffer.from(out.subarray(lineStart, length)));
        length = lineStart;
      }
      if (length > 0) this.push(out.subarray(0, length));
      done();
    },
  });
}

const CSV_COLUMNS = new Set(["timestamp", "value", "sourceId", "itemId", "tags", "entry", "exit", "from", "to"]);

/**
 * CSV with a header line naming its columns: `timestamp`, `value`, and optionally `sourceId`,
 * `itemId`, `tags` (separated by `|`), `entry`, `exit`, `from`, `to`, each once. Empty cells are
 * absent. A row longer than `maxRowBytes` ends the upload with a `413` (see {@link lineTooLong}).
 */
export async function* csvRows(stream: Readable, maxRowBytes: number): AsyncGenerator<unknown> {
  // RFC 4180: quoted fields may hold commas, quotes (doubled) and line breaks. Rows of another
  // width than the header are reported one by one; text that cannot be read as CSV at all (a
  // quote left open, a quote inside an unquoted field) ends the upload there, named by its line.
  // max_record_size bounds what the parser holds of one row: its fields so far and the bytes of the
  // one being read. It is checked before a byte is added, so one less lets exactly maxRowBytes in.
  if (stream.errored !== null) throw stream.errored;
  const filtered = stream.pipe(withoutBlankLines());
  const parser = filtered.pipe(parse({ bom: true, relax_column_count: true, skip_empty_lines: true, info: true, max_record_size: maxRowBytes - 1 }));
  // pipe does not pass on the source's errors (a body that cannot be decoded): the parser ends with them.
  const failed = (err: Error) => parser.destroy(err);
  stream.once("error", failed);
  let header: string[] | undefined;
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      if (record.length === 1 && record[0]!.trim() === "") continue; // a line of spaces
      if (header === undefined) {
        header = record.map((f) => f.trim());
        const unknown = header.filter((h) => !CSV_COLUMNS.has(h));
        if (unknown.length > 0 || !header.includes("timestamp") || !header.includes("value")) {
          yield new UnreadableRow(`the CSV header must name timestamp and value, and only columns of ${[...CSV_COLUMNS].join(", ")}; found ${header.join(",")}`);
          return;
        }
        const twice = header.find((h, k) => header!.indexOf(h) !== k);
        if (twice !== undefined) {
          yield new UnreadableRow(`the CSV header names the column ${twice} more than once; each column may appear once: ${header.join(",")}`);
          return;
        }
        continue;
      }
      if (record.length !== header.length) {
        yield new UnreadableRow(`line ${info.lines} has ${record.length} fields where the header has ${header.length}`);
        continue;
      }
      const row: Record<string, unknown> = {};
      header.forEach((name, k) => {
        const cell = record[k]!;
        if (cell === "") return;
        const text = CSV_TEXT_COLUMNS.has(name) ? restoreCell(cell) : cell;
        row[name] = name === "tags" ? text.split("|") : text;
      });
      yield row;
    }
  } catch (err) {
    if (!(err instanceof CsvError)) throw err;
    if (err.code === "CSV_MAX_RECORD_SIZE") throw lineTooLong(typeof err.lines === "number" ? err.lines : undefined, maxRowBytes, "row");
    yield new UnreadableRow(`the CSV cannot be read from line ${err.lines ?? "?"} on: ${err.message}`);
  } finally {
    stream.off("error", failed);
    stream.unpipe(filtered);
    filtered.destroy();
    parser.destroy();
  }
}
