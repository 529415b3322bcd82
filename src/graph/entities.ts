import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { compareKeys, writeTransaction } from "../db/write-retry.js";
import { forgetItem } from "../timeseries/rollup-store.js";
import { ProblemError, type ProblemDetail, isUniqueViolation } from "../errors.js";
import { attributeProblem, entityJson, type EntityJson, type EntityRow } from "./entity.js";

export interface EntityInput {
  type: string;
  key: string;
  attributes?: Record<string, unknown>;
  id?: string;
}

/** How an Item's series comes about (spec §2.2): ingested and stored, streamed live, or calculated. */
export const ITEM_ACTIONS = ["INGEST", "STREAM", "CALCULATE"];

/** Rows per INSERT: five bound values each keeps a statement far below PostgreSQL's 65,535 parameters. */
const UPSERT_CHUNK = 1000;

/**
 * Inserts or updates entities by `(tenant, type, key)`, all in one transaction: either every
 * entity is stored or none. An upsert replaces the attributes. When the same `(type, key)` comes
 * twice in one request, the later one wins. The rows are written in `(type, key)` order, whatever
 * the request's order, so that concurrent upserts of the same entities lock them in the same order
 * and cannot deadlock; a conflict that still happens re-runs the whole transaction. The answer keeps
 * the request's order.
 */
export async function upsertEntities(knex: Knex, tenant: string, inputs: EntityInput[]): Promise<EntityJson[]> {
  const problems: ProblemDetail[] = [];
  inputs.forEach((input, index) => {
    const problem = attributeProblem(input.attributes ?? {});
    if (problem !== undefined) problems.push({ path: `entities[${index}].attributes`, message: problem });
    const action = input.attributes?.itemAction;
    if (input.type === "Item" && action !== undefined && !ITEM_ACTIONS.includes(action as string)) {
      problems.push({ path: `entities[${index}].attributes.itemAction`, message: `itemAction of an Item must be one of ${ITEM_ACTIONS.join(", ")}` });
    }
  });
  if (problems.length > 0) throw new ProblemError("INVALID_REQUEST", `${problems.length} entities are not valid`, { errors: problems });

  const identity = (e: { type: string; key: string }) => `${e.type}\u0000${e.key}`;
  const byIdentity = new Map<string, EntityInput>();
  for (const input of inputs) byIdentity.set(identity(input), input);
  const sorted = [...byIdentity.entries()].sort(([a], [b]) => compareKeys(a, b)).map(([, e]) => e);

  const stored = await writeTransaction(knex, async (trx) => {
    const stored: EntityRow[] = [];
    for (let start = 0; start < sorted.length; start += UPSERT_CHUNK) {
      const chunk = sorted.slice(start, start + UPSERT_CHUNK);
      const rows = chunk.map((e) => ({
        tenant,
        id: e.id ?? randomUUID(),
        type: e.type,
        key: e.key,
        attributes: JSON.stringify(e.attributes ?? {}),
      }));
      let returned: EntityRow[];
      try {
        returned = await trx("entities")
          .insert(rows)
          .onConflict(["tenant", "type", "key"])
          .merge({ attributes: trx.raw("excluded.attributes"), updated_at: trx.fn.now() })
          .returning(["id", "type", "key", "attributes"]);
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new ProblemError("INVALID_REQUEST", "an entity id given in the request already belongs to another entity", { cause: err });
        }
        throw err;
      }
      const wanted = new Map(chunk.map((e) => [`${e.type}\u0000${e.key}`, e.id]));
      for (const row of returned) {
        const givenId = wanted.get(`${row.type}\u0000${row.key}`);
        if (givenId !== undefined && givenId.toLowerCase() !== row.id) {
          throw new ProblemError("INVALID_REQUEST", `entity ${row.type}:${row.key} already exists with id ${row.id}, not ${givenId}`);
        }
      }
      stored.push(...returned);
    }
    return stored;
  });
  const byRow = new Map(stored.map((row) => [identity(row), row]));
  return [...byIdentity.keys()].map((key) => entityJson(byRow.get(key)!));
}

export async function getEntity(knex: Knex, tenant: string, id: string): Promise<EntityJson | undefined> {
  const row = (await knex("entities").where({ tenant, id }).first("id", "type", "key", "attributes")) as EntityRow | undefined;
  return row === undefined ? undefined : entityJson(row);
}

export interface EntityPage {
  entities: EntityJson[];
  total: number;
  limit: number;
  offset: number;
}

/** Entities of a tenant, optionally of one type, ordered by type then key. */
export async function listEntities(
  knex: Knex,
  tenant: string,
  options: { type?: string; limit: number; offset: number },
): Promise<EntityPage> {
  const base = knex("entities").where({ tenant });
  if (options.type !== undefined) base.andWhere({ type: options.type });
  const [rows, counted] = await Promise.all([
    base.clone().select("id", "type", "key", "attributes").orderBy([{ column: "type" }, { column: "key" }]).limit(options.limit).offset(options.offset),
    base.clone().select(knex.raw("count(*)::int as total")) as Promise<{ total: number }[]>,
  ]);
  return {
    entities: (rows as EntityRow[]).map(entityJson),
    total: Number(counted[0]?.total ?? 0),
    limit: options.limit,
    offset: options.offset,
  };
}

/** Deletes an entity, its links (by cascade) and, for an Item, its events. False when there was none. */
export async function deleteEntity(knex: Knex, tenant: string, id: string): Promise<boolean> {
  return writeTransaction(knex, async (trx) => {
    const deleted: number = await trx("entities").where({ tenant, id }).del();
    if (deleted === 0) return false;
    await trx("events").where({ tenant, item_id: id }).del();
    await forgetItem(trx, tenant, id);
    return true;
  });
}
