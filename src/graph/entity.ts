/** An attribute value: a scalar, or an array of scalars (shared/CONTRACT.md §1). */
export type Scalar = string | number | boolean | null;
export type AttributeValue = Scalar | Scalar[];
export type Attributes = Record<string, AttributeValue>;

/** A graph node as every answer shows it: attributes flattened beside the reserved `id`, `type`, `key`. */
export type EntityJson = { id: string; type: string; key: string } & Record<string, unknown>;

export interface EntityRow {
  id: string;
  type: string;
  key: string;
  attributes: Attributes;
}

export const RESERVED_ATTRIBUTES = new Set(["id", "type", "key"]);

export function entityJson(row: EntityRow): EntityJson {
  const json: EntityJson = { id: row.id, type: row.type, key: row.key };
  // Defined, not assigned: an attribute named like a prototype member stays plain data.
  for (const [name, value] of Object.entries(row.attributes)) {
    if (!RESERVED_ATTRIBUTES.has(name)) Object.defineProperty(json, name, { value, enumerable: true, writable: true, configurable: true });
  }
  return json;
}

/** Names what is wrong with an attributes object, or returns undefined when it is acceptable. */
export function attributeProblem(attributes: Record<string, unknown>): string | undefined {
  for (const [name, value] of Object.entries(attributes)) {
    if (RESERVED_ATTRIBUTES.has(name)) return `attribute "${name}" is reserved (id, type and key are fields of the entity)`;
    const scalars = Array.isArray(value) ? value : [value];
    for (const v of scalars) {
      if (v !== null && typeof v === "object") {
        return `attribute "${name}" must be a scalar or an array of scalars, not a nested ${Array.isArray(v) ? "array" : "object"}`;
      }
      if (typeof v === "number" && !Number.isFinite(v)) return `attribute "${name}" must be a finite number`;
    }
  }
  return undefined;
}
