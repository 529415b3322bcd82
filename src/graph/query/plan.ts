import type { AttributeClause, KeyClause, LinkClause, Position, Query, Value } from "./ast.js";
import { routeByCost, type Move } from "./cost.js";
import { QuerySyntaxError } from "./errors.js";
import type { GraphStatistics } from "./statistics.js";

export interface OutputLabel {
  name: string;
  /** An entity label yields entities; a value label (only ever used as a value) yields distinct values. */
  kind: "entity" | "value";
  /** An entity label's type (every entity it yields has it). */
  type?: string;
}

/** An entity label of the pattern with its constants: the keys and attributes it must have. */
export interface PlannedEntity {
  name: string;
  type: string;
  keys: Value[];
  attributes: AttributeClause[];
}

/** A `link:` clause: `from` links to `to` by `relation`. */
export interface PlannedLink {
  relation: string;
  from: string;
  to: string;
}

/** Where a value is read or compared: an entity's key, or one of its attributes. */
export type ValueSource = { kind: "key" } | { kind: "attribute"; name: string };

/**
 * One step of the walk, in the order the statement runs them:
 * - `find`: an entity looked up by its own constants (the first step, an entity with constants
 *   of its own, or the start of a part of the pattern no link reaches);
 * - `follow`: from a placed entity along a link to the entity it reaches;
 * - `check`: a link between two placed entities must exist;
 * - `bind`: the first use of a value label names its value (for an attribute, each of its
 *   non-null elements);
 * - `compare`: a later use of a value label, or an entity label used as a value (its id), must
 *   be equal to that value or held by that array.
 */
export type PlanStep =
  | { kind: "find"; entity: string }
  | { kind: "follow"; link: PlannedLink; forward: boolean; entity: string }
  | { kind: "check"; link: PlannedLink }
  | { kind: "bind"; label: string; owner: string; source: ValueSource }
  | { kind: "compare"; label: string; owner: string; source: ValueSource; entityLabel: boolean };

/** What the statement is to do, as data: the compiler's decisions, free of SQL. */
export interface JoinPlan {
  /** Every label, in the order it first appears: the output's columns. */
  labels: OutputLabel[];
  /** The `${name}` parameters the query uses. */
  parameters: string[];
  /** The entity labels, in the order they are declared. */
  entities: PlannedEntity[];
  /**
   * The independent parts of the pattern (its connected components: statements linked by a shared
   * label), each walked once on its own; the answer is their product. Ordered by their starting
   * entities, most selective first.
   */
  parts: PlanPart[];
}

/** A connected part of the pattern and its walk. */
export interface PlanPart {
  /** Its entity labels, in the order the walk places them. */
  entities: string[];
  steps: PlanStep[];
}

interface ValueUse {
  /** The entity whose key or attribute is compared. */
  owner: string;
  clause: KeyClause | AttributeClause;
  label: string;
}

const SELECTIVITY_KEY = 1000;
const SELECTIVITY_ATTRIBUTE = 100;

/**
 * Decides the walk of a parsed query. With the tenant's statistics, each part's walk is the
 * cheapest by their estimates ({@link routeByCost}) and the parts are walked smallest first.
 * Without them (or before they are read), by the pattern alone: from the most selective entity
 * (one with `entity:key`, then the most constant attributes) outward along the links, always to the
 * most selective neighbour next; a neighbour with constants of its own is found by them (key or GIN
 * index) and its link checked; one without is reached through the link. Every tie is broken by the
 * pattern itself (types, label names, relations), never by the order it was written in, so every
 * writing of a pattern gets the same plan. Value labels are bound where the first of their uses is
 * placed and compared at every later one.
 */
export function planJoins(query: Query, statistics?: GraphStatistics): JoinPlan {
  const entities = new Map<string, PlannedEntity & { typePos: Position }>();
  const order = new Map<string, number>();
  const see = (name: string) => {
    if (!order.has(name)) order.set(name, order.size);
  };
  const declare = (name: string, type: string, pos: Position) => {
    see(name);
    const known = entities.get(name);
    if (known === undefined) {
      entities.set(name, { name, type, typePos: pos, keys: [], attributes: [] });
    } else if (known.type !== type) {
      throw new QuerySyntaxError(
        pos,
        `type ${type}`,
        `type ${known.type}`,
        `label ?${name} is of type ${known.type} (line ${known.typePos.line}, column ${known.typePos.column}) and cannot also be of type ${type}`,
      );
    }
  };

  // Pass 1: every label bound to an entity, with its type.
  for (const statement of query.statements) {
    declare(statement.label.name, statement.type, statement.label.pos);
    for (const clause of statement.clauses) {
      if (clause.kind === "link" && clause.target.type !== undefined) declare(clause.target.label.name, clause.target.type, clause.target.label.pos);
      if (clause.kind !== "link" && clause.value.kind === "label") see(clause.value.name);
      if (clause.kind === "link") see(clause.target.label.name);
    }
  }

  // Pass 2: constraints, links and value uses.
  const links: PlannedLink[] = [];
  const valueUses: ValueUse[] = [];
  const parameters = new Set<string>();
  for (const statement of query.statements) {
    const subject = entities.get(statement.label.name)!;
    for (const clause of statement.clauses) {
      if (clause.kind === "link") {
        links.push({ relation: linkRelation(clause, entities), from: subject.name, to: clause.target.label.name });
        continue;
      }
      collectParameters(clause.value, parameters);
      if (clause.value.kind === "label") {
        valueUses.push({ owner: subject.name, clause, label: clause.value.name });
      } else if (clause.kind === "key") {
        subject.keys.push(clause.value);
      } else {
        subject.attributes.push(clause);
      }
    }
  }

  // Uses in an order of the pattern, not of its writing: which use binds a label and the order of
  // the steps at one entity are then the same for every writing.
  const useKey = (u: ValueUse) => `${u.label}\u0000${u.owner}\u0000${u.clause.kind === "key" ? "" : `attribute:${u.clause.name}`}`;
  sortBy(valueUses, useKey);

  let steps: PlanStep[] = [];
  const placed = new Set<string>();
  const bound = new Set<string>();
  const sourceOf = (use: ValueUse): ValueSource => (use.clause.kind === "key" ? { kind: "key" } : { kind: "attribute", name: use.clause.name });
  const placeValueUses = (e: PlannedEntity) => {
    for (const use of valueUses) {
      if (entities.has(use.label)) {
        // An entity label as a value: its id, compared once both ends are placed.
        const ready = (use.owner === e.name && placed.has(use.label)) || (use.label === e.name && placed.has(use.owner));
        if (ready) steps.push({ kind: "compare", label: use.label, owner: use.owner, source: sourceOf(use), entityLabel: true });
        continue;
      }
      if (use.owner !== e.name) continue;
      if (bound.has(use.label)) {
        steps.push({ kind: "compare", label: use.label, owner: use.owner, source: sourceOf(use), entityLabel: false });
      } else {
        bound.add(use.label);
        steps.push({ kind: "bind", label: use.label, owner: use.owner, source: sourceOf(use) });
      }
    }
  };
  const place = (step: PlanStep & { entity: string }) => {
    steps.push(step);
    placed.add(step.entity);
    placeValueUses(entities.get(step.entity)!);
  };

  const score = (e: PlannedEntity) => e.keys.length * SELECTIVITY_KEY + e.attributes.length * SELECTIVITY_ATTRIBUTE + 1;
  const degree = (e: PlannedEntity) => links.filter((l) => l.from === e.name || l.to === e.name).length;
  const before = (a: PlannedEntity, b: PlannedEntity) =>
    score(a) !== score(b)
      ? score(a) > score(b)
      : degree(a) !== degree(b)
        ? degree(a) > degree(b)
        : a.type !== b.type
          ? a.type < b.type
          : a.name < b.name;
  const bestOf = (candidates: PlannedEntity[]) => candidates.reduce((best, e) => (before(e, best) ? e : best));
  const linkKey = (l: PlannedLink) => `${l.relation}\u0000${l.from}\u0000${l.to}`;
  const pending = sortBy([...links], linkKey);
  // A part no link reaches from the placed ones starts where a value known already joins it (looked
  // up through an index with that value, src/graph/query/compiler.ts), else where constants select most.
  const joinable = (e: PlannedEntity) =>
    valueUses.filter((u) => u.owner === e.name && (bound.has(u.label) || placed.has(u.label))).length * SELECTIVITY_ATTRIBUTE;
  const startOf = (candidates: PlannedEntity[]) =>
    candidates.reduce((best, e) => (joinable(e) !== joinable(best) ? (joinable(e) > joinable(best) ? e : best) : before(e, best) ? e : best));
  const parts: PlanPart[] = [];
  const components = componentsOf([...entities.keys()], links, valueUses)
    .map((names) => names.map((n) => entities.get(n)!))
    .sort((x, y) => (before(bestOf(x), bestOf(y)) ? -1 : 1));
  const ranked = [...entities.values()].sort((a, b) => (before(a, b) ? -1 : 1)).map((e) => e.name);
  const routes =
    statistics === undefined
      ? undefined
      : new Map(
          components.map((component) => [
            component,
            routeByCost(
              { entities, links: pending, uses: valueUses.map((u) => ({ owner: u.owner, label: u.label, source: sourceOf(u) })), rank: (name) => ranked.indexOf(name) },
              statistics,
              component.map((e) => e.name),
            ),
          ]),
        );
  // With statistics, the parts expected to have fewest rows first (a part is walked only once the
  // ones before it have rows); equal ones in the pattern's order (a stable sort).
  if (routes !== undefined) components.sort((x, y) => routes.get(x)!.rows - routes.get(y)!.rows);
  for (const component of components) {
    steps = [];
    const start = placed.size;
    const route = routes?.get(component)?.moves.slice();
    // The next entity and how it is reached: the route's next move, or the pattern's choice.
    const next = (): Move => {
      if (route !== undefined) return route.shift()!;
      const frontier = pending.filter((link) => placed.has(link.from) !== placed.has(link.to));
      if (frontier.length === 0) return { entity: startOf(component.filter((e) => !placed.has(e.name))).name };
      const chosen = bestOf(frontier.map((link) => entities.get(placed.has(link.from) ? link.to : link.from)!));
      // An entity with constants is found through its own index, and its links are then only
      // checked: driving it from a neighbour would walk every link of that neighbour (a tenant's
      // index set links to all of its agreements).
      if (score(chosen) > 1) return { entity: chosen.name };
      return { entity: chosen.name, via: frontier.find((l) => l.from === chosen.name || l.to === chosen.name)! };
    };
    for (;;) {
      // Links whose both ends are placed are checked at once; they cannot multiply rows.
      for (let i = 0; i < pending.length; ) {
        const link = pending[i]!;
        if (!placed.has(link.from) || !placed.has(link.to)) {
          i++;
          continue;
        }
        pending.splice(i, 1);
        steps.push({ kind: "check", link });
      }
      if (component.every((e) => placed.has(e.name))) break;
      const move = next();
      if (move.via === undefined) {
        place({ kind: "find", entity: move.entity });
      } else {
        pending.splice(pending.indexOf(move.via), 1);
        place({ kind: "follow", link: move.via, forward: placed.has(move.via.from), entity: move.entity });
      }
    }
    parts.push({ entities: [...placed].slice(start), steps });
  }

  return {
    labels: [...order.keys()].map((name) => {
      const entity = entities.get(name);
      return entity === undefined ? { name, kind: "value" } : { name, kind: "entity", type: entity.type };
    }),
    parameters: [...parameters],
    entities: [...entities.values()].map(({ name, type, keys, attributes }) => ({ name, type, keys, attributes })),
    parts,
  };
}

/**
 * The connected components of the pattern: entity labels linked by a link, or by a value label or
 * an entity label used as a value in both. Each is a list of entity labels.
 */
function componentsOf(names: string[], links: PlannedLink[], valueUses: ValueUse[]): string[][] {
  const parent = new Map<string, string>();
  const root = (name: string): string => {
    const up = parent.get(name) ?? name;
    if (up === name) return name;
    const top = root(up);
    parent.set(name, top);
    return top;
  };
  const join = (a: string, b: string) => parent.set(root(a), root(b));
  for (const link of links) join(link.from, link.to);
  for (const use of valueUses) join(use.owner, use.label);
  const components = new Map<string, string[]>();
  for (const name of names) {
    const component = components.get(root(name));
    if (component === undefined) components.set(root(name), [name]);
    else component.push(name);
  }
  return [...components.values()];
}

/** The relation of a link clause, once its target is known to be an entity. */
function linkRelation(clause: LinkClause, entities: Map<string, unknown>): string {
  const target = clause.target.label;
  if (!entities.has(target.name)) {
    throw new QuerySyntaxError(
      target.pos,
      `?${target.name}`,
      `Type:?${target.name} or a statement that binds ?${target.name}`,
      `label ?${target.name} is not bound to an entity: give it a type (Type:?${target.name}) or a statement of its own`,
    );
  }
  return clause.relation;
}

/** Sorts `list` in place by a text key, in code-unit order (no collation). */
function sortBy<T>(list: T[], key: (item: T) => string): T[] {
  return list.sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

function collectParameters(value: Value, into: Set<string>): void {
  if (value.kind === "param") into.add(value.name);
  if (value.kind === "string") for (const part of value.parts) if (typeof part !== "string") into.add(part.param);
}
