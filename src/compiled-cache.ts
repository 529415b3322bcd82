/**
 * Compiled definitions by key — (tenant, externalId, updatedAt) and whatever else the compiled
 * form depends on — least recently used dropped first. An update changes `updatedAt`, so it is
 * a new key: the next run compiles the new version, and the old entry ages out.
 */
export class CompiledCache<T> {
  private readonly entries = new Map<string, T>();
  /** Entries built (misses), since the start. */
  compilations = 0;

  constructor(private readonly capacity: number) {}

  static key(...parts: string[]): string {
    return parts.join("\u0000");
  }

  async get(key: string, build: () => T | Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const built = await build();
    this.compilations++;
    this.entries.set(key, built);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    return built;
  }

  get size(): number {
    return this.entries.size;
  }
}
