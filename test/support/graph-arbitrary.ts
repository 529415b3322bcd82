import fc from "fast-check";
import type { AttributeValue, Scalar } from "../../src/graph/entity.js";
import type { AttributeStatistics, GraphStatistics } from "../../src/graph/query/statistics.js";
import type { ReferenceGraph } from "./graph-reference.js";

/**
 * Random graphs and random patterns over them, for comparing the compiled SQL with the reference
 * evaluator. The pools are small so that patterns often match: keys, attribute values and
 * relations collide on purpose; values include strings that look like numbers, numbers, booleans,
 * nulls, arrays and entity ids.
 */
export const TYPES = ["A", "B", "C"] as const;
const KEYS = ["k0", "k1", "k2", "k3", "k4", "1"];
const ATTRIBUTES = ["p", "q", "r"];
const RELATIONS = ["r", "s"];
const STRINGS = ["x", "1", "k1"];
const NUMBERS = [1, 1.5];

/** A scalar of a graph or a query: `{ ref: i }` stands for the id of the i-th entity. */
type ModelScalar = Scalar | { ref: number };

const scalar: fc.Arbitrary<ModelScalar> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...STRINGS) },
  { weight: 2, arbitrary: fc.constantFrom(...NUMBERS) },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 2, arbitrary: fc.nat(20).map((ref) => ({ ref })) },
);
const attributeValue = fc.oneof({ weight: 3, arbitrary: scalar }, { weight: 2, arbitrary: fc.array(scalar, { maxLength: 3 }) });

export interface GraphModel {
  entities: { type: string; key: string; attributes: Record<string, ModelScalar | ModelScalar[]> }[];
  links: { from: number; relation: string; to: number }[];
}

export const graphModel: fc.Arbitrary<GraphModel> = fc
  .tuple(
    ...TYPES.map((type) =>
      fc
        .uniqueArray(fc.constantFrom(...KEYS), { maxLength: 5 })
        .chain((keys) =>
          fc.tuple(...keys.map((key) => fc.dictionary(fc.constantFrom(...ATTRIBUTES), attributeValue, { minKeys: 1, maxKeys: 3 }).map((attributes) => ({ type, key, attributes })))),
        ),
    ),
  )
  .chain((perType) => {
    const entities = perType.flat();
    if (entities.length === 0) return fc.constant({ entities, links: [] });
    const index = fc.nat(entities.length - 1);
    const link = fc.record({ from: index, relation: fc.constantFrom(...RELATIONS), to: index });
    return fc
      .uniqueArray(link, { minLength: entities.length, maxLength: entities.length * 6, selector: (l) => `${l.from} ${l.relation} ${l.to}` })
      .map((links) => ({ entities, links }));
  });

/** The model with ids given: a reference to an entity past the last one is a dangling id. */
export function materialize(model: GraphModel, ids: string[]): ReferenceGraph {
  const value = (v: ModelScalar): Scalar => (v !== null && typeof v === "object" ? ids[v.ref % ids.length]! : v);
  return {
    entities: model.entities.map((e, i) => ({
      id: ids[i]!,
      type: e.type,
      key: e.key,
      attributes: Object.fromEntries(
        Object.entries(e.attributes).map(([name, v]): [string, AttributeValue] => [name, Array.isArray(v) ? v.map(value) : value(v)]),
      ),
    })),
    links: model.links.map((l) => ({ from: ids[l.from]!, relation: l.relation, to: ids[l.to]! })),
  };
}

/** Entity labels have a fixed type each, so a generated pattern never gives a label two types. */
const ENTITY_LABELS: Record<string, string> = { a: "A", b: "B", c: "C", d: "A", e: "B" };
const VALUE_LABELS = ["u", "v", "w"];

export type ClauseModel =
  | { kind: "key"; value: ValueModel }
  | { kind: "attribute"; name: string; value: ValueModel }
  | { kind: "link"; relation: string; target: string; typed: boolean };

export type ValueModel =
  | { kind: "literal"; value: string | number | boolean }
  | { kind: "template"; prefix: string; param: string }
  | { kind: "param"; param: string }
  | { kind: "label"; name: string };

export interface PatternModel {
  statements: { label: string; clauses: ClauseModel[] }[];
  /** Values of `${p0}` … `${p2}`: a scalar, or `{ ref: i }` for the id of an entity. */
  params: Record<string, ModelScalar>;
}

const PARAMS = ["p0", "p1", "p2"];
const entityLabel = fc.constantFrom(...Object.keys(ENTITY_LABELS));
const valueModel: fc.Arbitrary<ValueModel> = fc.oneof(
  { weight: 2, arbitrary: fc.oneof(fc.constantFrom(...STRINGS, ...KEYS), fc.constantFrom(...NUMBERS), fc.boolean()).map((value) => ({ kind: "literal" as const, value })) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("template" as const), prefix: fc.constantFrom("k", ""), param: fc.constantFrom(...PARAMS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("param" as const), param: fc.constantFrom(...PARAMS) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("label" as const), name: fc.constantFrom(...VALUE_LABELS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("label" as const), name: entityLabel }) },
);
const clauseModel: fc.Arbitrary<ClauseModel> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("key" as const), value: valueModel }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("attribute" as const), name: fc.constantFrom(...ATTRIBUTES), value: valueModel }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("link" as const), relation: fc.constantFrom(...RELATIONS), target: entityLabel, typed: fc.boolean() }),
  },
);

export const patternModel: fc.Arbitrary<PatternModel> = fc.record({
  statements: fc.array(fc.record({ label: entityLabel, clauses: fc.array(clauseModel, { maxLength: 2 }) }), { minLength: 1, maxLength: 3 }),
  params: fc.record({
    p0: fc.oneof(fc.constantFrom(...KEYS, ...STRINGS), fc.nat(20).map((ref) => ({ ref }))),
    p1: fc.oneof(fc.constantFrom(...NUMBERS), fc.boolean(), fc.constantFrom(...STRINGS)),
    p2: fc.oneof(fc.nat(4), fc.nat(20).map((ref) => ({ ref }))),
  }),
});

/**
 * The pattern as query text. An untyped link to a label no statement binds would be a syntax
 * error, so such a target is written with its type. At most four entity labels keep the nested
 * loops of the reference small.
 */
export function printPattern(pattern: PatternModel): string {
  const bound = new Set(pattern.statements.map((s) => s.label));
  const printValue = (v: ValueModel): string => {
    switch (v.kind) {
      case "literal":
        return typeof v.value === "string" ? JSON.stringify(v.value) : String(v.value);
      case "template":
        return `"${v.prefix}\${${v.param}}"`;
      case "param":
        return `\${${v.param}}`;
      case "label":
        return `?${v.name}`;
    }
  };
  const printClause = (c: ClauseModel): string => {
    switch (c.kind) {
      case "key":
        return `entity:key ${printValue(c.value)}`;
      case "attribute":
        return `attribute:${c.name} ${printValue(c.value)}`;
      case "link":
        return `link:${c.relation} ${c.typed || !bound.has(c.target) ? `${ENTITY_LABELS[c.target]}:` : ""}?${c.target}`;
    }
  };
  return pattern.statements
    .map((s) => [`${ENTITY_LABELS[s.label]} ?${s.label}`, ...s.clauses.map(printClause)].join("; ") + ".")
    .join("\n");
}

export function resolveParams(params: PatternModel["params"], ids: string[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [name, v] of Object.entries(params)) out[name] = v !== null && typeof v === "object" ? ids[v.ref % ids.length]! : (v as string | number | boolean);
  return out;
}

const count = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 20 }).map((e) => 2 ** e));
const share = fc.integer({ min: 0, max: 10 }).map((e) => 2 ** -e);
const attributeStatistics: fc.Arbitrary<AttributeStatistics> = fc.record({
  held: share,
  distinct: count,
  common: fc.dictionary(fc.constantFrom(...[...STRINGS, ...KEYS].map((s) => JSON.stringify(s)), ...NUMBERS.map(String), "true", "false"), share, { maxKeys: 3 }),
  exact: fc.boolean(),
});

/** Any statistics of a tenant of the generated types, relations and attributes, true or not: a plan must be right whatever they say. */
export const statisticsModel: fc.Arbitrary<GraphStatistics> = fc.record({
  types: fc.dictionary(fc.constantFrom(...TYPES), count),
  relations: fc.dictionary(fc.constantFrom(...RELATIONS), fc.record({ links: count, sources: count, targets: count, self: count })),
  attributes: fc.dictionary(fc.constantFrom(...TYPES), fc.dictionary(fc.constantFrom(...ATTRIBUTES), attributeStatistics)),
  unsampledLinks: count,
});
