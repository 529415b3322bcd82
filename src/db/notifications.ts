import type { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { errorText } from "../errors.js";

/**
 * Notifications of one channel (PostgreSQL `LISTEN`). A payload arrives in the order the
 * transactions that sent it committed; nothing is delivered for a transaction that rolled back.
 */
export interface NotificationSource {
  /** Starts listening on `channel`; resolves once the listener is in place. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<void>;
  /** Called each time the listener had to reconnect: notifications sent meanwhile were missed. */
  onGap(handler: () => void): void;
  close(): Promise<void>;
}

/** Longest wait between two attempts to reconnect the listening connection. */
const MAX_RECONNECT_MS = 5000;

/**
 * On PostgreSQL: one dedicated connection, outside the pools (a pooled connection may be closed
 * when idle, and LISTEN belongs to a session). When it breaks it is opened again with a doubling
 * back-off, and the listeners are told of the gap.
 */
export function postgresNotifications(url: string, connectMs: number, onWarning?: (message: string) => void): NotificationSource {
  const channels = new Map<string, (payload: string) => void>();
  const gapHandlers: (() => void)[] = [];
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;

  const open = async (): Promise<pg.Client> => {
    const next = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectMs, keepAlive: true, application_name: "process-task-backend-listen" });
    next.on("notification", (message) => {
      if (message.payload !== undefined) channels.get(message.channel)?.(message.payload);
    });
    // An error on an idle connection; its end is handled below.
    next.on("error", (err) => onWarning?.(`the notification connection failed: ${errorText(err)}`));
    next.on("end", () => {
      if (client === next) client = undefined;
      if (!closed) reconnect(250);
    });
    await next.connect();
    for (const channel of channels.keys()) await next.query(`listen ${quoteIdentifier(channel)}`);
    return next;
  };
  const connect = (): Promise<pg.Client> => {
    connecting ??= open().then(
      (c) => {
        connecting = undefined;
        client = c;
        return c;
      },
      (err: unknown) => {
        connecting = undefined;
        throw err;
      },
    );
    return connecting;
  };
  const reconnect = (delay: number) => {
    if (closed || timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      connect().then(
        () => gapHandlers.forEach((handler) => handler()),
        (err: unknown) => {
          onWarning?.(`the notification connection could not be opened again: ${errorText(err)}; trying again in ${Math.min(delay * 2, MAX_RECONNECT_MS)} ms`);
          reconnect(Math.min(delay * 2, MAX_RECONNECT_MS));
        },
      );
    }, delay);
    timer.unref();
  };

  return {
    async listen(channel, onPayload) {
      channels.set(channel, onPayload);
      const c = client ?? (await connect());
      await c.query(`listen ${quoteIdentifier(channel)}`);
    },
    onGap(handler) {
      gapHandlers.push(handler);
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      const c = client ?? (await connecting?.catch(() => undefined));
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}

/** On the embedded database: PGlite's own LISTEN, in this process (the only one that can open it). */
export function embeddedNotifications(pglite: PGlite): NotificationSource {
  const stops: (() => Promise<void>)[] = [];
  return {
    async listen(channel, onPayload) {
      stops.push(await pglite.listen(channel, onPayload));
    },
    onGap() {
      // One process, one connection: nothing is ever missed.
    },
    async close() {
      await Promise.all(stops.splice(0).map((stop) => stop().catch(() => undefined)));
    },
  };
}

function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
