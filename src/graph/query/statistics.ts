import type { GraphSession } from "../../db/options.js";
import { storageOf } from "../../db/storage.js";

/**
 * What the planner knows of one tenant's graph (src/graph/query/cost.ts): how many entities of
 * each type, how many links of each relation and how they fan out, and for each attribute of a
 * type how many of its entities hold it, its distinct values and its most common ones. Every
 * number is rounded to a power of two ({@link bucketed}): a tenant's plans change only when its
 * data changes in magnitude, and tenants of one magnitude share their statements.
 */
export interface GraphStatistics {
  /** Entities per type. */
  types: Record<string, number>;
  /** Per relation: its links, the distinct entities they leave and reach, links of an entity to itself. */
  relations: Record<string, RelationStatistics>;
  /** Per type, per attribute name. */
  attributes: Record<string, Record<string, AttributeStatistics>>;
  /** Links assumed of a relation not in `relations` (0 when every link was read: it has none). */
  unsampledLinks: number;
}

export interface RelationStatistics {
  links: number;
  sources: number;
  targets: number;
  self: number;
}

export interface AttributeStatistics {
  /** Share of the type's entities holding a value (0–1). */
  held: number;
  /** Distinct values (an array's elements each count). */
  distinct: number;
  /** The most common values (JSON text), each with the share of the type's entities holding it. */
  common: Record<string, number>;
  /** Every entity of the type was read and every value is in `common`: a value not there is held by none. */
  exact: boolean;
}

/** Entities of a type read to describe its attributes (the first by key); a type this small is read whole. */
export const ATTRIBUTE_SAMPLE = 500;
/** Links read to describe the relations (the first by source id: the ids are random, so any range is a fair sample). */
export const LINK_SAMPLE = 50_000;
/**
 * The sample of links on a database whose statements hold the service's own thread (the embedded
 * one, `Backend.backgroundStatementMs`): 50,000 links took 134–219 ms there (152,000 entities,
 * 170,000 links), 5,000 took 12–24 ms; the attributes are read one type per statement there too
 * (at most 24 ms each, against 31–61 ms for all at once).
 */
export const BOUNDED_LINK_SAMPLE = 5_000;
/** Most common values kept per attribute. */
const COMMON_KEPT = 16;
/** Age past which a tenant's statistics are renewed (in the background; the old ones serve meanwhile). */
export const STATISTICS_MAX_AGE_MS = 300_000;

/** `n` rounded to the nearest power of two (0 stays 0; a share below 1 too, so shares stay shares). */
export function bucketed(n: number): number {
  return n <= 0 ? 0 : 2 ** Math.round(Math.log2(n));
}

/**
 * Distinct values in a whole of `total` items, from a sample of `sampled` with `distinct` values,
 * `once` of them seen once (Haas and Stokes' Duj1, as PostgreSQL's ANALYZE estimates n_distinct).
 */
export function estimateDistinct(sampled: number, distinct: number, once: number, total: number): number {
  if (sampled >= total || sampled === 0) return distinct;
  const estimate = (sampled * distinct) / (sampled - once + (once * sampled) / total);
  return Math.min(total, Math.max(distinct, estimate));
}

interface TypeRow {
  type: string;
  n: number;
}
interface RelationRow {
  relation: string;
  links: number;
  sources: number;
  self: number;
  targets: number;
  once: number;
}
interface ValueRow {
  type: string;
  name: string;
  value: string;
  entities: number;
}

const TYPES_SQL = "select type, count(*)::float8 as n from entities where tenant = ? group by type";
/** The first links by source, per relation: links, sources, self links, targets and targets reached once. */
const RELATIONS_SQL =
  "with l as materialized (select from_id, relation, to_id from links where tenant = ? order by from_id limit ?), " +
  "t as (select relation, to_id, count(*) as c from l group by relation, to_id) " +
  "select r.relation, r.links, r.sources, r.self, t.targets, t.once, (select max(from_id::text) from l) as last, (select count(*)::float8 from l) as sampled " +
  "from (select relation, count(*)::float8 as links, count(distinct from_id)::float8 as sources, count(*) filter (where from_id = to_id)::float8 as self from l group by relation) r " +
  "join (select relation, count(*)::float8 as targets, count(*) filter (where c = 1)::float8 as once from t group by relation) t using (relation)";
/** Per type (a JSON array of them), its first entities by key; per attribute of theirs, each value (an array's each element) and the entities holding it. */
const VALUES_SQL =
  "select s.type, a.key as name, x.value::text as value, count(*)::float8 as entities " +
  "from jsonb_array_elements_text(?::jsonb) t(type) " +
  "cross join lateral (select e.type, e.attributes from entities e where e.tenant = ? and e.type = t.type order by e.key limit ?) s " +
  "cross join lateral jsonb_each(s.attributes) a " +
  "cross join lateral jsonb_array_elements(case jsonb_typeof(a.value) when 'array' then a.value else jsonb_build_array(a.value) end) x " +
  "where jsonb_typeof(x.value) <> 'null' group by s.type, a.key, x.value::text";

/** Reads a tenant's statistics: three statements, each reading a bounded part of its rows (all of a small tenant's). */
export async function readGraphStatistics(session: GraphSession, tenant: string): Promise<GraphStatistics> {
  const rowsOf = async <Row>(sql: string, bindings: unknown[]) => ((await session.knex.raw(sql, bindings as never[])) as { rows: Row[] }).rows;
  // Short statements where a statement holds the service's thread (the embedded database).
  const bounded = storageOf(session.knex).backgroundStatementMs !== undefined;
  const linkSample = bounded ? BOUNDED_LINK_SAMPLE : LINK_SAMPLE;
  const types = (await rowsOf<TypeRow>(TYPES_SQL, [tenant])).map((r) => ({ type: r.type, n: Number(r.n) }));
  const relations = await rowsOf<RelationRow & { last: string; sampled: number }>(RELATIONS_SQL, [tenant, linkSample]);
  const values: ValueRow[] = [];
  for (const group of bounded ? types.map((t) => [t.type]) : [types.map((t) => t.type)]) {
    values.push(...(await rowsOf<ValueRow>(VALUES_SQL, [JSON.stringify(group), tenant, ATTRIBUTE_SAMPLE])));
  }
  return describeGraph(
    types,
    relations.map((r) => ({ ...r, links: Number(r.links), sources: Number(r.sources), self: Number(r.self), targets: Number(r.targets), once: Number(r.once) })),
    sampledShare(relations[0]?.sampled, relations[0]?.last, linkSample),
    values.map((r) => ({ ...r, entities: Number(r.entities) })),
  );
}

/**
 * The share of all the tenant's links the sample of links holds: all of them when it stopped short
 * of its limit; otherwise the share of the id space it covered (ids are random, so links are spread
 * evenly over it), from the last source id read.
 */
function sampledShare(sampled: number | undefined, last: string | undefined, sample: number): number {
  if (sampled === undefined || last === undefined || Number(sampled) < sample) return 1;
  const covered = (parseInt(last.slice(0, 8), 16) + 1) / 2 ** 32;
  return Math.min(1, Math.max(covered, 1e-6));
}

/** The statistics from the rows read: counts scaled up by the share sampled, then bucketed. */
export function describeGraph(types: TypeRow[], relations: RelationRow[], linkShare: number, values: ValueRow[]): GraphStatistics {
  const statistics: GraphStatistics = { types: {}, relations: {}, attributes: {}, unsampledLinks: 0 };
  const counts = new Map(types.map((t) => [t.type, t.n]));
  for (const { type, n } of types) statistics.types[type] = bucketed(n);
  // A relation the sample of links missed has fewer than one link in it: about half as many as the
  // sample stands for. (Missed by a sample of every link, it has none.)
  statistics.unsampledLinks = linkShare >= 1 ? 0 : bucketed(0.5 / linkShare);
  for (const r of relations) {
    const links = r.links / linkShare;
    statistics.relations[r.relation] = {
      links: bucketed(links),
      sources: bucketed(r.sources / linkShare),
      targets: bucketed(estimateDistinct(r.links, r.targets, r.once, links)),
      self: bucketed(r.self / linkShare),
    };
  }
  const byAttribute = new Map<string, ValueRow[]>();
  for (const v of values) {
    const key = JSON.stringify([v.type, v.name]);
    byAttribute.set(key, [...(byAttribute.get(key) ?? []), v]);
  }
  for (const [key, rows] of [...byAttribute].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const [type, name] = JSON.parse(key) as [string, string];
    const total = counts.get(type) ?? 0;
    const sampled = Math.min(total, ATTRIBUTE_SAMPLE);
    if (sampled === 0) continue;
    const occurrences = rows.reduce((sum, r) => sum + r.entities, 0);
    const once = rows.filter((r) => r.entities === 1).length;
    const held = Math.min(1, Math.max(...rows.map((r) => r.entities)) / sampled, occurrences / sampled);
    // Every entity read and every value kept: a value not among them is held by none.
    const exact = sampled >= total && rows.length <= COMMON_KEPT;
    const common: Record<string, number> = {};
    const kept = [...rows].filter((r) => exact || r.entities > 1).sort((a, b) => b.entities - a.entities || (a.value < b.value ? -1 : 1));
    for (const r of kept.slice(0, COMMON_KEPT)) common[r.value] = bucketed(r.entities / sampled);
    (statistics.attributes[type] ??= {})[name] = {
      held: bucketed(Math.max(held, Math.min(1, occurrences / sampled))),
      distinct: bucketed(estimateDistinct(occurrences, rows.length, once, (occurrences * total) / sampled)),
      common,
      exact,
    };
  }
  return statistics;
}

interface Kept {
  statistics: GraphStatistics | undefined;
  /** When the last reading started (0: never). */
  readAt: number;
  reading: Promise<GraphStatistics> | undefined;
}

/** Each session's tenants' statistics. */
const kept = new WeakMap<GraphSession, Map<string, Kept>>();

function keptOf(session: GraphSession, tenant: string): Kept {
  let tenants = kept.get(session);
  if (tenants === undefined) kept.set(session, (tenants = new Map()));
  let entry = tenants.get(tenant);
  if (entry === undefined) tenants.set(tenant, (entry = { statistics: undefined, readAt: 0, reading: undefined }));
  return entry;
}

function startReading(session: GraphSession, tenant: string, entry: Kept, now: number): Promise<GraphStatistics> {
  entry.readAt = now;
  const reading = readGraphStatistics(session, tenant)
    .then((statistics) => (entry.statistics = statistics))
    .finally(() => {
      if (entry.reading === reading) entry.reading = undefined;
    });
  entry.reading = reading;
  return reading;
}

/**
 * The tenant's statistics as known now, never waited for: a query never waits for them. A tenant
 * queried for the first time, or whose statistics are older than {@link STATISTICS_MAX_AGE_MS},
 * has them read in the background (one reading at a time; one that fails is tried again at that
 * age); until the first arrives, undefined, and the planner goes by the pattern alone.
 */
export function graphStatistics(session: GraphSession, tenant: string, now = Date.now()): GraphStatistics | undefined {
  const entry = keptOf(session, tenant);
  if (entry.reading === undefined && now - entry.readAt > STATISTICS_MAX_AGE_MS) startReading(session, tenant, entry, now).catch(() => {});
  return entry.statistics;
}

/** Reads the tenant's statistics now and keeps them (after a large write; before a benchmark or a test compares plans). */
export async function refreshGraphStatistics(session: GraphSession, tenant: string): Promise<GraphStatistics> {
  const entry = keptOf(session, tenant);
  return startReading(session, tenant, entry, Date.now());
}
