import { LRUCache } from "lru-cache";

/** Prepared statements a connection keeps (each holds its plan on the server). */
export const PREPARED_PER_CONNECTION = 64;

interface Prepared {
  /** The names prepared on one connection, in the order of their last use. */
  names: LRUCache<string, true>;
  /** Names pushed out by the last {@link PreparedStatements.use}, to deallocate. */
  evicted: string[];
}

/**
 * The names each connection prepared, at most {@link PREPARED_PER_CONNECTION} per connection, the
 * most recently used (PostgreSQL keeps a prepared statement's plan for the connection's life
 * otherwise). The driver's client deallocates on the server what this hands back.
 */
export class PreparedStatements<Connection extends object> {
  private readonly byConnection = new WeakMap<Connection, Prepared>();

  /** Notes that `name` runs on `connection`; answers the names to deallocate first, to make room. */
  use(connection: Connection, name: string): string[] {
    let prepared = this.byConnection.get(connection);
    if (prepared === undefined) {
      const evicted: string[] = [];
      const names = new LRUCache<string, true>({
        max: PREPARED_PER_CONNECTION,
        dispose: (_value, evictedName, reason) => {
          if (reason === "evict") evicted.push(evictedName);
        },
      });
      prepared = { names, evicted };
      this.byConnection.set(connection, prepared);
    }
    if (prepared.names.get(name) === true) return [];
    prepared.names.set(name, true);
    return prepared.evicted.splice(0);
  }

  /** Forgets `name` on `connection` (it was deallocated). */
  forget(connection: Connection, name: string): void {
    this.byConnection.get(connection)?.names.delete(name);
  }
}
