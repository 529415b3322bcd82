import { randomUUID } from "node:crypto";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Knex } from "knex";
import type { NotificationSource } from "../db/notifications.js";
import type { BucketJson } from "../timeseries/query.js";
import { dropOldPayloads, dropWatchers, registerWatcher, renewWatchers, storedPayload, WATCH_TTL_MS, type StreamNotice } from "./publish.js";
import { STREAM_CHANNEL, type StreamMessage } from "./messages.js";
import { parseJson } from "../json.js";
import { errorText } from "../errors.js";

/** One connection's end of a subscription: it is handed each message as JSON text. */
export interface Subscriber {
  /** False once it is closed or dropped: nothing more is built for it. */
  readonly open: boolean;
  /** `bytes` is the text's UTF-8 length, measured once for every subscriber. */
  send(text: string, bytes: number): void;
}

/**
 * Longest the fan-out writes to sockets before it lets the event loop turn. Fanning a bulk upload out
 * to many subscribers is hundreds of thousands of socket writes: done in one go it held the loop for
 * seconds (issue 24: 20 subscribers, 4 posts of 20,000 events, `/health` 2.1–5.4 s).
 */
export const FAN_OUT_SLICE_MS = 10;

export interface StreamHubOptions {
  /** STREAM_DEBOUNCE_MS: a CALCULATE item is recomputed at most once per this many ms. */
  debounceMs: number;
  /** How long a payload too large for a notification stays in `stream_payloads`. Default 60 s. */
  payloadRetentionMs?: number;
  onWarning?: (message: string, detail?: Record<string, unknown>) => void;
}

/** The latest bucket of a derived item, recomputed (given by the composition root). */
export type LatestBucket = (tenant: string, itemId: string) => Promise<BucketJson | undefined>;

interface Derived {
  subscribers: Set<Subscriber>;
  timer: NodeJS.Timeout | undefined;
  lastSent: string | undefined;
  running: boolean;
  again: boolean;
}

/**
 * The live streams of this process. Every process listens on one PostgreSQL channel; ingestion
 * notifies it (src/streams/publish.ts) inside its transaction, so each process hears every
 * committed event once, in commit order, and hands it to its own subscribers of that item.
 *
 * A derived item (itemAction CALCULATE) has no events of its own: while it has subscribers here,
 * any event of its tenant schedules a recomputation of its latest bucket, at most one per
 * `debounceMs`, and the bucket is pushed when it differs from the last one pushed.
 */
export class StreamHub {
  private readonly items = new Map<string, Set<Subscriber>>();
  private readonly derived = new Map<string, Derived>();
  private readonly derivedByTenant = new Map<string, Set<string>>();
  private chain: Promise<void> = Promise.resolve();
  private cleanup: NodeJS.Timeout | undefined;
  private readonly retentionMs: number;
  private starting: Promise<void> | undefined;
  /** This process's name in `stream_watchers`. */
  private readonly processId = randomUUID();
  /** Tenants with subscribers here: how many, and the registration they wait for. */
  private readonly watched = new Map<string, { count: number; registered: Promise<void> }>();
  private renewal: NodeJS.Timeout | undefined;
  /** When the fan-out last let the event loop turn (see {@link FAN_OUT_SLICE_MS}). */
  private sliceStarted = performance.now();

  constructor(
    private readonly knex: Knex,
    private readonly notifications: NotificationSource,
    private readonly options: StreamHubOptions,
    private readonly latestBucket: LatestBucket,
  ) {
    this.retentionMs = options.payloadRetentionMs ?? 60_000;
  }

  /**
   * Resolves once this process listens; the first subscriber starts it (a process nobody subscribes
   * to holds no listening connection). Stored payloads are dropped after their retention, by
   * whichever process comes first.
   */
  ready(): Promise<void> {
    this.starting ??= this.start().catch((err: unknown) => {
      this.starting = undefined;
      throw err;
    });
    return this.starting;
  }

  private async start(): Promise<void> {
    await this.notifications.listen(STREAM_CHANNEL, (payload) => this.received(payload));
    this.notifications.onGap(() => this.options.onWarning?.("the stream listener reconnected: events committed meanwhile were not pushed"));
    this.cleanup = setInterval(() => {
      dropOldPayloads(this.knex, this.retentionMs).catch((err: unknown) => this.options.onWarning?.("could not drop old stream payloads", { error: String(err) }));
    }, this.retentionMs);
    this.cleanup.unref();
    this.renewal = setInterval(() => {
      renewWatchers(this.knex, this.processId, [...this.watched.keys()])
        .then(() => dropWatchers(this.knex, undefined))
        .catch((err: unknown) => this.options.onWarning?.("could not renew this process's stream watches", { error: String(err) }));
    }, WATCH_TTL_MS / 3);
    this.renewal.unref();
  }

  /** Stops the timers and forgets this process's watches (best effort: they expire anyway). */
  async stop(): Promise<void> {
    clearInterval(this.cleanup);
    clearInterval(this.renewal);
    for (const d of this.derived.values()) clearTimeout(d.timer);
    if (this.watched.size === 0) return;
    this.watched.clear();
    await dropWatchers(this.knex, this.processId).catch(() => undefined);
  }

  /**
   * Makes uploads of `tenant` announce their events from now on, in every process (resolves once
   * the tenant's uploads in progress have committed: see tenantWatched); answers the release.
   * A tenant nobody here watches any more is let go when its watch expires (WATCH_TTL_MS), not at
   * once, so that a new subscriber right after never races a deletion.
   */
  async watchTenant(tenant: string): Promise<() => void> {
    let entry = this.watched.get(tenant);
    if (entry === undefined) {
      const registered = registerWatcher(this.knex, this.processId, tenant);
      this.watched.set(tenant, (entry = { count: 0, registered }));
      registered.catch(() => {
        if (this.watched.get(tenant) === entry) this.watched.delete(tenant);
      });
    }
    entry.count++;
    const held = entry;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      held.count--;
      if (held.count === 0 && this.watched.get(tenant) === held) this.watched.delete(tenant);
    };
    try {
      await held.registered;
    } catch (err) {
      release();
      throw err;
    }
    return release;
  }

  /** Subscribes to stored or streamed items; answers the unsubscribe. */
  subscribe(tenant: string, itemIds: string[], subscriber: Subscriber): () => void {
    const keys = itemIds.map((id) => key(tenant, id));
    for (const k of keys) {
      let set = this.items.get(k);
      if (set === undefined) this.items.set(k, (set = new Set()));
      set.add(subscriber);
    }
    return () => {
      for (const k of keys) {
        const set = this.items.get(k);
        set?.delete(subscriber);
        if (set?.size === 0) this.items.delete(k);
      }
    };
  }

  /** Subscribes to a derived item's latest bucket; answers the unsubscribe. */
  subscribeDerived(tenant: string, itemId: string, subscriber: Subscriber): () => void {
    const k = key(tenant, itemId);
    let d = this.derived.get(k);
    if (d === undefined) {
      this.derived.set(k, (d = { subscribers: new Set(), timer: undefined, lastSent: undefined, running: false, again: false }));
      let set = this.derivedByTenant.get(tenant);
      if (set === undefined) this.derivedByTenant.set(tenant, (set = new Set()));
      set.add(itemId);
    }
    d.subscribers.add(subscriber);
    const entry = d;
    return () => {
      entry.subscribers.delete(subscriber);
      if (entry.subscribers.size > 0) return;
      clearTimeout(entry.timer);
      this.derived.delete(k);
      const set = this.derivedByTenant.get(tenant);
      set?.delete(itemId);
      if (set?.size === 0) this.derivedByTenant.delete(tenant);
    };
  }

  /** Payloads are handled one after the other: one read from the table must not let a later one overtake it. */
  private received(payload: string): void {
    this.chain = this.chain.then(() => this.handle(payload)).catch((err: unknown) => this.options.onWarning?.("a stream notification could not be handled", { error: String(err) }));
  }

  private async handle(payload: string): Promise<void> {
    let notice = parseJson(payload) as StreamNotice;
    if ("ref" in notice) {
      const stored = await storedPayload(this.knex, notice.ref);
      if (stored === undefined) return;
      notice = parseJson(stored) as StreamNotice;
      if ("ref" in notice) return;
    }
    const tenant = notice.t;
    for (const [itemId, event] of notice.m) {
      const subscribers = this.items.get(key(tenant, itemId));
      if (subscribers === undefined) continue;
      await this.deliver(subscribers, { type: "event", itemId, event } as StreamMessage);
    }
    for (const itemId of this.derivedByTenant.get(tenant) ?? []) this.schedule(tenant, itemId);
  }

  /**
   * Hands the message to the subscribers still open, in slices: the event loop turns after
   * {@link FAN_OUT_SLICE_MS} of sending, so that requests (`/health`) are answered while a bulk upload is
   * fanned out. Notifications are handled one after the other (see received), so order is kept. The
   * text is built once, and not at all when no subscriber is left open (each was dropped as too slow).
   */
  private async deliver(subscribers: Iterable<Subscriber>, message: StreamMessage): Promise<void> {
    // A subscriber may unsubscribe (dropped as too slow) while this runs: iterate a copy.
    const open = [...subscribers].filter((s) => s.open);
    if (open.length === 0) return;
    const text = JSON.stringify(message);
    const bytes = Buffer.byteLength(text);
    for (const s of open) {
      if (performance.now() - this.sliceStarted > FAN_OUT_SLICE_MS) {
        await nextTurn();
        this.sliceStarted = performance.now();
      }
      // It may have been dropped, or have closed, while the loop turned.
      if (!s.open) continue;
      s.send(text, bytes);
    }
  }

  /** At most one recomputation per debounce period; one asked for while one runs follows it. */
  private schedule(tenant: string, itemId: string): void {
    const d = this.derived.get(key(tenant, itemId));
    if (d === undefined) return;
    if (d.running) {
      d.again = true;
      return;
    }
    if (d.timer !== undefined) return;
    d.timer = setTimeout(() => {
      d.timer = undefined;
      void this.recompute(tenant, itemId, d);
    }, this.options.debounceMs);
    d.timer.unref();
  }

  private async recompute(tenant: string, itemId: string, d: Derived): Promise<void> {
    d.running = true;
    try {
      const bucket = await this.latestBucket(tenant, itemId);
      if (bucket === undefined) return;
      const text = JSON.stringify(bucket);
      if (text === d.lastSent) return;
      d.lastSent = text;
      await this.deliver(d.subscribers, { type: "bucket", itemId, bucket });
    } catch (err) {
      this.options.onWarning?.("a derived item's latest bucket could not be computed", { itemId, error: errorText(err) });
    } finally {
      d.running = false;
      if (d.again) {
        d.again = false;
        this.schedule(tenant, itemId);
      }
    }
  }
}

function key(tenant: string, itemId: string): string {
  return `${tenant}\u0000${itemId}`;
}
