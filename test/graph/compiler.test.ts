import { expect } from "chai";
import fc from "fast-check";
import { EXAMPLE_QUERY } from "../../src/demo/seed.js";
import { compileQuery } from "../../src/graph/query/compiler.js";
import { parseQuery } from "../../src/graph/query/parser.js";

const compile = (source: string) => compileQuery(parseQuery(source));
/** The FROM items of the match statement, in the order they are written. */
const joinOrder = (sql: string) => [...sql.matchAll(/(?:from|join) (entities|links) (\w+)/g)].map((m) => m[2]);

describe("graph query compiler", () => {
  it("compiles the example into one statement whose placeholders match its bindings", () => {
    const compiled = compile(EXAMPLE_QUERY);
    const bindings = compiled.bind({ tenant: "acme", params: { tenantId: "acme", publicId: "AGR-1" }, maxRows: 100 });
    expect(compiled.sql.split("?").length - 1).to.equal(bindings.length);
    expect(compiled.sql.match(/\bwith m as\b/g)).to.have.length(1);
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
    expect(joinOrder(sql)).to.deep.equal(["e0", "l0", "e1", "e2", "l1", "l2", "e3", "l3", "e4", "l4", "e5", "l5", "e6", "e"]);
    expect(sql).to.contain("cross join lateral (select 1 from links l1 where");
    expect(sql).to.match(/join entities e2 on e2\.tenant = \? and e2\.type = \? and \(e2\.attributes @> \?::jsonb or e2\.attributes @> \?::jsonb\)/);
  });

  it("prefers a key over attributes, and more attributes over fewer, as the starting point", () => {
    expect(joinOrder(compile(`A ?a; link:r B:?b. B ?b; attribute:x 1. C ?c; link:s ?b; entity:key "k".`).sql)[0]).to.equal("e2");
    expect(joinOrder(compile(`A ?a; attribute:y 2; link:r B:?b. B ?b; attribute:x 1; attribute:z 3.`).sql)[0]).to.equal("e1");
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
});
