import type { Knex } from "knex";
import type { NotificationSource } from "./notifications.js";
import type { Database, GraphSession } from "./options.js";
import { DatabaseTimeoutError } from "./timeouts.js";

/**
 * A ping that answers within `timeoutMs` whatever the database does. Pings asked for while one is
 * in flight share it, so a frozen database never piles probes up.
 */
export function boundedPing(check: () => Promise<unknown>, timeoutMs: number): () => Promise<void> {
  let inFlight: Promise<void> | undefined;
  return () => {
    inFlight ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new DatabaseTimeoutError(`the database did not answer within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        await Promise.race([check(), late]);
      } finally {
        clearTimeout(timer);
        inFlight = undefined;
      }
    })();
    return inFlight;
  };
}

/** The parts of an opened database, as one {@link Database} whose close ends the notifications, then knex, then `afterClose`. */
export function assembleDatabase(
  knex: Knex,
  kind: Database["kind"],
  afterClose: () => Promise<void>,
  graph: GraphSession,
  ping: () => Promise<void>,
  notifications: NotificationSource,
): Database {
  let closing: Promise<void> | undefined;
  return {
    knex,
    graph,
    kind,
    ping,
    notifications,
    close() {
      closing ??= notifications
        .close()
        .then(() => knex.destroy())
        .then(afterClose);
      return closing;
    },
  };
}
