import { LRUCache } from "lru-cache";

/**
 * Compiled definitions by key — (tenant, externalId, updatedAt) and whatever else the compiled
 * form depends on — at most `capacity` of them (0: none, every get builds), least recently used
 * dropped first. An update changes `updatedAt`, so it is a new key: the next run compiles the new
 * version, and the old entry ages out.
 */
export class CompiledCache<T extends NonNullable<unknown>> {
  private readonly entries: LRUCache<string, T> | undefined;
  /** Entries built (misses), since the start. */
  compilations = 0;

  constructor(capacity: number) {
    this.entries = keptUpTo(capacity);
  }

  static key(...parts: string[]): string {
    return parts.join("\u0000");
  }

  async get(key: string, build: () => T | Promise<T>): Promise<T> {
    const hit = this.entries?.get(key);
    if (hit !== undefined) return hit;
    const built = await build();
    this.compilations++;
    this.entries?.set(key, built);
    return built;
  }

  get size(): number {
    return this.entries?.size ?? 0;
  }
}

/** A least-recently-used cache of at most `capacity` entries; none for 0 (lru-cache needs a bound above 0). */
export function keptUpTo<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(capacity: number): LRUCache<K, V> | undefined {
  return capacity > 0 ? new LRUCache<K, V>({ max: capacity }) : undefined;
}
