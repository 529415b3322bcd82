import { createInterface } from "node:readline";
import type { Readable } from "node:stream";

/** A row of an upload that could not even be read (bad JSON, a CSV line of the wrong width). */
export class UnreadableRow {
  constructor(readonly message: string) {}
}

/** NDJSON: one JSON event per line, read as the upload streams in; blank lines are skipped. */
export async function* ndjsonRows(stream: Readable): AsyncGenerator<unknown> {
  for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
    if (line.trim() === "") continue;
    try {
      yield JSON.parse(line) as unknown;
    } catch (err) {
      yield new UnreadableRow(`the line is not JSON: ${(err as Error).message}`);
    }
  }
}

/** Splits one CSV line (RFC 4180 quoting, no line breaks inside fields). */
export function csvFields(line: string): string[] | undefined {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    let field = "";
    if (line[i] === '"') {
      i++;
      for (;;) {
        if (i >= line.length) return undefined;
        if (line[i] === '"') {
          if (line[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += line[i++];
      }
      if (i < line.length && line[i] !== ",") return undefined;
    } else {
      const end = line.indexOf(",", i);
      field = end < 0 ? line.slice(i) : line.slice(i, end);
      i = end < 0 ? line.length : end;
    }
    fields.push(field);
    if (i >= line.length) return fields;
    i++; // the comma
  }
}

const CSV_COLUMNS = new Set(["timestamp", "value", "sourceId", "itemId", "tags", "entry", "exit", "from", "to"]);

/**
 * CSV with a header line naming its columns: `timestamp`, `value`, and optionally `sourceId`,
 * `itemId`, `tags` (separated by `|`), `entry`, `exit`, `from`, `to`. Empty cells are absent.
 */
export async function* csvRows(stream: Readable): AsyncGenerator<unknown> {
  let header: string[] | undefined;
  for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
    if (line.trim() === "") continue;
    const fields = csvFields(line);
    if (header === undefined) {
      header = fields?.map((f) => f.trim()) ?? [];
      const unknown = header.filter((h) => !CSV_COLUMNS.has(h));
      if (unknown.length > 0 || !header.includes("timestamp") || !header.includes("value")) {
        yield new UnreadableRow(`the CSV header must name timestamp and value, and only columns of ${[...CSV_COLUMNS].join(", ")}; found ${header.join(",")}`);
        return;
      }
      continue;
    }
    if (fields === undefined || fields.length !== header.length) {
      yield new UnreadableRow(`the line has ${fields?.length ?? "unreadable"} fields where the header has ${header.length}`);
      continue;
    }
    const row: Record<string, unknown> = {};
    header.forEach((name, k) => {
      const cell = fields[k]!;
      if (cell === "") return;
      row[name] = name === "tags" ? cell.split("|") : cell;
    });
    yield row;
  }
}
