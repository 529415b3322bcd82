import type { Knex } from "knex";
import { BinaryCopyWriter, field, uuidBytes } from "../db/copy-binary.js";
import { rawRows } from "../db/backend.js";
import { storageOf, type RowBatch, type Statement } from "../db/storage.js";
import type { EventRecord } from "./events.js";
import { markingMember, writtenDays } from "./rollup-store.js";

/** How an upload's batch of events reaches the table (ingest.ts checks them and hands them over). */

const EVENT_COLUMNS = "tenant, item_id, ts, source_id, value, tags, key_values, tenant_codes, entity_references, meta_entry, meta_exit, meta_from, meta_to";
const UPSERT = `on conflict (tenant, item_id, ts, source_id) do update set
       value = excluded.value, tags = excluded.tags, key_values = excluded.key_values, tenant_codes = excluded.tenant_codes,
       entity_references = excluded.entity_references, meta_entry = excluded.meta_entry, meta_exit = excluded.meta_exit,
       meta_from = excluded.meta_from, meta_to = excluded.meta_to`;

/**
 * Writes one batch, its events in key order, and marks its days for the rollups (rollup-store.ts)
 * in the same transaction. Most uploads append: every event is later than any stored for its item.
 * Such a batch is written without `ON CONFLICT`; `ON CONFLICT … DO UPDATE`, which makes re-sending
 * idempotent, is used only when a stored event may have the same key — or when the plain write
 * meets one anyway (a concurrent upload of the same events) and was rolled back to its savepoint.
 * How the rows travel (binary COPY on PostgreSQL, arrays on the embedded database) is the
 * backend's choice (src/db/backend.ts).
 */
export async function writeEvents(knex: Knex, tenant: string, events: EventRecord[]): Promise<number> {
  if (events.length === 0) return 0;
  const storage = storageOf(knex);
  // Rows that carry none of the optional fields (most feeds') travel as the key and the value only:
  // the columns left out are NULL, as they would be written.
  const plain = events.every(isPlain);
  const batch: RowBatch = {
    table: "events",
    columns: plain ? PLAIN_COLUMNS : EVENT_COLUMNS,
    size: events.length,
    copy: () => binaryRows(tenant, events, plain),
    select: (from, to) => arraysOf(tenant, events.slice(from, to), plain),
  };
  if ((await markAndProbe(knex, tenant, events)) && (await storage.appendRows(knex, batch))) return events.length;
  await storage.upsertRows(knex, batch, UPSERT);
  return events.length;
}

/** The columns of a row with no optional field: the first five of {@link EVENT_COLUMNS}. */
const PLAIN_COLUMNS = "tenant, item_id, ts, source_id, value";

/** Whether the event has none of the optional fields (tags, key values, tenant codes, references, meta instants). */
function isPlain(e: EventRecord): boolean {
  return e.tags === null && e.keyValues === null && e.tenantCodes === null && e.entityReferences === null && e.entry === null && e.exit === null && e.from === null && e.to === null;
}

/**
 * The batch in COPY's binary format, for the columns {@link EVENT_COLUMNS}, or {@link PLAIN_COLUMNS}
 * when `plain`. What begins every row of an item (the field count, the tenant, the item) is
 * encoded once per item: in key order, a batch's events come item by item.
 */
function* binaryRows(tenant: string, events: EventRecord[], plain: boolean): Generator<Buffer> {
  const out = new BinaryCopyWriter();
  const fields = plain ? 5 : 13;
  const tenantField = field(Buffer.from(tenant, "utf8"));
  let item: string | undefined;
  let start = tenantField;
  for (const e of events) {
    if (e.itemId !== item) start = rowStart(fields, tenantField, (item = e.itemId));
    out.raw(start);
    out.timestamptz(e.timestamp.getTime());
    out.text(e.sourceId);
    // −0 is stored as 0, as its text (and the embedded database's binding) writes it.
    out.float8(e.value === 0 ? 0 : e.value);
    if (!plain) {
      if (e.tags === null) out.null();
      else out.textArray(e.tags);
      for (const json of [e.keyValues, e.tenantCodes, e.entityReferences]) {
        if (json === null) out.null();
        else out.jsonb(JSON.stringify(json));
      }
      for (const at of [e.entry, e.exit, e.from, e.to]) {
        if (at === null) out.null();
        else out.timestamptz(at.getTime());
      }
    }
    if (out.filled) yield* out.take();
  }
  yield* out.end();
}

/** The bytes every row of the item begins with: its field count, the tenant's field, the item's. */
function rowStart(fields: number, tenantField: Buffer, itemId: string): Buffer {
  const start = Buffer.allocUnsafe(2 + tenantField.length + 20);
  start.writeInt16BE(fields, 0);
  tenantField.copy(start, 2);
  field(uuidBytes(itemId)).copy(start, 2 + tenantField.length);
  return start;
}

/** The batch as one array per column, unnested by the statement; of the columns {@link PLAIN_COLUMNS} only when `plain`. */
function arraysOf(tenant: string, events: EventRecord[], plain: boolean): Statement {
  const column = <T>(pick: (e: EventRecord) => T) => events.map(pick);
  const json = (v: unknown) => (v === null ? null : JSON.stringify(v));
  const key: Knex.RawBinding[] = [tenant, column((e) => e.itemId), column((e) => e.timestamp.toISOString()), column((e) => e.sourceId), column((e) => e.value)];
  if (plain) return { sql: `select ?, u.item_id, u.ts, u.source_id, u.value from unnest(?::uuid[], ?::timestamptz[], ?::text[], ?::float8[]) as u(item_id, ts, source_id, value)`, bindings: key };
  return {
    sql: `select ?, u.item_id, u.ts, u.source_id, u.value, u.tags::text[], u.key_values, u.tenant_codes, u.entity_references,
              u.meta_entry, u.meta_exit, u.meta_from, u.meta_to
       from unnest(?::uuid[], ?::timestamptz[], ?::text[], ?::float8[], ?::text[], ?::jsonb[], ?::jsonb[], ?::jsonb[],
                   ?::timestamptz[], ?::timestamptz[], ?::timestamptz[], ?::timestamptz[])
         as u(item_id, ts, source_id, value, tags, key_values, tenant_codes, entity_references, meta_entry, meta_exit, meta_from, meta_to)`,
    bindings: [
      ...key,
      // An array cannot be an element of another: each row's tags travel as an array literal, cast back above.
      column((e) => (e.tags === null ? null : arrayLiteral(e.tags))),
      column((e) => json(e.keyValues)),
      column((e) => json(e.tenantCodes)),
      column((e) => json(e.entityReferences)),
      column((e) => e.entry?.toISOString() ?? null),
      column((e) => e.exit?.toISOString() ?? null),
      column((e) => e.from?.toISOString() ?? null),
      column((e) => e.to?.toISOString() ?? null),
    ] as Knex.RawBinding[],
  };
}

/** A PostgreSQL text[] literal: every element quoted, quotes and backslashes escaped. */
function arrayLiteral(values: string[]): string {
  return `{${values.map((t) => `"${t.replace(/["\\]/g, (c) => `\\${c}`)}"`).join(",")}}`;
}

/**
 * Marks the batch's UTC days for the rollups and answers whether every event of the batch is later
 * than every stored event of its item, in one statement: one index probe per item, for an event at
 * or after its first in the batch, in the partitions from the batch's first instant on (pruned
 * when the statement is planned). The events are in key order.
 */
async function markAndProbe(knex: Knex, tenant: string, events: EventRecord[]): Promise<boolean> {
  const items: string[] = [];
  const firsts: string[] = [];
  let earliest = Number.POSITIVE_INFINITY;
  let item: string | undefined;
  for (const e of events) {
    if (e.itemId === item) continue;
    item = e.itemId;
    items.push(item);
    firsts.push(e.timestamp.toISOString());
    earliest = Math.min(earliest, e.timestamp.getTime());
  }
  const marking = markingMember(tenant, writtenDays(events));
  const rows = await rawRows<{ append: boolean }>(knex, {
    sql: `with ${marking.sql}
      select not exists (
        select 1 from unnest(?::uuid[], ?::timestamptz[]) as s(item_id, first)
        cross join lateral (select 1 from events e where e.tenant = ? and e.item_id = s.item_id and e.ts >= s.first and e.ts >= ? limit 1) as later
      ) as append`,
    bindings: [...marking.bindings, items, firsts, tenant, new Date(earliest).toISOString()],
  });
  return rows[0]?.append === true;
}
