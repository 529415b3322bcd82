import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { CsvError, parse } from "csv-parse";
import { parseJson } from "../json.js";
import { CSV_TEXT_COLUMNS, restoreCell } from "./csv-cells.js";

/** A row of an upload that could not even be read (bad JSON, a CSV line of the wrong width). */
export class UnreadableRow {
  constructor(readonly message: string) {}
}

/** NDJSON: one JSON event per line, read as the upload streams in; blank lines are skipped. */
export async function* ndjsonRows(stream: Readable): AsyncGenerator<unknown> {
  for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
    if (line.trim() === "") continue;
    try {
      yield parseJson(line);
    } catch (err) {
      yield new UnreadableRow(`the line is not JSON: ${(err as Error).message}`);
    }
  }
}

const CSV_COLUMNS = new Set(["timestamp", "value", "sourceId", "itemId", "tags", "entry", "exit", "from", "to"]);

/**
 * CSV with a header line naming its columns: `timestamp`, `value`, and optionally `sourceId`,
 * `itemId`, `tags` (separated by `|`), `entry`, `exit`, `from`, `to`. Empty cells are absent.
 */
export async function* csvRows(stream: Readable): AsyncGenerator<unknown> {
  // RFC 4180: quoted fields may hold commas, quotes (doubled) and line breaks. Rows of another
  // width than the header are reported one by one; text that cannot be read as CSV at all (a
  // quote left open, a quote inside an unquoted field) ends the upload there, named by its line.
  const parser = stream.pipe(parse({ bom: true, relax_column_count: true, skip_empty_lines: true, info: true }));
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
    yield new UnreadableRow(`the CSV cannot be read from line ${err.lines ?? "?"} on: ${err.message}`);
  } finally {
    stream.unpipe(parser);
    parser.destroy();
  }
}
