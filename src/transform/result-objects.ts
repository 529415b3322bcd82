/**
 * What `result(?label) { alias: field, … }` gives: one object per entity of the label, its keys the
 * aliases in order, a field the entity lacks `null`, and a field `id` under the name of a loaded
 * timeline that entity's timeline. The transform processes and the service's own projections
 * (projection.ts) both build it here, so they cannot differ.
 */
export function resultObjects(entities: readonly unknown[], fields: readonly (readonly [string, string])[], timelines: Map<string, Map<string, unknown>>): Record<string, unknown>[] {
  return entities.map((entity) => {
    const record = entity as Record<string, unknown>;
    return Object.fromEntries(
      fields.map(([alias, field]) => {
        const timeline = field === "id" ? timelines.get(alias) : undefined;
        // Own fields only: `constructor` or `__proto__` name attributes, never the object's prototype.
        return [alias, timeline !== undefined ? (timeline.get(String(record.id)) ?? null) : Object.hasOwn(record, field) ? (record[field] ?? null) : null];
      }),
    );
  });
}

