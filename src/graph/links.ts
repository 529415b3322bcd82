import type { Knex } from "knex";
import { compareKeys, writeTransaction } from "../db/write-retry.js";
import { ProblemError, type ProblemDetail } from "../errors.js";

/** One end of a link: an entity named by id, or by type and key. */
export type EntityRef = { id: string } | { type: string; key: string };

export interface LinkInput {
  from: EntityRef;
  relation: string;
  to: EntityRef;
}

export interface EntityHandle {
  id: string;
  type: string;
  key: string;
}

export interface LinkJson {
  from: EntityHandle;
  relation: string;
  to: EntityHandle;
}

const INSERT_CHUNK = 2000;

function refLabel(ref: EntityRef): string {
  return "id" in ref ? `id ${ref.id}` : `${ref.type}:${ref.key}`;
}

/**
 * Stores links, all or nothing: every end is resolved first in one query per kind of reference,
 * and a reference to an entity that does not exist in the tenant fails the whole request, naming it.
 * A link that exists already is kept as it is. The rows are written in key order, so that concurrent
 * requests with the same links lock them in the same order; a conflict re-runs the whole transaction.
 */
export async function createLinks(knex: Knex, tenant: string, inputs: LinkInput[]): Promise<LinkJson[]> {
  return writeTransaction(knex, async (trx) => {
    const resolve = await resolveRefs(trx, tenant, inputs.flatMap((l) => [l.from, l.to]));
    const problems: ProblemDetail[] = [];
    const missing = new Set<string>();
    const links: LinkJson[] = [];
    inputs.forEach((link, index) => {
      const ends = { from: resolve(link.from), to: resolve(link.to) };
      for (const end of ["from", "to"] as const) {
        if (ends[end] !== undefined) continue;
        const label = refLabel(link[end]);
        missing.add(label);
        problems.push({ path: `links[${index}].${end}`, message: `no entity ${label} in this tenant` });
      }
      if (ends.from !== undefined && ends.to !== undefined) links.push({ from: ends.from, relation: link.relation, to: ends.to });
    });
    if (problems.length > 0) {
      throw new ProblemError("INVALID_REQUEST", `links name entities that do not exist: ${[...missing].join(", ")}`, { errors: problems });
    }
    const linkKey = (l: LinkJson) => `${l.from.id}\u0000${l.relation}\u0000${l.to.id}`;
    const ordered = [...links].sort((a, b) => compareKeys(linkKey(a), linkKey(b)));
    for (let start = 0; start < ordered.length; start += INSERT_CHUNK) {
      const rows = ordered.slice(start, start + INSERT_CHUNK).map((l) => ({ tenant, from_id: l.from.id, relation: l.relation, to_id: l.to.id }));
      await trx("links").insert(rows).onConflict(["tenant", "from_id", "relation", "to_id"]).ignore();
    }
    return links;
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

async function resolveRefs(knex: Knex, tenant: string, refs: EntityRef[]): Promise<(ref: EntityRef) => EntityHandle | undefined> {
  // A malformed id cannot name an entity; leaving it out keeps the uuid cast from failing the query.
  const ids = [...new Set(refs.flatMap((r) => ("id" in r && UUID.test(r.id) ? [r.id.toLowerCase()] : [])))];
  const pairs = new Map<string, { type: string; key: string }>();
  for (const r of refs) if (!("id" in r)) pairs.set(`${r.type}\u0000${r.key}`, r);
  const byId = new Map<string, EntityHandle>();
  const byTypeKey = new Map<string, EntityHandle>();
  if (ids.length > 0) {
    const rows: EntityHandle[] = await knex("entities").where({ tenant }).whereIn("id", ids).select("id", "type", "key");
    for (const row of rows) byId.set(row.id, row);
  }
  if (pairs.size > 0) {
    const types = [...pairs.values()].map((p) => p.type);
    const keys = [...pairs.values()].map((p) => p.key);
    const { rows } = (await knex.raw(
      `select e.id, e.type, e.key from entities e
       join unnest(?::text[], ?::text[]) as wanted(type, key) on e.type = wanted.type and e.key = wanted.key
       where e.tenant = ?`,
      [types, keys, tenant],
    )) as { rows: EntityHandle[] };
    for (const row of rows) byTypeKey.set(`${row.type}\u0000${row.key}`, row);
  }
  return (ref) => ("id" in ref ? byId.get(ref.id.toLowerCase()) : byTypeKey.get(`${ref.type}\u0000${ref.key}`));
}
