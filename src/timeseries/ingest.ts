import type { Knex } from "knex";
import { compareKeys, writeTransaction } from "../db/write-retry.js";
import { copyFromStdin, isPostgresKnex } from "../db/database.js";
import { isUniqueViolation, ProblemError, type ProblemDetail } from "../errors.js";
import { itemIngestKinds } from "../graph/items.js";
import { publishEvents, tenantWatched } from "../streams/publish.js";
import { parseEvent, type EventRecord } from "./events.js";

/** Rows written per statement; the rows travel as eleven arrays, so the statement size does not grow. */
const BATCH = 5000;
/** Most bad rows named in one answer. */
const MAX_LISTED = 100;

export interface IngestOptions {
  /** The item every event belongs to (`POST /items/{itemId}/events`); else each event names its own. */
  itemId?: string;
  /** Store the good rows and report the bad ones, instead of storing nothing when any row is bad. */
  partial?: boolean;
  /** CSV carries values as text. */
  numericStrings?: boolean;
}

export interface IngestResult {
  stored: number;
  /** Events of `STREAM` items pushed to their subscribers and not stored. */
  streamed: number;
  rejected: ProblemDetail[];
  /** Bad rows beyond those listed. */
  rejectedTotal: number;
}

/**
 * Stores events from any source of raw rows (a JSON array, NDJSON or CSV lines), batch by batch in
 * one transaction: memory holds one batch, never the upload. Each row is checked; by default one
 * bad row fails the whole upload (nothing stored, every bad row listed up to 100); with `partial`
 * the good rows are stored and the bad ones reported. Items must exist in the tenant and must not
 * be derived (`itemAction: CALCULATE`). Re-sending an event replaces it: `(item, timestamp, sourceId)`.
 * Every accepted event is announced to the live streams when the transaction commits; the events
 * of a `STREAM` item are not stored unless the item's attribute `persist` is true.
 *
 * Each batch is written in key order, so concurrent uploads of the same events lock them in the same
 * order. An upload that fits in one batch is held whole, and its transaction is re-run on a deadlock
 * or serialization failure; a longer stream cannot be read twice, so a conflict there is answered
 * `503 UNAVAILABLE` (retry the upload).
 */
export async function ingestEvents(knex: Knex, tenant: string, rows: AsyncIterable<unknown> | Iterable<unknown>, options: IngestOptions = {}): Promise<IngestResult> {
  const source = await holdIfShort(rows, BATCH);
  if (source.whole) return writeTransaction(knex, (trx) => ingestInTransaction(trx, tenant, source.rows, options));
  return knex.transaction((trx) => ingestInTransaction(trx, tenant, source.rows, options));
}

/** The rows, read whole into memory when there are at most `limit` of them; else the rows read so far followed by the rest. */
async function holdIfShort(
  rows: AsyncIterable<unknown> | Iterable<unknown>,
  limit: number,
): Promise<{ whole: true; rows: unknown[] } | { whole: false; rows: AsyncIterable<unknown> }> {
  if (Array.isArray(rows)) return { whole: true, rows };
  const iterator = Symbol.asyncIterator in rows ? rows[Symbol.asyncIterator]() : (rows as Iterable<unknown>)[Symbol.iterator]();
  const held: unknown[] = [];
  while (held.length <= limit) {
    const next = await iterator.next();
    if (next.done === true) return { whole: true, rows: held };
    held.push(next.value);
  }
  async function* rest(): AsyncGenerator<unknown> {
    yield* held;
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) yield next.value;
  }
  return { whole: false, rows: rest() };
}

async function ingestInTransaction(trx: Knex.Transaction, tenant: string, rows: AsyncIterable<unknown> | Iterable<unknown>, options: IngestOptions): Promise<IngestResult> {
  const rejected: ProblemDetail[] = [];
  let rejectedTotal = 0;
  let stored = 0;
  let streamed = 0;
  const items = new ItemCheck(trx, tenant);
  // Asked once, at the first batch written: the answer holds to the commit (see tenantWatched).
  let watched: boolean | undefined;
  let batch = new Map<string, { event: EventRecord; row: number }>();
  const reject = (row: number, field: string, message: string) => {
    rejectedTotal++;
    if (rejected.length < MAX_LISTED) rejected.push({ path: `events[${row}]${field === "" || field.startsWith("[") ? field : `.${field}`}`, row, message });
  };
  const flush = async () => {
    const entries = [...batch.entries()].sort(([a], [b]) => compareKeys(a, b)).map(([, e]) => e);
    batch = new Map();
    const refusals = await items.refusals(entries.map((e) => e.event.itemId));
    const writable = entries.filter((e) => !refusals.has(e.event.itemId)).map((e) => e.event);
    // Refusals are listed by row, as the caller wrote them: their order never depends on the ids.
    const refused = entries.filter((e) => refusals.has(e.event.itemId)).sort((x, y) => x.row - y.row);
    for (const { event, row } of refused) reject(row, "itemId", refusals.get(event.itemId)!);
    if (rejectedTotal > 0 && !options.partial) return; // nothing will be kept: stop writing, keep checking
    const kept = writable.filter((e) => items.isStored(e.itemId));
    stored += await writeEvents(trx, tenant, kept);
    streamed += writable.length - kept.length;
    watched ??= writable.length > 0 ? await tenantWatched(trx, tenant) : undefined;
    if (watched === true) await publishEvents(trx, tenant, writable);
  };

  let row = 0;
  for await (const raw of rows) {
    const parsed = parseEvent(raw, options.itemId, options.numericStrings);
    if (!parsed.ok) reject(row, parsed.field, parsed.message);
    else {
      const e = parsed.event;
      // The same key twice in one statement is an error for PostgreSQL; the later row wins anyway.
      batch.set(`${e.itemId}|${e.timestamp.getTime()}|${e.sourceId}`, { event: e, row });
      if (batch.size >= BATCH) await flush();
    }
    row++;
  }
  if (batch.size > 0) await flush();

  rejected.sort((x, y) => (x.row as number) - (y.row as number));
  if (rejectedTotal > 0 && !options.partial) {
    const more = rejectedTotal > rejected.length ? ` (the first ${rejected.length} listed)` : "";
    throw new ProblemError("INVALID_REQUEST", `${rejectedTotal} of ${row} events are not valid${more}; nothing was stored`, { errors: rejected });
  }
  return { stored, streamed, rejected, rejectedTotal };
}

/** Remembers, per upload, which items exist, may take events, and keep them. */
class ItemCheck {
  private readonly known = new Map<string, string | null>();
  private readonly notStored = new Set<string>();
  constructor(
    private readonly knex: Knex,
    private readonly tenant: string,
  ) {}

  /** Items of the list that may not take events, each with the reason. */
  async refusals(itemIds: string[]): Promise<Map<string, string>> {
    const unknown = [...new Set(itemIds)].filter((id) => !this.known.has(id));
    if (unknown.length > 0) {
      const found = await itemIngestKinds(this.knex, this.tenant, unknown);
      for (const id of unknown) {
        const kind = found.get(id);
        const action = kind?.action;
        if (kind?.stored === false) this.notStored.add(id);
        this.known.set(
          id,
          !found.has(id)
            ? `there is no Item ${id} in this tenant`
            : action === "CALCULATE"
              ? `Item ${id} is derived (itemAction CALCULATE): its events are calculated, not ingested`
              : null,
        );
      }
    }
    const refused = new Map<string, string>();
    for (const id of itemIds) {
      const reason = this.known.get(id);
      if (reason != null) refused.set(id, reason);
    }
    return refused;
  }

  /** Whether the item's events are stored (all but a STREAM item's without `persist`); known after {@link refusals}. */
  isStored(itemId: string): boolean {
    return !this.notStored.has(itemId);
  }
}

const EVENT_COLUMNS = "tenant, item_id, ts, source_id, value, tags, key_values, tenant_codes, entity_references, meta_entry, meta_exit, meta_from, meta_to";
const UPSERT = `on conflict (tenant, item_id, ts, source_id) do update set
       value = excluded.value, tags = excluded.tags, key_values = excluded.key_values, tenant_codes = excluded.tenant_codes,
       entity_references = excluded.entity_references, meta_entry = excluded.meta_entry, meta_exit = excluded.meta_exit,
       meta_from = excluded.meta_from, meta_to = excluded.meta_to`;

/**
 * Writes one batch. Most uploads append: every event is later than any stored for its item. Such
 * a batch is a plain INSERT under a savepoint; `ON CONFLICT … DO UPDATE`, which makes re-sending
 * idempotent, is used only when a stored event may have the same key — or when the plain INSERT
 * meets one anyway (a concurrent upload of the same events), after rolling back to the savepoint.
 * On PostgreSQL the rows reach the server by `COPY` into a temporary staging table; the embedded
 * database has no COPY from a client and takes them as arrays.
 */
async function writeEvents(knex: Knex, tenant: string, events: EventRecord[]): Promise<number> {
  if (events.length === 0) return 0;
  const source = (await stage(knex, tenant, events))
    ? { sql: `select ${EVENT_COLUMNS} from events_staging`, bindings: [] as Knex.RawBinding[] }
    : arraysOf(tenant, events);
  const insert = (conflict: string) => knex.raw(`insert into events (${EVENT_COLUMNS}) ${source.sql} ${conflict}`, source.bindings);
  if (await appendsOnly(knex, tenant, events)) {
    await knex.raw("savepoint ingest_batch");
    try {
      await insert("");
      await knex.raw("release savepoint ingest_batch");
      return events.length;
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      await knex.raw("rollback to savepoint ingest_batch");
    }
  }
  await insert(UPSERT);
  return events.length;
}

/** COPY of the batch into `events_staging` (emptied first; dropped at the end of the transaction). False on the embedded database. */
async function stage(knex: Knex, tenant: string, events: EventRecord[]): Promise<boolean> {
  const text = (v: string) => `"${v.replace(/"/g, '""')}"`;
  const instant = (d: Date | null | undefined) => (d == null ? "" : d.toISOString());
  const json = (v: unknown) => (v === null || v === undefined ? "" : text(JSON.stringify(v)));
  function* lines(): Generator<string> {
    const tenantText = text(tenant);
    let chunk = "";
    for (const e of events) {
      chunk +=
        `${tenantText},${e.itemId},${e.timestamp.toISOString()},${text(e.sourceId)},${e.value},${e.tags === null ? "" : text(arrayLiteral(e.tags))},` +
        `${json(e.keyValues)},${json(e.tenantCodes)},${json(e.entityReferences)},${instant(e.entry)},${instant(e.exit)},${instant(e.from)},${instant(e.to)}\n`;
      if (chunk.length > 65_536) {
        yield chunk;
        chunk = "";
      }
    }
    if (chunk !== "") yield chunk;
  }
  if (!isPostgresKnex(knex)) return false;
  await knex.raw(`create temporary table if not exists events_staging (like events) on commit drop`);
  await knex.raw(`truncate events_staging`);
  return copyFromStdin(knex, `copy events_staging (${EVENT_COLUMNS}) from stdin with (format csv)`, lines());
}

/** The batch as one array per column, unnested by the statement. */
function arraysOf(tenant: string, events: EventRecord[]): { sql: string; bindings: Knex.RawBinding[] } {
  const column = <T>(pick: (e: EventRecord) => T) => events.map(pick);
  const json = (v: unknown) => (v === null ? null : JSON.stringify(v));
  return {
    sql: `select ?, u.item_id, u.ts, u.source_id, u.value, u.tags::text[], u.key_values, u.tenant_codes, u.entity_references,
              u.meta_entry, u.meta_exit, u.meta_from, u.meta_to
       from unnest(?::uuid[], ?::timestamptz[], ?::text[], ?::float8[], ?::text[], ?::jsonb[], ?::jsonb[], ?::jsonb[],
                   ?::timestamptz[], ?::timestamptz[], ?::timestamptz[], ?::timestamptz[])
         as u(item_id, ts, source_id, value, tags, key_values, tenant_codes, entity_references, meta_entry, meta_exit, meta_from, meta_to)`,
    bindings: [
      tenant,
      column((e) => e.itemId),
      column((e) => e.timestamp.toISOString()),
      column((e) => e.sourceId),
      column((e) => e.value),
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

/** Whether every event of the batch is later than every stored event of its item: one index probe per item. */
async function appendsOnly(knex: Knex, tenant: string, events: EventRecord[]): Promise<boolean> {
  const first = new Map<string, number>();
  for (const e of events) {
    const t = e.timestamp.getTime();
    if (!(first.get(e.itemId)! <= t)) first.set(e.itemId, t);
  }
  const { rows } = (await knex.raw(
    `select bool_and(coalesce(s.first > (select max(e.ts) from events e where e.tenant = ? and e.item_id = s.item_id), true)) as append
     from unnest(?::uuid[], ?::timestamptz[]) as s(item_id, first)`,
    [tenant, [...first.keys()], [...first.values()].map((t) => new Date(t).toISOString())],
  )) as { rows: { append: boolean }[] };
  return rows[0]?.append === true;
}
