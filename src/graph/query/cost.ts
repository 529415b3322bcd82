import type { Value } from "./ast.js";
import { ATTRIBUTE_SAMPLE, type GraphStatistics } from "./statistics.js";

/** An entity of the pattern as the cost model reads it (src/graph/query/plan.ts's PlannedEntity). */
interface CostedEntity {
  type: string;
  keys: unknown[];
  attributes: { name: string; value: Value }[];
}

/** A link of the pattern (plan.ts's PlannedLink): a move reached along one is that very object. */
export interface CostedLink {
  relation: string;
  from: string;
  to: string;
}

type ValueSource = { kind: "key" } | { kind: "attribute"; name: string };

/** A use of a label as a value: `owner`'s key or attribute is equal to it (or holds it). */
export interface CostedUse {
  owner: string;
  label: string;
  source: ValueSource;
}

/** The pattern as the cost model reads it; links and uses in an order of the pattern, not of its writing. */
export interface CostedPattern {
  entities: Map<string, CostedEntity>;
  links: CostedLink[];
  uses: CostedUse[];
  /** The pattern's own order of entities (src/graph/query/plan.ts): every tie is broken by it. */
  rank: (name: string) => number;
}

/** How the walk places its next entity: found by its own constants or a known value, or reached along `via`. */
export interface Move {
  entity: string;
  via?: CostedLink;
}

/** A walk of one part of the pattern: its moves, the rows it is expected to end with, and its cost (rows read). */
export interface Route {
  moves: Move[];
  rows: number;
  cost: number;
}

/** Costs closer than this (relatively) are equal: the same estimates multiplied in another order may differ in their last bits. */
const TOLERANCE = 1e-9;

const lessThan = (a: number, b: number) => a < b * (1 - TOLERANCE) && a < b - 1e-12;

/** The JSON text of a constant known when the query is written (not a parameter): the key of `common`. */
function literalText(value: Value): string | undefined {
  switch (value.kind) {
    case "string":
      return value.parts.every((part) => typeof part === "string") ? JSON.stringify(value.parts.join("")) : undefined;
    case "number":
    case "boolean":
      return JSON.stringify(value.value);
    default:
      return undefined;
  }
}

/**
 * The cheapest walk of a connected part of the pattern by the tenant's statistics: from each of
 * its entities as the start, the walk that always places next the entity leaving the fewest rows
 * (ties: the fewer rows read, then the pattern's order); of these, the one reading the fewest rows
 * in all. Rows are estimated as a textbook optimiser does: an entity's constants and compared
 * values as independent shares of its type, a link followed as its relation's average fan-out, a
 * link checked as the share of pairs it links.
 */
export function routeByCost(pattern: CostedPattern, statistics: GraphStatistics, component: string[]): Route {
  const names = [...component].sort((a, b) => pattern.rank(a) - pattern.rank(b));
  let best: Route | undefined;
  for (const start of names) {
    const route = greedyFrom(pattern, statistics, names, start);
    if (best === undefined || lessThan(route.cost, best.cost)) best = route;
  }
  return best!;
}

function greedyFrom(pattern: CostedPattern, statistics: GraphStatistics, names: string[], start: string): Route {
  const model = costModel(pattern, statistics);
  const placed = new Set<string>();
  const bound = new Set<string>();
  const moves: Move[] = [];
  let rows = 1;
  let cost = 0;
  const take = (move: Move, estimate: { rows: number; cost: number }) => {
    moves.push(move);
    rows = estimate.rows;
    cost += estimate.cost;
    placed.add(move.entity);
    for (const use of pattern.uses) if (use.owner === move.entity && !pattern.entities.has(use.label)) bound.add(use.label);
  };
  take({ entity: start }, model.find(start, rows, placed, bound));
  while (placed.size < names.length) {
    let chosen: { move: Move; rows: number; cost: number } | undefined;
    for (const name of names) {
      if (placed.has(name)) continue;
      const options: Move[] = [
        ...pattern.links.filter((l) => (l.from === name && placed.has(l.to)) || (l.to === name && placed.has(l.from))).map((via) => ({ entity: name, via })),
        { entity: name },
      ];
      for (const move of options) {
        const estimate = move.via === undefined ? model.find(name, rows, placed, bound) : model.follow(name, move.via, rows, placed, bound);
        if (chosen === undefined || lessThan(estimate.rows, chosen.rows) || (!lessThan(chosen.rows, estimate.rows) && lessThan(estimate.cost, chosen.cost))) {
          chosen = { move, ...estimate };
        }
      }
    }
    take(chosen!.move, chosen!);
  }
  return { moves, rows, cost };
}

/** The estimates of placing one entity after the rows of the walk so far. */
function costModel(pattern: CostedPattern, statistics: GraphStatistics) {
  const count = (type: string) => statistics.types[type] ?? 0;
  const relationOf = (link: CostedLink) => {
    const unsampled = statistics.unsampledLinks;
    return statistics.relations[link.relation] ?? { links: unsampled, sources: unsampled, targets: unsampled, self: unsampled };
  };
  const entity = (name: string) => pattern.entities.get(name)!;
  /** The share of a type's entities with a given value (unknown when planned) at `source`. */
  const shareOfAValue = (type: string, source: ValueSource) => {
    if (source.kind === "key") return 1 / Math.max(count(type), 1);
    const attribute = statistics.attributes[type]?.[source.name];
    if (attribute === undefined) return count(type) <= ATTRIBUTE_SAMPLE ? 0 : 1 / count(type);
    return attribute.held / Math.max(attribute.distinct, 1);
  };
  /** The share of a type's entities holding a constant in an attribute. */
  const shareOfConstant = (type: string, name: string, value: Value) => {
    const attribute = statistics.attributes[type]?.[name];
    const text = literalText(value);
    if (attribute === undefined || text === undefined) return shareOfAValue(type, { kind: "attribute", name });
    const common = attribute.common[text];
    if (common !== undefined) return common;
    if (attribute.exact) return 0;
    const kept = Object.values(attribute.common);
    const rest = Math.max(attribute.held - kept.reduce((sum, share) => sum + share, 0), 0);
    return Math.min(rest / Math.max(attribute.distinct - kept.length, 1), kept.length === 0 ? 1 : Math.min(...kept));
  };
  /** The share of pairs of entities (of the two types) a relation links; of an entity to itself for a self link. */
  const linked = (link: CostedLink) => {
    const relation = relationOf(link);
    if (link.from === link.to) return Math.min(1, relation.self / Math.max(count(entity(link.from).type), 1));
    return Math.min(1, relation.links / Math.max(count(entity(link.from).type) * count(entity(link.to).type), 1));
  };

  /**
   * What narrows `name` once placed: each constant, each value known before (a value label bound,
   * an entity placed), each link to a placed entity other than `via`; and the entities found by
   * lookups alone (a key, an id, the attribute index), if any.
   */
  const narrowing = (name: string, placed: Set<string>, bound: Set<string>, via?: CostedLink) => {
    const e = entity(name);
    const n = count(e.type);
    let share = 1;
    let byIndex: number | undefined;
    let byAttributes = n;
    const lookup = (rows: number) => (byIndex = Math.min(byIndex ?? rows, rows));
    if (e.keys.length > 0) {
      share *= Math.min(1, 1 / Math.max(n, 1));
      lookup(Math.min(n, 1));
    }
    for (const attribute of [...e.attributes].map((a) => shareOfConstant(e.type, a.name, a.value)).sort((a, b) => a - b)) {
      share *= attribute;
      byAttributes *= attribute;
    }
    let attributeLookup = e.attributes.length > 0;
    for (const use of pattern.uses) {
      if (use.owner === name && use.label !== name && (bound.has(use.label) || placed.has(use.label))) {
        const s = shareOfAValue(e.type, use.source);
        share *= s;
        if (use.source.kind === "key") lookup(Math.min(n, 1));
        else {
          byAttributes *= s;
          attributeLookup = true;
        }
      }
      if (use.label === name && use.owner !== name && placed.has(use.owner)) {
        // Its id, held by an entity placed before: found by its primary key.
        share *= 1 / Math.max(n, 1);
        lookup(Math.min(n, 1));
      }
    }
    for (const link of pattern.links) {
      if (link === via) continue;
      const other = link.from === name ? link.to : link.to === name ? link.from : undefined;
      if (other !== undefined && (other === name || placed.has(other))) share *= linked(link);
    }
    const read = Math.min(byIndex ?? n, attributeLookup ? byAttributes : n);
    return { share, read, n };
  };

  return {
    /** Found by its own constants or values known before (or read whole), for each row so far. */
    find(name: string, rows: number, placed: Set<string>, bound: Set<string>) {
      const { share, read, n } = narrowing(name, placed, bound);
      return { rows: rows * n * share, cost: rows * (1 + read) };
    },
    /** Reached along `via` from its placed end, for each row so far. */
    follow(name: string, via: CostedLink, rows: number, placed: Set<string>, bound: Set<string>) {
      // Links per entity of the placed end's type: the same estimate as the link's check (above).
      const from = entity(via.to === name ? via.from : via.to);
      const fanOut = relationOf(via).links / Math.max(count(from.type), 1);
      const { share } = narrowing(name, placed, bound, via);
      return { rows: rows * fanOut * share, cost: rows * (1 + 2 * fanOut) };
    },
  };
}
