import { expect } from "chai";
import fc from "fast-check";
import { EXAMPLE_QUERY } from "../../src/demo/seed.js";
import { compileQuery } from "../../src/graph/query/compiler.js";
import { parseQuery } from "../../src/graph/query/parser.js";
import { patternModel, printPattern } from "../support/graph-arbitrary.js";

const compile = (source: string) => compileQuery(parseQuery(source));
/** The FROM items of the match statement, in the order they are written. */
const joinOrder = (sql: string) => [...sql.matchAll(/(?:from|join) (entities|links) (\w+)/g)].map((m) => m[2]);

describe("graph query compiler", () => {
  it("compiles the example into one statement whose placeholders match its bindings", () => {
    const compiled = compile(EXAMPLE_QUERY);
    const bindings = compiled.bind({ tenant: "acme", params: { tenantId: "acme", publicId: "AGR-1" }, maxRows: 100 });
    expect(compiled.sql.split("?").length - 1).to.equal(bindings.length);
    expect(compiled.sql.match(/\bm\d+ as materialized\b/g)).to.have.length(1);
    expect(compiled.parameters).to.have.members(["tenantId", "publicId"]);
    expect(compiled.labels.map((l) => `${l.name}:${l.kind}`)).to.deep.equal([
      "tenant:entity",
      "indexSet:entity",
      "agreement:entity",
      "product:entity",
      "arrangement:entity",
      "relation:entity",
      "accessPoint:entity",
    ]);
  });

  it("starts from the entity:key statement, looks the attribute-matched agreement up by its index and checks its link", () => {
    const sql = compile(EXAMPLE_QUERY).sql;
    // e0 tenant (key), l0 + e1 index set, e2 agreement by its own attributes, l1 the checked link, then down the walk.
    expect(joinOrder(sql)).to.deep.equal(["e0", "l0", "e1", "e2", "l1", "l2", "e3", "l3", "e4", "l4", "e5", "l5", "e6"]);
    expect(sql).to.contain("cross join lateral (select 1 from links l1 where");
    // The agreement is looked up by the tenant-scoped attribute index alone, in a subquery of its
    // own; its tenant and type are checked outside it, where they cannot join the index lookup.
    expect(sql).to.contain(
      "cross join lateral (select e2.id, e2.key, e2.attributes from (select e2.id, e2.key, e2.attributes, e2.tenant, e2.type from entities e2 " +
        "where (graph_scoped_attributes(e2.tenant, e2.type, e2.attributes) @> graph_scoped_attributes(?::text, ?::text, ?::jsonb) " +
        "or graph_scoped_attributes(e2.tenant, e2.type, e2.attributes) @> graph_scoped_attributes(?::text, ?::text, ?::jsonb)) offset 0) e2 " +
        "where e2.tenant = ? and e2.type = ? offset 0) e2",
    );
    // With a key, the entity is found by the (tenant, type, key) index; its attributes are a filter.
    const keyed = compile(`Agreement ?a; entity:key "k"; attribute:publicId "p".`).sql;
    expect(keyed).to.contain("from entities e0");
    expect(keyed).to.match(/e0\.key = \? and \(e0\.attributes @> \?::jsonb or e0\.attributes @> \?::jsonb\)/);
    // Every step after the first is a fenced LATERAL subquery: the planner keeps the walk.
    expect(sql).to.contain("cross join lateral (select l0.to_id as id from links l0 where l0.tenant = ? and l0.from_id = e0.id and l0.relation = ? offset 0) l0");
  });

  it("walks every writing of a pattern in the same order: ties are broken by the pattern, not by where it is written", () => {
    // The labels in the order the walk places them, whatever aliases the writing gave them.
    const walk = (source: string) => {
      const compiled = compile(source);
      const aliasOf = new Map([...compiled.sql.matchAll(/(e\d+)\.id as c(\d+)/g)].map((m) => [m[1], compiled.labels[Number(m[2])]!.name]));
      return joinOrder(compiled.sql).filter((a) => /^e\d+$/.test(a!)).map((a) => aliasOf.get(a!));
    };
    const statements = [`T ?x; link:a ?x.`, `T ?y; link:b ?x.`, `T ?z; link:c T:?y; attribute:f "v".`];
    const orders = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]].map((o) => walk(o.map((i) => statements[i]).join(" ")));
    for (const order of orders) expect(order).to.deep.equal(["z", "y", "x"]);
  });

  it("walks each independent part once, as a WITH query of its own with the row limit, and never joins the parts", () => {
    const { sql } = compile(`Meter ?m2. Meter ?m5. Meter ?m3; attribute:ownerId ?m5.`);
    expect(sql.match(/\bm\d+ as materialized\b/g)).to.deep.equal(["m0 as materialized", "m1 as materialized"]);
    // The first stops at the row past the limit; the second runs only once the first has a row,
    // and stops at the row that takes the product past the limit.
    expect(sql).to.match(/m0 as materialized \(.* limit \?\) r\), m1/);
    expect(sql).to.match(
      /m1 as materialized \(.* and exists \(select 1 from m0\) limit \(select floor\(\?::numeric \/ greatest\(\(select count\(\*\) from m0\)::numeric, 1\)\)::bigint \+ 1\)\) r\)/,
    );
    // Their product is only counted: a part is read to count its rows, test it has one, or list its labels' values.
    expect(sql).to.contain("n as (select least((select count(*) from m0)::numeric * (select count(*) from m1)::numeric, ?)::int as matches)");
    expect(sql).not.to.match(/from m\d+(?!\)| m cross join lateral \(values)/);
  });

  it("prefers a key over attributes, and more attributes over fewer, as the starting point", () => {
    expect(joinOrder(compile(`A ?a; link:r B:?b. B ?b; attribute:x 1. C ?c; link:s ?b; entity:key "k".`).sql)[0]).to.equal("e2");
    expect(joinOrder(compile(`A ?a; attribute:y 2; link:r B:?b. B ?b; attribute:x 1; attribute:z 3.`).sql)[0]).to.equal("e1");
  });

  it("walks a generated pattern in the same order of labels however its statements and clauses are ordered", () => {
    const walk = (source: string) => {
      const compiled = compile(source);
      const aliasOf = new Map([...compiled.sql.matchAll(/(e\d+)\.id as c(\d+)/g)].map((m) => [m[1], compiled.labels[Number(m[2])]!.name]));
      return joinOrder(compiled.sql).map((a) => aliasOf.get(a!) ?? (a!.startsWith("l") ? "link" : a));
    };
    const reordered = patternModel.chain((pattern) =>
      fc.tuple(fc.constant(pattern), fc.shuffledSubarray(pattern.statements, { minLength: pattern.statements.length }), fc.boolean()),
    );
    fc.assert(
      fc.property(reordered, ([pattern, shuffled, reverse]) => {
        const statements = shuffled.map((s) => (reverse ? { ...s, clauses: [...s.clauses].reverse() } : s));
        expect(walk(printPattern({ ...pattern, statements }))).to.deep.equal(walk(printPattern(pattern)));
      }),
      { numRuns: 2000 },
    );
  });

  it("looks an entity joined by a value known from the rows before it up through an index with that value (issue 30)", () => {
    // The person first (its constant), ?o bound from its name, then the devices found through the
    // tenant-scoped attribute index with that value, not read in full and filtered.
    const joined = compile(`Device ?d; attribute:owner ?o. Person ?p; attribute:name ?o; attribute:city "C1".`).sql;
    expect(joined).to.contain(
      "(select e0.id, e0.key, e0.attributes, e0.tenant, e0.type from entities e0 where (graph_scoped_attributes(e0.tenant, e0.type, e0.attributes) @> " +
        "graph_scoped_attributes(?::text, ?::text, jsonb_build_object(?::text, v0.value)) or ",
    );
    // A key joined by a value: the (tenant, type, key) index.
    expect(compile(`A ?a; entity:key ?k. B ?b; entity:key ?k.`).sql).to.contain("e1.key = (to_jsonb(e0.key) #>> '{}')");
    // An entity whose id an entity placed before holds in an attribute: the primary key.
    expect(compile(`Meter ?m; attribute:serial "S1"; attribute:owner ?p. Person ?p.`).sql).to.match(/e1\.id = any\(array\(select t::uuid from \(select t from jsonb_array_elements_text\(/);
    // Not with a value bound at the same entity, nor with the entity's own id.
    expect(compile(`A ?a; attribute:p ?u; attribute:q ?u.`).sql).not.to.contain("jsonb_build_object(?::text, v0.value))");
    expect(compile(`A ?a; attribute:p ?a.`).sql).not.to.contain("any(array(");
  });

  it("never writes a value, an attribute name or a relation into the SQL text", () => {
    // Every name and value carries the marker "zq", which no generated SQL contains.
    const name = fc.stringMatching(/^[a-zA-Z0-9_]{0,10}$/).map((n) => `zq${n}`);
    const value = fc.string({ maxLength: 12 }).map((v) => `zq${v}`);
    fc.assert(
      fc.property(value, name, name, value, (literal, attribute, relation, param) => {
        const source = `T ?t; attribute:${attribute} ${JSON.stringify(literal).replace(/\$/g, "\\$")}; link:${relation} U:?u; entity:key \${p}.`;
        const compiled = compile(source);
        const bindings = compiled.bind({ tenant: "tenant-x", params: { p: param }, maxRows: 10 });
        expect(compiled.sql).not.to.contain("zq");
        expect(compiled.sql.split("?").length - 1).to.equal(bindings.length);
        expect(bindings).to.include.members([param, relation, JSON.stringify({ [attribute]: literal })]);
      }),
      { numRuns: 500 },
    );
  });

  it("keeps the gated texts of the 8 gates used last, least recently used dropped first", () => {
    const compiled = compile(EXAMPLE_QUERY);
    const gate = (n: number) => `exists (select 1 where ? = ${n})`;
    const first = compiled.gated(gate(0));
    expect(first.sql).to.contain(gate(0));
    expect(compiled.gated(gate(0)), "the same gate again: its texts are kept").to.equal(first);
    for (let n = 1; n < 8; n++) compiled.gated(gate(n));
    expect(compiled.gated(gate(0)), "eight gates fit").to.equal(first);
    const second = compiled.gated(gate(1));
    compiled.gated(gate(8));
    expect(compiled.gated(gate(0)), "a ninth gate drops the least recently used (gate 2), not gate 0").to.equal(first);
    expect(compiled.gated(gate(1))).to.equal(second);
    for (let n = 9; n < 17; n++) compiled.gated(gate(n));
    const again = compiled.gated(gate(0));
    expect(again, "eight other gates since: gate 0 was dropped and is built anew").to.not.equal(first);
    expect(again).to.deep.equal(first);
  });
});
