import { setImmediate } from "node:timers/promises";
import type { Knex } from "knex";
import { compareKeys, writeTransaction } from "../db/write-retry.js";
import { ProblemError, type ProblemDetail } from "../errors.js";
import { itemIngestKinds } from "../graph/items.js";
import { publishEvents, tenantWatched } from "../streams/publish.js";
import { parseEvent, type EventRecord } from "./events.js";
import { writeEvents } from "./event-writes.js";
import type { Span } from "@opentelemetry/api";
import { inSpan } from "../observe/tracing.js";

/** Events per batch: checked together, then written by one COPY (event-writes.ts), its marks and probe in one statement. */
const BATCH = 5000;
/** Most bad rows named in one answer. */
const MAX_LISTED = 100;
/** Rows read between two turns of the event loop while a batch is being written. */
const YIELD_EVERY = 500;

export interface IngestOptions {
  /** The item every event belongs to (`POST /items/{itemId}/events`); else each event names its own. */
  itemId?: string;
  /** Store the good rows and report the bad ones, instead of storing nothing when any row is bad. */
  partial?: boolean;
  /** CSV carries values as text. */
  numericStrings?: boolean;
  /** The rows are events {@link parseEvent} already answered (the MQTT subscriber checks each message whole first): not parsed again. */
  checked?: boolean;
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
 * one transaction: memory holds two batches (one read while the other is written), never the
 * upload. Each row is checked; by default one bad row fails the whole upload (nothing stored, the
 * first 100 bad rows listed); with `partial`
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
  let batch: Entry[] = [];
  const reject = (row: number, field: string, message: string) => {
    rejectedTotal++;
    const problem = { path: `events[${row}]${field === "" || field.startsWith("[") ? field : `.${field}`}`, row, message };
    if (rejected.length < MAX_LISTED) {
      rejected.push(problem);
      return;
    }
    // The rows listed are the first bad ones, whichever order the checks found them in (a batch's
    // refused items are known only when it is written, while the next batch is being read).
    let last = 0;
    for (let k = 1; k < rejected.length; k++) if ((rejected[k]!.row as number) > (rejected[last]!.row as number)) last = k;
    if ((rejected[last]!.row as number) > row) rejected[last] = problem;
  };
  const flush = (full: Entry[]) => inSpan("ingest batch", { "ingest.rows": full.length }, (span) => writeBatch(full, span));
  const writeBatch = async (full: Entry[], span: Span) => {
    const { entries, items: batchItems } = inKeyOrder(full);
    const refusals = await items.refusals(batchItems);
    let writable: EventRecord[];
    let kept: EventRecord[];
    if (refusals.size === 0 && items.allStored()) {
      // Nearly every batch: every item may take events and keeps them.
      writable = kept = entries.map((e) => e.event);
    } else {
      writable = entries.filter((e) => !refusals.has(e.event.itemId)).map((e) => e.event);
      // Refusals are listed by row, as the caller wrote them: their order never depends on the ids.
      const refused = entries.filter((e) => refusals.has(e.event.itemId)).sort((x, y) => x.row - y.row);
      for (const { event, row } of refused) reject(row, "itemId", refusals.get(event.itemId)!);
      kept = writable.filter((e) => items.isStored(e.itemId));
    }
    if (rejectedTotal > 0 && !options.partial) return; // nothing will be kept: stop writing, keep checking
    const written = await writeEvents(trx, tenant, kept);
    span.setAttribute("ingest.stored", written);
    stored += written;
    streamed += writable.length - kept.length;
    watched ??= writable.length > 0 ? await tenantWatched(trx, tenant) : undefined;
    if (watched === true) await publishEvents(trx, tenant, writable);
  };

  // A full batch is written while the next one is read and checked: the database and the checks
  // run at once (on two cores), one batch apart, so memory holds two batches at most. The
  // transaction's statements still run one after the other, batch after batch.
  let writing: Promise<void> | undefined;
  const handOver = async () => {
    const full = batch;
    batch = [];
    if (writing !== undefined) await writing;
    writing = flush(full);
    writing.catch(() => undefined); // awaited before the next batch, or at the end
  };
  let row = 0;
  /** Checks one row into the batch; true when the batch is full. */
  const take = (raw: unknown): boolean => {
    const parsed = options.checked === true ? { ok: true as const, event: raw as EventRecord } : parseEvent(raw, options.itemId, options.numericStrings);
    let full = false;
    if (!parsed.ok) reject(row, parsed.field, parsed.message);
    else {
      batch.push({ event: parsed.event, row, t: parsed.event.timestamp.getTime() });
      full = batch.length >= BATCH;
    }
    row++;
    return full;
  };
  try {
    if (Symbol.iterator in rows) {
      // Rows held in memory are read without an await per row; while a batch is being written,
      // the reading stops now and then so that the connection's socket is fed and read.
      for (const raw of rows as Iterable<unknown>) {
        if (take(raw)) await handOver();
        else if (writing !== undefined && row % YIELD_EVERY === 0) await setImmediate();
      }
    } else {
      for await (const raw of rows) if (take(raw)) await handOver();
    }
    if (writing !== undefined) await writing;
    writing = undefined;
    if (batch.length > 0) await flush(batch);
  } finally {
    // Never leave a statement running under the transaction's COMMIT or ROLLBACK.
    if (writing !== undefined) await writing.catch(() => undefined);
  }

  rejected.sort((x, y) => (x.row as number) - (y.row as number));
  if (rejectedTotal > 0 && !options.partial) {
    const more = rejectedTotal > rejected.length ? ` (the first ${rejected.length} listed)` : "";
    throw new ProblemError("INVALID_REQUEST", `${rejectedTotal} of ${row} events are not valid${more}; nothing was stored`, { errors: rejected });
  }
  return { stored, streamed, rejected, rejectedTotal };
}

/** A checked row of the batch being read: its event, its place in the upload, and its timestamp in ms. */
interface Entry {
  event: EventRecord;
  row: number;
  t: number;
}

/**
 * The batch sorted by key `(item, timestamp, sourceId)`, the order every upload writes (and so
 * locks) its events in, each key once: the same key twice in one statement is an error for
 * PostgreSQL, and the later row wins anyway (the sort is stable). The rows are grouped by item in
 * their order, the items sorted, then each item's rows sorted unless they are already: a feed
 * sends each item's readings in time order, so most batches need no sort of their rows at all.
 */
function inKeyOrder(batch: Entry[]): { entries: Entry[]; items: string[] } {
  const byItem = new Map<string, Entry[]>();
  for (const e of batch) {
    const rows = byItem.get(e.event.itemId);
    if (rows === undefined) byItem.set(e.event.itemId, [e]);
    else rows.push(e);
  }
  const items = [...byItem.keys()].sort(compareKeys);
  const entries: Entry[] = [];
  for (const item of items) {
    const rows = byItem.get(item)!;
    if (!inTimeOrder(rows)) rows.sort(byTimeThenSource);
    for (let k = 0; k < rows.length; k++) {
      const e = rows[k]!;
      const next = rows[k + 1];
      if (next === undefined || next.t !== e.t || next.event.sourceId !== e.event.sourceId) entries.push(e);
    }
  }
  return { entries, items };
}

function byTimeThenSource(x: Entry, y: Entry): number {
  return x.t - y.t || compareKeys(x.event.sourceId, y.event.sourceId);
}

/** Whether one item's rows are in key order already. */
function inTimeOrder(rows: Entry[]): boolean {
  for (let k = 1; k < rows.length; k++) if (byTimeThenSource(rows[k - 1]!, rows[k]!) > 0) return false;
  return true;
}

/** Why the item may not take events (none of the tenant's, or derived); null when it may. `kind`: its row, undefined when there is none. */
export function ingestRefusal(id: string, kind: { action: string | null } | undefined): string | null {
  if (kind === undefined) return `there is no Item ${id} in this tenant`;
  return kind.action === "CALCULATE" ? `Item ${id} is derived (itemAction CALCULATE): its events are calculated, not ingested` : null;
}

/** Remembers, per upload, which items exist, may take events, and keep them. */
class ItemCheck {
  private readonly known = new Map<string, string | null>();
  private readonly notStored = new Set<string>();
  constructor(
    private readonly knex: Knex,
    private readonly tenant: string,
  ) {}

  /** Items of the list (each once) that may not take events, each with the reason. */
  async refusals(itemIds: string[]): Promise<Map<string, string>> {
    const unknown = itemIds.filter((id) => !this.known.has(id));
    if (unknown.length > 0) {
      const found = await itemIngestKinds(this.knex, this.tenant, unknown);
      for (const id of unknown) {
        const kind = found.get(id);
        if (kind?.stored === false) this.notStored.add(id);
        this.known.set(id, ingestRefusal(id, kind));
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

  /** Whether every item checked so far keeps its events. */
  allStored(): boolean {
    return this.notStored.size === 0;
  }
}
