import type { Knex } from "knex";
import { DateTime } from "luxon";
import { invalidRequest } from "../errors.js";
import { INSTANT_RANGE_TEXT, instantInRange, isUuid } from "../input.js";

/** Spec §2.4 `filter` (from version 1.0.24). */
export interface EventFilter {
  tenantCodes?: KeyFilter[];
  keyValues?: KeyFilter[];
  entityReferences?: { type: string; ids: string[]; roles?: string[]; operator?: Operator }[];
  numberValues?: { from?: number; fromInclusive?: boolean; to?: number; toInclusive?: boolean; invert?: boolean }[];
  metaDates?: { type: "entry" | "exit" | "from" | "to"; from?: string; to?: string; fromInclusive?: boolean; toInclusive?: boolean; invert?: boolean }[];
  tags?: { operator?: Operator; values: string[] };
  sourceIds?: string[];
  itemIds?: string[];
}

export type Operator = "or" | "and" | "not";
export interface KeyFilter {
  key: string;
  operator?: Operator;
  values: string[];
}

/** A Map, so that no name from a request can reach an object's prototype (`constructor`, `toString`). */
const META_COLUMNS = new Map<unknown, string>([
  ["entry", "meta_entry"],
  ["exit", "meta_exit"],
  ["from", "meta_from"],
  ["to", "meta_to"],
]);

const invalid = (message: string, path: string) => invalidRequest(message, `queryOptions.filter.${path}`);

function operatorOf(value: unknown, path: string): Operator {
  if (value === undefined) return "or";
  if (value === "or" || value === "and" || value === "not") return value;
  throw invalid(`operator must be or, and or not; got ${JSON.stringify(value)}`, path);
}

function texts(value: unknown, path: string, { nonEmpty = true } = {}): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string") || (nonEmpty && value.length === 0)) {
    throw invalid("must be a non-empty array of text", path);
  }
  return value as string[];
}

function list(value: unknown, path: string): Record<string, unknown>[] {
  if (!Array.isArray(value) || !value.every((v) => v !== null && typeof v === "object")) throw invalid("must be an array of objects", path);
  return value as Record<string, unknown>[];
}

/** SQL predicates, each with its bindings; all of them must hold (AND). */
export interface Predicate {
  sql: string;
  bindings: Knex.RawBinding[];
}

/**
 * Turns a filter into SQL predicates over the events table, checking its shape on the way. Every
 * member, and every entry of a member, must hold (they are ANDed); within an entry the operator
 * says how its values combine: `or` any of them, `and` all of them, `not` none of them. Values are
 * always bound; a predicate is written so PostgreSQL can use an index for it (`@>`, `&&`, `= any`).
 */
export function filterPredicates(filter: unknown): Predicate[] {
  if (filter === undefined || filter === null) return [];
  if (typeof filter !== "object" || Array.isArray(filter)) throw invalid("the filter must be an object", "");
  const f = filter as Record<string, unknown>;
  const known = new Set(["tenantCodes", "keyValues", "entityReferences", "numberValues", "metaDates", "tags", "sourceIds", "itemIds"]);
  for (const name of Object.keys(f)) if (!known.has(name)) throw invalid(`unknown filter member "${name}"; members: ${[...known].join(", ")}`, name);
  const predicates: Predicate[] = [];

  for (const [member, column] of [
    ["tenantCodes", "tenant_codes"],
    ["keyValues", "key_values"],
  ] as const) {
    if (f[member] === undefined) continue;
    list(f[member], member).forEach((entry, i) => {
      const path = `${member}[${i}]`;
      if (typeof entry.key !== "string" || entry.key === "") throw invalid("key must be text", `${path}.key`);
      const values = texts(entry.values, `${path}.values`);
      const operator = operatorOf(entry.operator, `${path}.operator`);
      const any = values.map(() => `${column} @> ?::jsonb`).join(" or ");
      const bindings = values.map((v) => JSON.stringify({ [entry.key as string]: v }));
      if (operator === "or") predicates.push({ sql: `(${any})`, bindings });
      else if (operator === "and") predicates.push({ sql: `(${values.map(() => `${column} @> ?::jsonb`).join(" and ")})`, bindings });
      else predicates.push({ sql: `not coalesce(${any}, false)`, bindings });
    });
  }

  if (f.entityReferences !== undefined) {
    list(f.entityReferences, "entityReferences").forEach((entry, i) => {
      const path = `entityReferences[${i}]`;
      if (typeof entry.type !== "string" || entry.type === "") throw invalid("type must be text", `${path}.type`);
      const ids = texts(entry.ids, `${path}.ids`);
      const roles = entry.roles === undefined ? [] : texts(entry.roles, `${path}.roles`);
      const operator = operatorOf(entry.operator, `${path}.operator`);
      // One id is referenced when the list holds { type, id } (with one of the roles, if any are given).
      const one = (id: string): Predicate => {
        const shapes = roles.length === 0 ? [{ type: entry.type, id }] : roles.map((role) => ({ type: entry.type, id, role }));
        return { sql: `(${shapes.map(() => "entity_references @> ?::jsonb").join(" or ")})`, bindings: shapes.map((s) => JSON.stringify([s])) };
      };
      const each = ids.map(one);
      const joined = (glue: string) => ({ sql: each.map((p) => p.sql).join(glue), bindings: each.flatMap((p) => p.bindings) });
      if (operator === "or") predicates.push({ sql: `(${joined(" or ").sql})`, bindings: joined(" or ").bindings });
      else if (operator === "and") predicates.push({ sql: `(${joined(" and ").sql})`, bindings: joined(" and ").bindings });
      else predicates.push({ sql: `not coalesce(${joined(" or ").sql}, false)`, bindings: joined(" or ").bindings });
    });
  }

  if (f.numberValues !== undefined) {
    list(f.numberValues, "numberValues").forEach((entry, i) => {
      const path = `numberValues[${i}]`;
      const parts: string[] = [];
      const bindings: Knex.RawBinding[] = [];
      for (const [bound, op, inclusive] of [
        ["from", entry.fromInclusive === false ? ">" : ">=", entry.fromInclusive],
        ["to", entry.toInclusive === true ? "<=" : "<", entry.toInclusive],
      ] as const) {
        if (inclusive !== undefined && typeof inclusive !== "boolean") throw invalid(`${bound}Inclusive must be true or false`, `${path}.${bound}Inclusive`);
        const limit = entry[bound];
        if (limit === undefined) continue;
        if (typeof limit !== "number" || !Number.isFinite(limit)) throw invalid(`${bound} must be a number`, `${path}.${bound}`);
        parts.push(`value ${op} ?`);
        bindings.push(limit);
      }
      if (parts.length === 0) throw invalid("give from, to or both", path);
      const range = `(${parts.join(" and ")})`;
      predicates.push({ sql: entry.invert === true ? `not ${range}` : range, bindings });
    });
  }

  if (f.metaDates !== undefined) {
    list(f.metaDates, "metaDates").forEach((entry, i) => {
      const path = `metaDates[${i}]`;
      const column = META_COLUMNS.get(entry.type);
      if (column === undefined) throw invalid("type must be entry, exit, from or to", `${path}.type`);
      const parts: string[] = [];
      const bindings: Knex.RawBinding[] = [];
      for (const [bound, op] of [
        ["from", entry.fromInclusive === false ? ">" : ">="],
        ["to", entry.toInclusive === true ? "<=" : "<"],
      ] as const) {
        if (entry[bound] === undefined) continue;
        const at = typeof entry[bound] === "string" ? DateTime.fromISO(entry[bound], { zone: "utc", setZone: true }) : undefined;
        if (at === undefined || !at.isValid) throw invalid(`${bound} must be an ISO-8601 date-time`, `${path}.${bound}`);
        if (!instantInRange(at.toMillis())) throw invalid(`${bound} is outside the accepted dates, ${INSTANT_RANGE_TEXT}`, `${path}.${bound}`);
        parts.push(`${column} ${op} ?`);
        bindings.push(at.toJSDate());
      }
      if (parts.length === 0) throw invalid("give from, to or both", path);
      const range = `coalesce(${parts.join(" and ")}, false)`;
      predicates.push({ sql: entry.invert === true ? `not ${range}` : range, bindings });
    });
  }

  if (f.tags !== undefined) {
    if (f.tags === null || typeof f.tags !== "object" || Array.isArray(f.tags)) throw invalid("tags must be { operator, values }", "tags");
    const tags = f.tags as Record<string, unknown>;
    const values = texts(tags.values, "tags.values");
    const operator = operatorOf(tags.operator, "tags.operator");
    const sql = operator === "or" ? "tags && ?::text[]" : operator === "and" ? "tags @> ?::text[]" : "not coalesce(tags && ?::text[], false)";
    predicates.push({ sql, bindings: [values] });
  }

  if (f.sourceIds !== undefined) predicates.push({ sql: "source_id = any(?::text[])", bindings: [texts(f.sourceIds, "sourceIds")] });

  if (f.itemIds !== undefined) {
    const ids = texts(f.itemIds, "itemIds");
    ids.forEach((id, i) => {
      if (!isUuid(id)) throw invalid("must be an item uuid", `itemIds[${i}]`);
    });
    predicates.push({ sql: "item_id = any(?::uuid[])", bindings: [ids.map((id) => id.toLowerCase())] });
  }
  return predicates;
}
