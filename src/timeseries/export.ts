import type { Knex } from "knex";
import { deleteAndMark } from "./rollup-store.js";
import { eventJson, eventsInRange, type EventJson, type EventRow, type QueryOptions } from "./query.js";
import type { ResolvedRange } from "./periods.js";
import { neutraliseCell } from "./csv-cells.js";

/** Rows read per statement while streaming: memory holds one page, never the export. */
const PAGE = 2000;

const COLUMNS = ["item_id", "ts", "value", "source_id", "tags", "key_values", "tenant_codes", "entity_references", "meta_entry", "meta_exit", "meta_from", "meta_to"];

type KeyedRow = EventRow & { item_id: string };

/**
 * Every event of the items in the range that passes the filter, by timestamp (then item, then
 * source), page by page: each page starts after the last row of the one before (keyset paging),
 * so a page costs the same however deep into the export it lies.
 */
export async function* streamEvents(
  knex: Knex,
  tenant: string,
  itemIds: string[],
  range: ResolvedRange,
  options: QueryOptions,
  descending = false,
): AsyncGenerator<{ itemId: string; event: EventJson }> {
  const order = descending ? "desc" : "asc";
  let after: [Date, string, string] | undefined;
  for (;;) {
    const query = eventsInRange(knex, tenant, itemIds, range, options)
      .select(COLUMNS)
      .orderBy([
        { column: "ts", order },
        { column: "item_id", order },
        { column: "source_id", order },
      ])
      .limit(PAGE);
    if (after !== undefined) query.andWhereRaw(`(ts, item_id, source_id) ${descending ? "<" : ">"} (?, ?::uuid, ?)`, after);
    const rows = (await query) as KeyedRow[];
    for (const row of rows) yield { itemId: row.item_id, event: eventJson(row) };
    if (rows.length < PAGE) return;
    const last = rows[rows.length - 1]!;
    after = [last.ts, last.item_id, last.source_id];
  }
}

/** Each item's latest stored event (the latest by time, then by source id); items without one are absent. */
export async function latestEvents(knex: Knex, tenant: string, itemIds: string[]): Promise<Map<string, EventJson>> {
  if (itemIds.length === 0) return new Map();
  const rows = (await knex("events")
    .where({ tenant })
    .whereIn("item_id", itemIds)
    .distinctOn("item_id")
    .orderBy([{ column: "item_id" }, { column: "ts", order: "desc" }, { column: "source_id", order: "desc" }])
    .select(COLUMNS)) as KeyedRow[];
  return new Map(rows.map((r) => [r.item_id, eventJson(r)]));
}

/** Deletes the item's events in `[from, to)` in one statement (one transaction), their days marked for the rollups; answers how many. */
export async function deleteEvents(knex: Knex, tenant: string, itemId: string, from: Date, to: Date): Promise<number> {
  return deleteAndMark(knex, tenant, itemId, from, to);
}

/**
 * The CSV header of an export: the columns an upload takes (src/timeseries/upload.ts), so an export
 * can be uploaded again. keyValues, tenantCodes and entityReferences have no CSV column there and
 * are left out; NDJSON carries every field.
 */
export const CSV_HEADER = ["timestamp", "value", "sourceId", "tags", "entry", "exit", "from", "to"];

/**
 * One event as a CSV line (RFC 4180): tags joined by `|`, as an upload reads them; the text cells
 * neutralised against spreadsheet formulas (csv-cells.ts), which an upload undoes.
 */
export function csvLine(event: EventJson): string {
  const cell = (v: string | number | undefined): string => {
    if (v === undefined) return "";
    const text = String(v);
    return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  const textCell = (v: string | undefined) => cell(v === undefined ? undefined : neutraliseCell(v));
  return `${[
    cell(event.timestamp),
    cell(event.value),
    textCell(event.sourceId),
    textCell(event.tags?.join("|")),
    cell(event.entry),
    cell(event.exit),
    cell(event.from),
    cell(event.to),
  ].join(",")}\r\n`;
}
