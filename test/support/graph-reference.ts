import type { AttributeValue, Scalar } from "../../src/graph/entity.js";
import type { Clause, Query, Value } from "../../src/graph/query/ast.js";

/**
 * A reference evaluator of the graph query language (shared/CONTRACT.md §2 and docs/reference/query-language.md), for
 * tests only: nested loops over a graph held in memory, written to be read, not to be fast. It
 * shares nothing with the compiler but the parsed tree.
 */
export interface ReferenceEntity {
  id: string;
  type: string;
  key: string;
  attributes: Record<string, AttributeValue>;
}

export interface ReferenceLink {
  from: string;
  relation: string;
  to: string;
}

export interface ReferenceGraph {
  entities: ReferenceEntity[];
  links: ReferenceLink[];
}

/** A value a query can compare with: never null. */
type Value_ = Exclude<Scalar, null>;

/** For each label, in order of first appearance: the ids of its distinct entities, or its distinct values. */
export interface ReferenceAnswer {
  labels: { name: string; kind: "entity" | "value" }[];
  /** Entity labels: ids in the order of the sorted match rows. Value labels: values in the same order. */
  output: Record<string, Value_[]>;
  /** How many match rows the pattern has. */
  rows: number;
}

interface Row {
  entities: Map<string, ReferenceEntity>;
  values: Map<string, Value_>;
}

export function evaluateReference(query: Query, graph: ReferenceGraph, params: Record<string, Value_>): ReferenceAnswer {
  // Labels in order of first appearance; a label is an entity label when a statement or a typed link target binds it.
  const order: string[] = [];
  const see = (name: string) => {
    if (!order.includes(name)) order.push(name);
  };
  const types = new Map<string, string>();
  for (const statement of query.statements) {
    see(statement.label.name);
    types.set(statement.label.name, statement.type);
    for (const clause of statement.clauses) {
      if (clause.kind === "link") {
        see(clause.target.label.name);
        if (clause.target.type !== undefined) types.set(clause.target.label.name, clause.target.type);
      } else if (clause.value.kind === "label") {
        see(clause.value.name);
      }
    }
  }
  const entityLabels = order.filter((name) => types.has(name));
  const valueLabels = order.filter((name) => !types.has(name));
  const clauses: { subject: string; clause: Clause }[] = query.statements.flatMap((s) => s.clauses.map((clause) => ({ subject: s.label.name, clause })));

  // Every assignment of entities of the right type to the entity labels.
  let assignments: Map<string, ReferenceEntity>[] = [new Map()];
  for (const label of entityLabels) {
    const candidates = graph.entities.filter((e) => e.type === types.get(label));
    assignments = assignments.flatMap((a) => candidates.map((e) => new Map([...a, [label, e]])));
  }

  const rows: Row[] = [];
  for (const entities of assignments) {
    // Every value assignment: each value label ranges over the values its first use offers.
    let valueSets: Map<string, Value_>[] = [new Map()];
    for (const label of valueLabels) {
      const first = clauses.find(({ clause }) => clause.kind !== "link" && clause.value.kind === "label" && clause.value.name === label)!;
      const offered = valuesOffered(entities.get(first.subject)!, first.clause);
      valueSets = valueSets.flatMap((s) => offered.map((v) => new Map([...s, [label, v]])));
    }
    for (const values of valueSets) {
      const row = { entities, values };
      if (clauses.every(({ subject, clause }) => holds(row, entities.get(subject)!, clause, graph, params))) rows.push(row);
    }
  }

  // Rows sorted by the entity labels' keys (then ids), in order of first appearance.
  const compare = (a: Row, b: Row) => {
    for (const label of entityLabels) {
      const x = a.entities.get(label)!;
      const y = b.entities.get(label)!;
      if (x.key !== y.key) return x.key < y.key ? -1 : 1;
      if (x.id !== y.id) return x.id < y.id ? -1 : 1;
    }
    return 0;
  };
  rows.sort(compare);
  const output: Record<string, Value_[]> = {};
  for (const label of order) {
    const seen = new Set<string>();
    output[label] = [];
    for (const row of rows) {
      const value = types.has(label) ? row.entities.get(label)!.id : row.values.get(label)!;
      const identity = JSON.stringify(value);
      if (seen.has(identity)) continue;
      seen.add(identity);
      output[label].push(value);
    }
  }
  return { labels: order.map((name) => ({ name, kind: types.has(name) ? "entity" : "value" })), output, rows: rows.length };
}

/** The values that make a key or attribute clause of this entity match: its key, or the attribute's non-null value or elements. */
function valuesOffered(entity: ReferenceEntity, clause: Clause): Value_[] {
  if (clause.kind === "key") return [entity.key];
  if (clause.kind !== "attribute" || !Object.prototype.hasOwnProperty.call(entity.attributes, clause.name)) return [];
  const attribute = entity.attributes[clause.name]!;
  const elements = Array.isArray(attribute) ? attribute : [attribute];
  return elements.filter((v): v is Value_ => v !== null);
}

function holds(row: Row, subject: ReferenceEntity, clause: Clause, graph: ReferenceGraph, params: Record<string, Value_>): boolean {
  if (clause.kind === "link") {
    const target = row.entities.get(clause.target.label.name)!;
    return graph.links.some((l) => l.from === subject.id && l.relation === clause.relation && l.to === target.id);
  }
  const value = clause.value;
  // A constant (parameters substituted) is compared as written; a label by what it stands for.
  let compared: Value_;
  let constant = true;
  if (value.kind === "label") {
    constant = false;
    compared = row.entities.get(value.name)?.id ?? row.values.get(value.name)!;
  } else {
    compared = resolve(value, params);
  }
  if (clause.kind === "key") return constant ? subject.key === String(compared) : subject.key === compared;
  if (!Object.prototype.hasOwnProperty.call(subject.attributes, clause.name)) return false;
  const attribute = subject.attributes[clause.name]!;
  return Array.isArray(attribute) ? attribute.some((element) => element === compared) : attribute === compared;
}

function resolve(value: Exclude<Value, { kind: "label" }>, params: Record<string, Value_>): Value_ {
  switch (value.kind) {
    case "string":
      return value.parts.map((part) => (typeof part === "string" ? part : String(params[part.param]))).join("");
    case "number":
    case "boolean":
      return value.value;
    case "param":
      return params[value.name]!;
  }
}
