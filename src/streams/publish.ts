import type { Knex } from "knex";
import type { EventRecord } from "../timeseries/events.js";
import { eventRecordJson, STREAM_CHANNEL } from "./messages.js";

/**
 * A notification's payload must stay under 8000 bytes; a chunk is closed before it passes this
 * (the envelope and the tenant included), and one event too large for any chunk goes through
 * the `stream_payloads` table.
 */
export const NOTIFY_LIMIT_BYTES = 7900;

/** A notification: events of one tenant, as `[itemId, event JSON]` pairs in ingest order; or the id of a stored one. */
export type StreamNotice = { t: string; n: number; m: [string, unknown][] } | { ref: string };

/**
 * Announces accepted events to every process listening (live streams), inside the ingest's
 * transaction: PostgreSQL delivers the notifications when it commits, in commit order, and never
 * for one that rolled back. The events are cut into chunks that fit in a notification; each
 * chunk carries a sequence number, as PostgreSQL folds identical payloads of one transaction into one.
 */
export async function publishEvents(trx: Knex.Transaction, tenant: string, events: EventRecord[]): Promise<void> {
  if (events.length === 0) return;
  const inline: string[] = [];
  const oversized: { index: number; payload: string }[] = [];
  const envelope = (pairs: string[]) => `{"t":${JSON.stringify(tenant)},"n":${inline.length + oversized.length},"m":[${pairs.join(",")}]}`;
  const base = Buffer.byteLength(envelope([])) + 16;
  let pairs: string[] = [];
  let bytes = base;
  const close = () => {
    if (pairs.length > 0) inline.push(envelope(pairs));
    pairs = [];
    bytes = base;
  };
  for (const e of events) {
    const pair = `[${JSON.stringify(e.itemId)},${JSON.stringify(eventRecordJson(e))}]`;
    const size = Buffer.byteLength(pair) + 1;
    if (base + size > NOTIFY_LIMIT_BYTES) {
      close();
      oversized.push({ index: inline.length + oversized.length, payload: envelope([pair]) });
      // Keeps its place: the chunks before it are sent first.
      inline.push("");
      continue;
    }
    if (bytes + size > NOTIFY_LIMIT_BYTES) close();
    pairs.push(pair);
    bytes += size;
  }
  close();
  await notifyInOrder(trx, inline, oversized);
}

/** How long a process's word that it watches a tenant holds unless renewed (renewed every third of it). */
export const WATCH_TTL_MS = 30_000;

/** The advisory lock that orders a tenant's uploads against a subscription being registered. */
function watchLock(tenant: string): string {
  return `stream-watch:${tenant}`;
}

/**
 * Whether a subscriber in any process watches the tenant (`stream_watchers`): an upload nobody
 * watches announces nothing — serialising every event into notifications cost bulk ingestion half
 * its speed. The tenant's lock is taken shared first, in a statement of its own so that the read
 * after it sees every registration committed before, and held to the end of the transaction: a
 * registration ({@link registerWatcher}) takes it exclusively, so it completes only once every
 * upload that found the tenant unwatched has committed. Events committed after a subscriber is
 * told `subscribed` are therefore always announced.
 */
export async function tenantWatched(trx: Knex.Transaction, tenant: string): Promise<boolean> {
  await trx.raw(`select pg_advisory_xact_lock_shared(hashtext(?))`, [watchLock(tenant)]);
  const { rows } = (await trx.raw(`select exists(select 1 from stream_watchers where tenant = ? and expires_at > now()) as watched`, [tenant])) as { rows: { watched: boolean }[] };
  return rows[0]?.watched === true;
}

/** Records that `processId` watches `tenant` for {@link WATCH_TTL_MS}, once the tenant's uploads in progress have committed. */
export async function registerWatcher(knex: Knex, processId: string, tenant: string): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx.raw(`select pg_advisory_xact_lock(hashtext(?))`, [watchLock(tenant)]);
    await renewWatchers(trx, processId, [tenant]);
  });
}

/** Extends (or records again) the process's watch of these tenants; drops other processes' watches long expired. */
export async function renewWatchers(knex: Knex, processId: string, tenants: string[]): Promise<void> {
  if (tenants.length === 0) return;
  await knex.raw(
    `insert into stream_watchers (process_id, tenant, expires_at)
     select ?, t, now() + ? * interval '1 millisecond' from unnest(?::text[]) as u(t)
     on conflict (process_id, tenant) do update set expires_at = excluded.expires_at`,
    [processId, WATCH_TTL_MS, tenants],
  );
}

/** Forgets the watches of a process (at its stop) and every watch expired for a minute. */
export async function dropWatchers(knex: Knex, processId: string | undefined): Promise<void> {
  await knex("stream_watchers")
    .where((q) => {
      q.where("expires_at", "<", knex.raw(`now() - interval '1 minute'`));
      if (processId !== undefined) q.orWhere({ process_id: processId });
    })
    .del();
}

/** One statement for the chunks when none is too large; else each in turn, the large ones by reference. */
async function notifyInOrder(trx: Knex.Transaction, chunks: string[], oversized: { index: number; payload: string }[]): Promise<void> {
  if (oversized.length === 0) {
    await trx.raw(`select count(pg_notify(?, p)) from unnest(?::text[]) as u(p)`, [STREAM_CHANNEL, chunks]);
    return;
  }
  const large = new Map(oversized.map((o) => [o.index, o.payload]));
  for (let i = 0; i < chunks.length; i++) {
    const payload = large.get(i);
    if (payload === undefined) {
      await trx.raw(`select pg_notify(?, ?)`, [STREAM_CHANNEL, chunks[i]!]);
      continue;
    }
    const { rows } = (await trx.raw(`insert into stream_payloads (payload) values (?) returning id`, [payload])) as { rows: { id: string | number }[] };
    await trx.raw(`select pg_notify(?, ?)`, [STREAM_CHANNEL, JSON.stringify({ ref: String(rows[0]!.id) })]);
  }
}

/** Drops the stored payloads older than `retentionMs`: every listening process has read them by then. */
export async function dropOldPayloads(knex: Knex, retentionMs: number): Promise<number> {
  return knex("stream_payloads")
    .where("created_at", "<", knex.raw(`now() - ? * interval '1 millisecond'`, [retentionMs]))
    .del();
}

/** The payload a reference names; undefined when it has been dropped already. */
export async function storedPayload(knex: Knex, ref: string): Promise<string | undefined> {
  const row = (await knex("stream_payloads").where({ id: ref }).first("payload")) as { payload: string } | undefined;
  return row?.payload;
}
