import { ProblemError } from "../../errors.js";
import type { AttributeClause, KeyClause, LinkClause, Position, Query, Value } from "./ast.js";
import { QuerySyntaxError } from "./errors.js";

/** Values for `${name}` parameters, by name. */
export type QueryParameters = Readonly<Record<string, unknown>>;

export interface BindContext {
  tenant: string;
  params: QueryParameters;
  /** The statement returns at most this many match rows plus one, to detect an overflow. */
  maxRows: number;
  /** For `budgetedSql`: the most rows the walk may visit (links followed, entities looked at). */
  maxVisits?: number;
}

export interface OutputLabel {
  name: string;
  /** An entity label yields entities; a value label (only ever used as a value) yields distinct values. */
  kind: "entity" | "value";
}

/** A query compiled once: SQL text with `?` placeholders, and how to bind them for one run. */
export interface CompiledQuery {
  labels: OutputLabel[];
  parameters: string[];
  sql: string;
  bind(context: BindContext): unknown[];
  /**
   * The same statement, counting every row its walk visits on the sequence `graph_work_visits`
   * and failing (SQLSTATE GQ001) past `maxVisits`: a bound on its work where nothing can
   * interrupt it (the embedded database). The sequence must be reset before each run.
   */
  budgetedSql: string;
  bindBudgeted(context: BindContext): unknown[];
}

type Binder = (context: BindContext) => unknown;

interface EntityLabel {
  name: string;
  type: string;
  typePos: Position;
  alias: string;
  keys: Value[];
  attributes: AttributeClause[];
  order: number;
}

interface LinkEdge {
  clause: LinkClause;
  from: string;
  to: string;
}

interface ValueUse {
  /** The entity whose key or attribute is compared. */
  owner: string;
  clause: KeyClause | AttributeClause;
  label: string;
  pos: Position;
}

const SELECTIVITY_KEY = 1000;
const SELECTIVITY_ATTRIBUTE = 100;

/**
 * Compiles a parsed query into one parameterised SQL statement. Every value, attribute name and
 * relation is a bound parameter; only generated aliases appear in the SQL text.
 *
 * The joins are written in the order the compiler chooses: from the most selective entity (one
 * with `entity:key`, then the most constant attributes) outward along the links, always to the
 * most selective neighbour next. PostgreSQL reorders at most `join_collapse_limit` (8) relations
 * by itself, and a walk over six entities already has eleven. A neighbour with constants of its
 * own is looked up by them (key or GIN index) and its link checked; one without is reached
 * through the link.
 */
export function compileQuery(query: Query): CompiledQuery {
  const entities = new Map<string, EntityLabel>();
  const order = new Map<string, number>();
  const see = (name: string) => {
    if (!order.has(name)) order.set(name, order.size);
  };
  const declare = (name: string, type: string, pos: Position) => {
    see(name);
    const known = entities.get(name);
    if (known === undefined) {
      entities.set(name, { name, type, typePos: pos, alias: `e${entities.size}`, keys: [], attributes: [], order: order.get(name)! });
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
  const links: LinkEdge[] = [];
  const valueUses: ValueUse[] = [];
  const parameters = new Set<string>();
  for (const statement of query.statements) {
    const subject = entities.get(statement.label.name)!;
    for (const clause of statement.clauses) {
      if (clause.kind === "link") {
        const target = clause.target.label;
        if (!entities.has(target.name)) {
          throw new QuerySyntaxError(
            target.pos,
            `?${target.name}`,
            `Type:?${target.name} or a statement that binds ?${target.name}`,
            `label ?${target.name} is not bound to an entity: give it a type (Type:?${target.name}) or a statement of its own`,
          );
        }
        links.push({ clause, from: subject.name, to: target.name });
        continue;
      }
      collectParameters(clause.value, parameters);
      if (clause.value.kind === "label") {
        valueUses.push({ owner: subject.name, clause, label: clause.value.name, pos: clause.value.pos });
      } else if (clause.kind === "key") {
        subject.keys.push(clause.value);
      } else {
        subject.attributes.push(clause);
      }
    }
  }

  const labels: OutputLabel[] = [...order.keys()].map((name) => ({ name, kind: entities.has(name) ? "entity" : "value" }));
  // Fragments are written out of text order (the WHERE clause before the joins), so a binder is
  // marked in place and the markers are numbered in text order at the end.
  const binders: Binder[] = [];
  const bind = (binder: Binder) => {
    binders.push(binder);
    return `\uE000${binders.length - 1}\uE000`;
  };
  const tenant = () => bind((c) => c.tenant);
  // Where a row of the walk is visited; the budgeted statement counts it there. A step that
  // depends on no earlier one names the entity placed last: the budgeted statement refers to it,
  // so the step is run again for every row before it (and counted each time) rather than run
  // once and kept, which would leave a cross product uncounted.
  const VISIT = "\uE001\uE001";
  const visitAfter = (alias: string) => `\uE001${alias}\uE001`;
  let lastPlaced = "";

  const entityConditions = (e: EntityLabel): string[] => {
    const conditions = [`${e.alias}.tenant = ${tenant()}`, `${e.alias}.type = ${bind(() => e.type)}`];
    for (const key of e.keys) conditions.push(`${e.alias}.key = ${bind((c) => textOf(resolveValue(key, c.params)))}`);
    for (const attribute of e.attributes) {
      const scalar = (c: BindContext) => resolveValue(attribute.value, c.params);
      // Equal to the value, or an array holding it; both forms are answered by the GIN index.
      conditions.push(
        `(${e.alias}.attributes @> ${bind((c) => JSON.stringify({ [attribute.name]: scalar(c) }))}::jsonb` +
          ` or ${e.alias}.attributes @> ${bind((c) => JSON.stringify({ [attribute.name]: [scalar(c)] }))}::jsonb)`,
      );
    }
    return conditions;
  };

  // Value labels are compared where their uses' entities are placed: the first use placed names
  // the value (for an attribute, each of its non-null elements: a variable ranges over the values
  // that make the clause match, as a constant does), every later use must hold it.
  const valueColumns = new Map<string, string>();
  const where: string[] = [];
  let valueCount = 0;
  const attributeName = (use: ValueUse) => bind(() => (use.clause as AttributeClause).name);
  const holds = (use: ValueUse, value: string) => {
    const owner = entities.get(use.owner)!.alias;
    if (use.clause.kind === "key") return `to_jsonb(${owner}.key) = ${value}`;
    const name = attributeName(use);
    // Equal to the value or an array holding it: the same test as a constant's, by the GIN index.
    return `(${owner}.attributes @> jsonb_build_object(${name}::text, ${value}) or ${owner}.attributes @> jsonb_build_object(${attributeName(use)}::text, jsonb_build_array(${value})))`;
  };
  const placeValueUses = (e: EntityLabel) => {
    for (const use of valueUses) {
      const entityValue = entities.get(use.label);
      if (entityValue !== undefined) {
        // An entity label as a value: its id (as text), under the same rule as a constant.
        const ready = (use.owner === e.name && placed.has(use.label)) || (use.label === e.name && placed.has(use.owner));
        if (ready) where.push(holds(use, `to_jsonb(${entityValue.alias}.id::text)`));
        continue;
      }
      if (use.owner !== e.name) continue;
      const known = valueColumns.get(use.label);
      if (known !== undefined) {
        where.push(holds(use, known));
        continue;
      }
      const owner = e.alias;
      if (use.clause.kind === "key") {
        valueColumns.set(use.label, `to_jsonb(${owner}.key)`);
        continue;
      }
      const v = `v${valueCount++}`;
      const raw = `${owner}.attributes -> ${attributeName(use)}`;
      // A missing attribute gives [null], and null is no value: no row, as with a constant.
      from.push(
        `cross join lateral jsonb_array_elements(case jsonb_typeof(${raw}) when 'array' then ${raw} else jsonb_build_array(${raw}) end) ${v}(value)`,
      );
      where.push(`jsonb_typeof(${v}.value) <> 'null'`);
      valueColumns.set(use.label, `${v}.value`);
    }
  };

  // Join order: greedy walk from the most selective entity along links. Every tie is broken by
  // the pattern itself (types, label names, relations), never by the order it was written in, so
  // every writing of a pattern compiles to the same plan.
  const score = (e: EntityLabel) => e.keys.length * SELECTIVITY_KEY + e.attributes.length * SELECTIVITY_ATTRIBUTE + 1;
  const degree = (e: EntityLabel) => links.filter((l) => l.from === e.name || l.to === e.name).length;
  const before = (a: EntityLabel, b: EntityLabel) =>
    score(a) !== score(b)
      ? score(a) > score(b)
      : degree(a) !== degree(b)
        ? degree(a) > degree(b)
        : a.type !== b.type
          ? a.type < b.type
          : a.name < b.name;
  const bestOf = (candidates: EntityLabel[]) => candidates.reduce((best, e) => (before(e, best) ? e : best));
  const linkKey = (l: LinkEdge) => `${l.clause.relation}\u0000${l.from}\u0000${l.to}`;
  const placed = new Set<string>();
  const pending = [...links].sort((a, b) => (linkKey(a) < linkKey(b) ? -1 : linkKey(a) > linkKey(b) ? 1 : 0));
  const from: string[] = [];
  let linkCount = 0;
  // Every step after the first is a subquery the planner may neither flatten (`offset 0`) nor
  // move: a LATERAL one is the inner side of a nested loop, probed by an index with the values of
  // the rows before it. So the plan is the compiler's walk on both backends, whatever the
  // statistics say (the embedded database often has none), and rows stream through it, so the
  // row limit stops the walk.
  const placeEntity = (e: EntityLabel, joinOn: string[]) => {
    if (placed.size === 0) {
      from.push(`entities ${e.alias}`);
      where.push(...entityConditions(e), VISIT);
    } else {
      const visit = joinOn.length === 0 ? visitAfter(lastPlaced) : VISIT;
      from.push(
        `cross join lateral (select ${e.alias}.id, ${e.alias}.key, ${e.alias}.attributes from entities ${e.alias} ` +
          `where ${[...joinOn, ...entityConditions(e), visit].join(" and ")} offset 0) ${e.alias}`,
      );
    }
    lastPlaced = e.alias;
    placed.add(e.name);
    placeValueUses(e);
  };
  while (placed.size < entities.size) {
    placeEntity(bestOf([...entities.values()].filter((e) => !placed.has(e.name))), []);
    for (;;) {
      // Links whose both ends are placed are checked at once; they cannot multiply rows. The
      // check is a LATERAL subquery so both ends are known values inside it and the lookup is
      // exact; as a plain join the planner may probe by one end only, and one end can be a hub.
      for (let i = 0; i < pending.length; ) {
        const link = pending[i]!;
        if (!placed.has(link.from) || !placed.has(link.to)) {
          i++;
          continue;
        }
        pending.splice(i, 1);
        const l = `l${linkCount++}`;
        const a = entities.get(link.from)!.alias;
        const b = entities.get(link.to)!.alias;
        from.push(
          `cross join lateral (select 1 from links ${l} where ${l}.tenant = ${tenant()} and ${l}.from_id = ${a}.id` +
            ` and ${l}.relation = ${bind(() => link.clause.relation)} and ${l}.to_id = ${b}.id limit 1) ${l}`,
        );
      }
      const frontier = pending.filter((link) => placed.has(link.from) !== placed.has(link.to));
      if (frontier.length === 0) break;
      const next = bestOf(frontier.map((link) => entities.get(placed.has(link.from) ? link.to : link.from)!));
      if (score(next) > 1) {
        // An entity with constants is found through its own index, and its links are then only
        // checked: driving it from a neighbour would walk every link of that neighbour (a tenant's
        // index set links to all of its agreements).
        placeEntity(next, []);
        continue;
      }
      const link = frontier.find((l) => l.from === next.name || l.to === next.name)!;
      pending.splice(pending.indexOf(link), 1);
      const l = `l${linkCount++}`;
      const forward = placed.has(link.from);
      const known = entities.get(forward ? link.from : link.to)!.alias;
      from.push(
        `cross join lateral (select ${l}.${forward ? "to_id" : "from_id"} as id from links ${l} where ${l}.tenant = ${tenant()}` +
          ` and ${l}.${forward ? "from_id" : "to_id"} = ${known}.id and ${l}.relation = ${bind(() => link.clause.relation)} and ${VISIT} offset 0) ${l}`,
      );
      placeEntity(next, [`${next.alias}.id = ${l}.id`]);
    }
  }

  // Columns of the match rows: one per label, in the order labels first appear. The limit sits
  // inside, before the rows are numbered, so the walk stops at the first row past the limit
  // rather than after enumerating every match.
  const columns: string[] = [];
  const groups: string[] = [];
  const ordering: string[] = [];
  labels.forEach((label, i) => {
    const entity = entities.get(label.name);
    if (entity !== undefined) {
      columns.push(`${entity.alias}.id as c${i}`, `${entity.alias}.key as k${i}`);
      ordering.push(`k${i}`, `c${i}`);
      groups.push(`select ${i} as label, c${i} as id, null::jsonb as value, min(rn) as first from m group by c${i}`);
    } else {
      columns.push(`${valueColumns.get(label.name)} as c${i}`);
      groups.push(`select ${i} as label, null::uuid as id, c${i} as value, min(rn) as first from m group by c${i}`);
    }
  });
  const matchSql =
    `select *, row_number() over (order by ${ordering.join(", ")}) as rn from (select ${columns.join(", ")} ` +
    `from ${from.join(" ")} where ${where.join(" and ")} limit ${bind((c) => c.maxRows + 1)}) r`;
  const marked =
    `with m as (${matchSql}) ` +
    `select u.label, e.id, e.type, e.key, e.attributes, u.value, (select count(*)::int from m) as matches ` +
    `from (${groups.join(" union all ")}) u left join entities e on e.tenant = ${tenant()} and e.id = u.id ` +
    `order by u.label, u.first`;
  const visits = bind((c) => c.maxVisits ?? Number.MAX_SAFE_INTEGER);
  const number = (text: string) => {
    const ordered: Binder[] = [];
    const sql = text.replace(/\uE000(\d+)\uE000/g, (_, index: string) => {
      ordered.push(binders[Number(index)]!);
      return "?";
    });
    return { sql, bind: (context: BindContext) => ordered.map((binder) => binder(context)) };
  };
  const plain = number(marked.replace(/ and \uE001\w*\uE001/g, ""));
  const count = `(case when nextval('graph_work_visits') <= ${visits}::bigint then true else graph_work_exceeded() end)`;
  const budgeted = number(marked.replace(/\uE001(\w*)\uE001/g, (_, after: string) => (after === "" ? count : `${after}.id is not null and ${count}`)));

  return {
    labels,
    parameters: [...parameters],
    sql: plain.sql,
    bind: plain.bind,
    budgetedSql: budgeted.sql,
    bindBudgeted: budgeted.bind,
  };
}

function collectParameters(value: Value, into: Set<string>): void {
  if (value.kind === "param") into.add(value.name);
  if (value.kind === "string") for (const part of value.parts) if (typeof part !== "string") into.add(part.param);
}

type Scalar = string | number | boolean;

function parameter(name: string, params: QueryParameters): Scalar {
  if (!Object.prototype.hasOwnProperty.call(params, name)) {
    throw new ProblemError("INVALID_QUERY_PARAMETERS", `the query uses \${${name}} but no value was given for it`, {
      errors: [{ path: `queryParameters.${name}`, message: "missing" }],
    });
  }
  const value = params[name];
  if (typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))) return value;
  throw new ProblemError("INVALID_QUERY_PARAMETERS", `the value of \${${name}} must be a string, a number or a boolean`, {
    errors: [{ path: `queryParameters.${name}`, message: "must be a string, a number or a boolean" }],
  });
}

/** The value a clause compares with, parameters substituted. Labels never reach here. */
function resolveValue(value: Value, params: QueryParameters): Scalar {
  switch (value.kind) {
    case "string":
      return value.parts.map((part) => (typeof part === "string" ? part : String(parameter(part.param, params)))).join("");
    case "number":
    case "boolean":
      return value.value;
    case "param":
      return parameter(value.name, params);
    case "label":
      throw new Error("a label value is compiled as a join, not bound");
  }
}

function textOf(value: Scalar): string {
  return String(value);
}
