import { LRUCache } from "lru-cache";
import type { Query } from "./ast.js";
import { planJoins, type JoinPlan, type OutputLabel, type PlannedEntity, type PlanStep, type ValueSource } from "./plan.js";
import type { GraphStatistics } from "./statistics.js";
import { resolveValue, textOf, type QueryParameters } from "./values.js";

export type { OutputLabel } from "./plan.js";

export type { QueryParameters } from "./values.js";

export interface BindContext {
  tenant: string;
  params: QueryParameters;
  /** The statement returns at most this many match rows plus one, to detect an overflow. */
  maxRows: number;
  /** For `budgetedSql`: the most rows the walk may visit (links followed, entities looked at). */
  maxVisits?: number;
}

/** One plan of a query as a statement: SQL text with `?` placeholders, and how to bind them for one run. */
export interface CompiledStatement {
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
  /**
   * Both statements, run only while `gate` (an SQL boolean expression, its `?` placeholders bound
   * before the query's own) holds: the gate is read once, first, in the statement's snapshot; when
   * it is false the walk does not run. Every row carries it as `current`; with no match row there
   * is still one row, with a null label. Same bindings as {@link bind} and {@link bindBudgeted},
   * after the gate's.
   */
  gated(gate: string): { sql: string; budgetedSql: string };
}

/** A query compiled once: its statement planned by the pattern alone, and its statements planned by a tenant's statistics. */
export interface CompiledQuery extends CompiledStatement {
  /**
   * The statement planned with a tenant's statistics ({@link planJoins}); this one without them.
   * Tenants whose statistics give the same plan share one statement (one text, so one prepared
   * plan per connection); the plans a query has are few (their statistics are rounded to powers of
   * two), and the last {@link PLANS_KEPT} are kept.
   */
  planned(statistics: GraphStatistics | undefined): CompiledStatement;
}

/** Statements kept per query, one per plan the tenants' statistics gave it. */
const PLANS_KEPT = 8;

/** Compiles a parsed query into one parameterised SQL statement per plan: its plan ({@link planJoins}), then the statement ({@link emitSql}). */
export function compileQuery(query: Query): CompiledQuery {
  const byPlan = new LRUCache<string, CompiledStatement>({ max: PLANS_KEPT });
  const byStatistics = new WeakMap<GraphStatistics, CompiledStatement>();
  const statementOf = (plan: JoinPlan) => {
    const key = JSON.stringify(plan.parts);
    let statement = byPlan.get(key);
    if (statement === undefined) byPlan.set(key, (statement = emitSql(plan)));
    return statement;
  };
  const unplanned = emitSql(planJoins(query));
  return {
    ...unplanned,
    planned(statistics) {
      if (statistics === undefined) return unplanned;
      let statement = byStatistics.get(statistics);
      if (statement === undefined) byStatistics.set(statistics, (statement = statementOf(planJoins(query, statistics))));
      return statement;
    },
  };
}

/** An id as text (lower-case, hyphenated: how `id::text` writes it), as a regular expression. */
const UUID_TEXT = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

/** Gated texts kept per compiled query (the gates used last): few gates are ever used. */
const GATED_TEXTS_KEPT = 8;

type Binder = (context: BindContext) => unknown;
type Placed = PlannedEntity & { alias: string };
type CompareStep = Extract<PlanStep, { kind: "compare" }>;

/**
 * Writes a plan as one parameterised SQL statement. Every value, attribute name and relation is a
 * bound parameter; only generated aliases appear in the SQL text.
 *
 * The joins are written in the plan's order. PostgreSQL reorders at most `join_collapse_limit`
 * (8) relations by itself, and a walk over six entities already has eleven. Every step after the
 * first is a subquery the planner may neither flatten (`offset 0`) nor move: a LATERAL one is the
 * inner side of a nested loop, probed by an index with the values of the rows before it. So the
 * plan is the compiler's walk on both backends, whatever the statistics say (the embedded
 * database often has none), and rows stream through it, so the row limit stops the walk. The
 * exception is a step that depends on no row before it (an entity found by its own constants, its
 * links then checked): the planner may put either side of that join first. Each independent part
 * of the pattern is such a walk of its own, run once; their product is only counted.
 */
export function emitSql(plan: JoinPlan): CompiledStatement {
  const entities = new Map<string, Placed>(plan.entities.map((e, i) => [e.name, { ...e, alias: `e${i}` }]));
  const alias = (name: string) => entities.get(name)!.alias;
  // Fragments are written out of text order (the WHERE clause before the joins), so a binder is
  // marked in place and the markers are numbered in text order at the end.
  const binders: Binder[] = [];
  const bind = (binder: Binder) => {
    binders.push(binder);
    return `\uE000${binders.length - 1}\uE000`;
  };
  const tenant = () => bind((c) => c.tenant);
  // Where a row of the walk is visited; the budgeted statement counts it there. A step that
  // depends on no earlier one of its part names the entity placed last: the budgeted statement
  // refers to it, so the step is run again for every row before it (and counted each time) rather
  // than run once and kept, which would leave a cross product uncounted.
  const VISIT = "\uE001\uE001";
  const visitAfter = (a: string) => `\uE001${a}\uE001`;
  let lastPlaced = "";

  /** The entity's tenant, type and keys: equalities the btree indexes answer. */
  const identityConditions = (e: Placed): string[] => {
    const conditions = [`${e.alias}.tenant = ${tenant()}`, `${e.alias}.type = ${bind(() => e.type)}`];
    for (const key of e.keys) conditions.push(`${e.alias}.key = ${bind((c) => textOf(resolveValue(key, c.params)))}`);
    return conditions;
  };
  /**
   * Its attribute constants: each equal to the value, or an array holding it. `scoped`: as
   * containment under the entity's tenant and type, which the GIN index
   * entities_scoped_attributes answers (migration 006); otherwise as plain containment, a filter.
   */
  const attributeConditions = (e: Placed, scoped: boolean): string[] =>
    e.attributes.map((attribute) => {
      const scalar = (c: BindContext) => resolveValue(attribute.value, c.params);
      const forms = [
        bind((c) => JSON.stringify({ [attribute.name]: scalar(c) })),
        bind((c) => JSON.stringify({ [attribute.name]: [scalar(c)] })),
      ];
      const holds = (value: string) =>
        scoped
          ? `graph_scoped_attributes(${e.alias}.tenant, ${e.alias}.type, ${e.alias}.attributes) @> graph_scoped_attributes(${tenant()}::text, ${bind(() => e.type)}::text, ${value}::jsonb)`
          : `${e.alias}.attributes @> ${value}::jsonb`;
      return `(${forms.map(holds).join(" or ")})`;
    });
  const valueColumns = new Map<string, string>();
  let from: string[] = [];
  let where: string[] = [];
  let valueCount = 0;
  let linkCount = 0;
  const holds = (owner: string, source: ValueSource, value: string) => {
    if (source.kind === "key") return `to_jsonb(${owner}.key) = ${value}`;
    // Equal to the value or an array holding it: the same test as a constant's, by the GIN index.
    return (
      `(${owner}.attributes @> jsonb_build_object(${bind(() => source.name)}::text, ${value})` +
      ` or ${owner}.attributes @> jsonb_build_object(${bind(() => source.name)}::text, jsonb_build_array(${value})))`
    );
  };
  /** What a compare step compares with: the bound value, or the id of an entity label. */
  const compared = (step: CompareStep) => (step.entityLabel ? `to_jsonb(${alias(step.label)}.id::text)` : valueColumns.get(step.label)!);
  /**
   * Value joins: the compare steps of an entity just found, at that entity, whose value is known
   * from the rows before it. The entity is looked up with that value — by its key through the
   * (tenant, type, key) index, or by the attribute through the tenant-scoped attribute index —
   * instead of read in full and filtered; the compare still runs after it, the exact test.
   */
  const placedNames = new Set<string>();
  const valueJoinsAfter = (steps: PlanStep[], index: number, name: string): CompareStep[] => {
    const joins: CompareStep[] = [];
    for (const step of steps.slice(index + 1)) {
      if (step.kind === "find" || step.kind === "follow") break;
      if (step.kind !== "compare" || step.label === step.owner) continue;
      // With a value from the rows before (not one bound at this entity): at this entity, a value
      // or the id of an entity placed before; or this entity's own id, held by one placed before.
      const atThis = step.owner === name && (step.entityLabel ? placedNames.has(step.label) : valueColumns.has(step.label));
      const itsId = step.entityLabel && step.label === name && placedNames.has(step.owner);
      if (atThis || itsId) joins.push(step);
    }
    return joins;
  };
  const placeEntity = (name: string, joinOn: string[], joins: CompareStep[] = []) => {
    const e = entities.get(name)!;
    const first = lastPlaced === "";
    const visit = first || joinOn.length > 0 || joins.length > 0 ? VISIT : visitAfter(lastPlaced);
    const byKey = joins.filter((j) => j.owner === name && j.source.kind === "key").map((j) => `${e.alias}.key = (${compared(j)} #>> '{}')`);
    // Its id held by an entity placed before, as its key or in an attribute: a lookup by the
    // primary key with the texts that are ids (any other text cannot equal one).
    const byId = joins
      .filter((j) => j.label === name)
      .map((j) => {
        const owner = alias(j.owner);
        const source = j.source;
        const raw = () => `${owner}.attributes -> ${bind(() => (source.kind === "attribute" ? source.name : ""))}`;
        const texts =
          source.kind === "key"
            ? `select ${owner}.key as t`
            : `select t from jsonb_array_elements_text(case jsonb_typeof(${raw()}) when 'array' then ${raw()} else jsonb_build_array(${raw()}) end) x(t)`;
        return `${e.alias}.id = any(array(select t::uuid from (${texts}) ids where t ~ '${UUID_TEXT}'))`;
      });
    const scopedJoins = joins.flatMap((j) => {
      if (j.owner !== name || j.source.kind === "key") return [];
      const attribute = j.source.name;
      const holds = (value: string) =>
        `graph_scoped_attributes(${e.alias}.tenant, ${e.alias}.type, ${e.alias}.attributes) @> ` +
        `graph_scoped_attributes(${tenant()}::text, ${bind(() => e.type)}::text, jsonb_build_object(${bind(() => attribute)}::text, ${value}))`;
      return [`(${holds(compared(j))} or ${holds(`jsonb_build_array(${compared(j)})`)})`];
    });
    // An entity found by its attributes alone is read through the tenant-scoped index only, in a
    // subquery of its own: its tenant and type, outside it, cannot be added to that lookup as an
    // index condition (a bitmap AND with the tenant's whole range of the type, which a plan made
    // without the caller's values would choose). They still hold for every row, as a filter. An
    // entity reached along a link is read by its id, its attributes only tested.
    const byAttributes = joinOn.length + e.keys.length + byKey.length + byId.length === 0 && e.attributes.length + scopedJoins.length > 0;
    const source = byAttributes
      ? `(select ${e.alias}.id, ${e.alias}.key, ${e.alias}.attributes, ${e.alias}.tenant, ${e.alias}.type from entities ${e.alias} ` +
        `where ${[...attributeConditions(e, true), ...scopedJoins, visit].join(" and ")} offset 0) ${e.alias}`
      : `entities ${e.alias}`;
    const conditions = byAttributes ? identityConditions(e) : [...identityConditions(e), ...byKey, ...byId, ...attributeConditions(e, false), visit];
    if (first) {
      from.push(source);
      where.push(...conditions);
    } else {
      from.push(`cross join lateral (select ${e.alias}.id, ${e.alias}.key, ${e.alias}.attributes from ${source} where ${[...joinOn, ...conditions].join(" and ")} offset 0) ${e.alias}`);
    }
    lastPlaced = e.alias;
    placedNames.add(name);
  };

  const walkStep = (step: PlanStep, index: number, steps: PlanStep[]) => {
    switch (step.kind) {
      case "find":
        placeEntity(step.entity, [], valueJoinsAfter(steps, index, step.entity));
        break;
      case "follow": {
        // The link is followed from the placed end; the entity it reaches is then looked up by id.
        const l = `l${linkCount++}`;
        const known = alias(step.forward ? step.link.from : step.link.to);
        from.push(
          `cross join lateral (select ${l}.${step.forward ? "to_id" : "from_id"} as id from links ${l} where ${l}.tenant = ${tenant()}` +
            ` and ${l}.${step.forward ? "from_id" : "to_id"} = ${known}.id and ${l}.relation = ${bind(() => step.link.relation)} and ${VISIT} offset 0) ${l}`,
        );
        placeEntity(step.entity, [`${alias(step.entity)}.id = ${l}.id`]);
        break;
      }
      case "check": {
        // A LATERAL subquery so both ends are known values inside it and the lookup is exact; as a
        // plain join the planner may probe by one end only, and one end can be a hub.
        const l = `l${linkCount++}`;
        from.push(
          `cross join lateral (select 1 from links ${l} where ${l}.tenant = ${tenant()} and ${l}.from_id = ${alias(step.link.from)}.id` +
            ` and ${l}.relation = ${bind(() => step.link.relation)} and ${l}.to_id = ${alias(step.link.to)}.id limit 1) ${l}`,
        );
        break;
      }
      case "compare":
        where.push(holds(alias(step.owner), step.source, compared(step)));
        break;
      case "bind": {
        const owner = alias(step.owner);
        if (step.source.kind === "key") {
          valueColumns.set(step.label, `to_jsonb(${owner}.key)`);
          break;
        }
        const name = step.source.name;
        const v = `v${valueCount++}`;
        const raw = `${owner}.attributes -> ${bind(() => name)}`;
        // A missing attribute gives [null], and null is no value: no row, as with a constant.
        from.push(`cross join lateral jsonb_array_elements(case jsonb_typeof(${raw}) when 'array' then ${raw} else jsonb_build_array(${raw}) end) ${v}(value)`);
        where.push(`jsonb_typeof(${v}.value) <> 'null'`);
        valueColumns.set(step.label, `${v}.value`);
        break;
      }
    }
  };

  // Each part of the pattern (src/graph/query/plan.ts) is walked on its own, once: a WITH query of
  // its match rows, materialised. Columns of the match rows: one per label of the part, in the
  // order labels first appear; an entity's key and attributes come along from the walk, which read
  // them already, so the output needs no second read of the entities. The limit sits inside,
  // before the rows are numbered, so the walk stops at the first row past the limit rather than
  // after enumerating every match.
  const partOf = new Map<string, number>();
  plan.parts.forEach((part, p) => {
    for (const name of part.entities) partOf.set(name, p);
    for (const step of part.steps) if (step.kind === "bind") partOf.set(step.label, p);
  });
  const limit = bind((c) => c.maxRows + 1);
  const partTexts = plan.parts.map((part, p) => {
    from = [];
    where = [];
    lastPlaced = "";
    part.steps.forEach((step, index) => walkStep(step, index, part.steps));
    const [walkFrom, walkWhere] = [from.join(" "), where.join(" and ")];
    const columns: string[] = [];
    const unpivot: string[] = [];
    const ordering: string[] = [];
    plan.labels.forEach((label, i) => {
      if (partOf.get(label.name) !== p) return;
      const entity = entities.get(label.name);
      if (entity !== undefined) {
        columns.push(`${entity.alias}.id as c${i}`, `${entity.alias}.key as k${i}`, `${entity.alias}.attributes as a${i}`);
        ordering.push(`k${i}`, `c${i}`);
        unpivot.push(`(${i}, m.c${i}, m.k${i}, m.a${i}, null::jsonb)`);
      } else {
        columns.push(`${valueColumns.get(label.name)} as c${i}`);
        unpivot.push(`(${i}, null::uuid, null::text, null::jsonb, m.c${i})`);
      }
    });
    // A part is walked only once every part before it has a row: with one empty, so is the answer.
    // And only as far as the product can stay within the limit: with P rows before it, a part's
    // row past maxRows / P is a product past the limit, the walk's last.
    const after = p === 0 ? "" : ` and exists (select 1 from m${p - 1})`;
    const rowsBefore = plan.parts.slice(0, p).map((_, q) => `(select count(*) from m${q})::numeric`);
    const partLimit = p === 0 ? limit : `(select floor(${bind((c) => c.maxRows)}::numeric / greatest(${rowsBefore.join(" * ")}, 1))::bigint + 1)`;
    return {
      walk: (gate?: string) =>
        `m${p} as materialized (select *, row_number() over (order by ${ordering.join(", ")}) as rn from (select ${columns.join(", ")} ` +
        `from ${walkFrom} where ${walkWhere}${gate === undefined ? "" : " and (select current from g)"}${after} limit ${partLimit}) r)`,
      unpivoted: `select m.rn, v.* from m${p} m cross join lateral (values ${unpivot.join(", ")}) v(label, id, key, attributes, value)`,
    };
  });
  // The answer's rows are the product of the parts' rows, and it is never built: its size is the
  // product of their counts (exact unless a walk stopped past the limit), so a product past it is
  // the row-limit problem at once; and a label's distinct entities and values, in the order of the
  // first product row each is in, are those of its part in the order of the part's first row (the
  // product's rows are ordered by the labels' columns, and a part's columns can take their least
  // values independently of the others').
  const matches = `least(${plan.parts.map((_, p) => `(select count(*) from m${p})::numeric`).join(" * ")}, ${limit})::int`;
  // The distinct entities and values of each label, each with the first match row of its part it
  // is in. One aggregate over the match rows unpivoted (a VALUES list per row), not one per label:
  // the embedded database plans the statement at every run (PostgreSQL's graph pool once per
  // connection), and seven GROUP BYs under a UNION ALL cost more to plan than the walk itself.
  // An entity's key and attributes follow from its id; they are grouped on only to be carried.
  // Only for an answer within the limit: a row of `n` alone carries the count otherwise.
  const distinct =
    `select v.label, v.id, v.key, v.attributes, v.value, min(v.rn) as first from (${partTexts.map((t) => t.unpivoted).join(" union all ")}) v ` +
    `where (select matches from n) between 1 and ${bind((c) => c.maxRows)} group by v.label, v.id, v.key, v.attributes, v.value`;
  // The gate, when there is one, is a CTE read by the walks as a one-time filter (an InitPlan) and
  // by the outer select, so it is evaluated once; a LATERAL wrapper around the whole statement
  // costs more than twice as much to plan. Every statement answers at least the row of `n`, with
  // a null label.
  const statementText = (gate?: string) => {
    const walks = partTexts.map((t) => t.walk(gate)).join(", ");
    const outputColumns = `u.id, u.key, u.attributes, u.value, n.matches, u.first`;
    return gate === undefined
      ? `with ${walks}, n as (select ${matches} as matches) select u.label, ${outputColumns} from n left join (${distinct}) u on true order by u.label, u.first`
      : `with g as (select (${gate}) as current), ${walks}, n as (select ${matches} as matches) ` +
          `select g.current, u.label, ${outputColumns} from g cross join n left join (${distinct}) u on true order by u.label, u.first`;
  };
  const visits = bind((c) => c.maxVisits ?? Number.MAX_SAFE_INTEGER);
  const number = (text: string) => {
    const ordered: Binder[] = [];
    const sql = text.replace(/\uE000(\d+)\uE000/g, (_, index: string) => {
      ordered.push(binders[Number(index)]!);
      return "?";
    });
    return { sql, bind: (context: BindContext) => ordered.map((binder) => binder(context)) };
  };
  const count = `(case when nextval('graph_work_visits') <= ${visits}::bigint then true else graph_work_exceeded() end)`;
  const plainOf = (marked: string) => number(marked.replace(/ and \uE001\w*\uE001/g, ""));
  const budgetedOf = (marked: string) =>
    number(marked.replace(/\uE001(\w*)\uE001/g, (_, after: string) => (after === "" ? count : `${after}.id is not null and ${count}`)));
  const plain = plainOf(statementText());
  const budgeted = budgetedOf(statementText());
  // A query is run under few gates (one: its definition's row), so their texts are kept.
  const gatedTexts = new LRUCache<string, { sql: string; budgetedSql: string }>({ max: GATED_TEXTS_KEPT });

  return {
    labels: plan.labels,
    parameters: plan.parameters,
    sql: plain.sql,
    bind: plain.bind,
    budgetedSql: budgeted.sql,
    bindBudgeted: budgeted.bind,
    gated(gate: string) {
      let texts = gatedTexts.get(gate);
      if (texts === undefined) {
        texts = { sql: plainOf(statementText(gate)).sql, budgetedSql: budgetedOf(statementText(gate)).sql };
        gatedTexts.set(gate, texts);
      }
      return texts;
    },
  };
}
