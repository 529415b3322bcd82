import { expect } from "chai";
import fc from "fast-check";
import type { Query, Value } from "../../src/graph/query/ast.js";
import { compileQuery } from "../../src/graph/query/compiler.js";
import { QuerySyntaxError } from "../../src/graph/query/errors.js";
import { parseQuery } from "../../src/graph/query/parser.js";
import { EXAMPLE_QUERY } from "../../src/demo/seed.js";

function syntaxError(source: string): QuerySyntaxError {
  try {
    parseQuery(source);
  } catch (err) {
    expect(err).to.be.instanceOf(QuerySyntaxError);
    return err as QuerySyntaxError;
  }
  expect.fail(`parsed without an error: ${source}`);
}

describe("graph query parser", () => {
  it("parses the specification's example walk with positions", () => {
    const query = parseQuery(EXAMPLE_QUERY);
    expect(query.statements.map((s) => `${s.type} ?${s.label.name}`)).to.deep.equal([
      "Tenant ?tenant",
      "Agreement ?agreement",
      "AgreementProduct ?product",
      "Arrangement ?arrangement",
      "AccessPointRelation ?relation",
    ]);
    const tenant = query.statements[0]!;
    expect(tenant.pos).to.deep.equal({ line: 2, column: 1, offset: 73 });
    expect(tenant.clauses[0]).to.deep.equal({
      kind: "key",
      value: { kind: "param", name: "tenantId", pos: { line: 2, column: 28, offset: 100 } },
      pos: { line: 2, column: 17, offset: 89 },
    });
    expect(tenant.clauses[1]).to.deep.include({ kind: "link", relation: "hasIndexSet" });
    expect((tenant.clauses[1] as { target: unknown }).target).to.deep.equal({
      type: "IndexSet",
      label: { name: "indexSet", pos: { line: 2, column: 67, offset: 139 } },
    });
  });

  it("reads every kind of value", () => {
    const source = `T ?x; attribute:s "a\\"b\\\\c\\n\\u00e9\\$"; attribute:n -12.5e2; attribute:t true; attribute:f false;
      attribute:p \${p1}; attribute:tpl "EAN-\${id}-x"; attribute:l ?y.`;
    const query = parseQuery(source);
    const values = query.statements[0]!.clauses.map((c) => (c as { value: Value }).value);
    expect(values.map((v) => v.kind)).to.deep.equal(["string", "number", "boolean", "boolean", "param", "string", "label"]);
    expect(values[0]).to.deep.include({ parts: ['a"b\\c\né$'] });
    expect(values[1]).to.deep.include({ value: -1250 });
    expect(values[2]).to.deep.include({ value: true });
    expect(values[3]).to.deep.include({ value: false });
    expect(values[4]).to.deep.include({ name: "p1" });
    expect((values[5] as { parts: unknown[] }).parts).to.deep.equal(["EAN-", { param: "id", pos: { line: 2, column: 45, offset: source.indexOf("${id}") } }, "-x"]);
    expect(values[6]).to.deep.include({ name: "y" });
  });

  it("skips comments and free white space", () => {
    const query = parseQuery("# leading\n  T   ?x   # after\n ;\n entity:key\t\"k\" # x\n .  # end");
    expect(query.statements).to.have.length(1);
    expect(query.statements[0]!.clauses[0]).to.deep.include({ kind: "key" });
  });

  const cases: [string, number, number, string, string][] = [
    ["", 1, 1, "end of input", "a statement: an entity type followed by ?label"],
    ["Tenant ?t", 1, 10, "end of input", '";" before the next clause or "." to end the statement'],
    ["Tenant ?t;\n  entity:kex 1.", 2, 10, '"kex"', '"key" after entity:'],
    ["T ?t; attribute:x 1a.", 1, 20, '"a"', '";" or "." after number 1'],
    ["T ?t; link:r T:x.", 1, 16, '"x"', "a label (?name) after the target type"],
    ["T ?t; link:r 5.", 1, 14, "number 5", "a link target: Type:?label or ?label"],
    ["T ?t; attribute:x ${}.", 1, 21, '"}"', "a parameter name after ${"],
    ["T ?t; attribute:x ${a.", 1, 22, '"."', '"}" to close ${a'],
    ["T ?t; attribute:x nope.", 1, 19, '"nope"', 'a value: "string", number, true, false, ${param} or ?label'],
    ["T ?t; colour:x 1.", 1, 7, '"colour"', "a clause: entity:key, attribute:<name> or link:<relation>"],
    ["T ?t. %", 1, 7, '"%"', "a statement, a clause or a value"],
    ['T ?t; attribute:x "\\q".', 1, 21, '"q"', 'an escape: \\" \\\\ \\/ \\b \\f \\n \\r \\t \\$ or \\uXXXX'],
  ];
  for (const [source, line, column, found, expected] of cases) {
    it(`names line ${line}, column ${column}, ${found} and what was expected for ${JSON.stringify(source)}`, () => {
      const error = syntaxError(source);
      expect(error.errors?.[0]).to.deep.include({ line, column, found, expected });
      expect(error.status).to.equal(400);
      expect(error.code).to.equal("INVALID_DEFINITION");
      expect(error.message).to.contain(`line ${line}, column ${column}`);
    });
  }

  it("reports an unterminated string at the end of its line", () => {
    const error = syntaxError('T ?t; attribute:x "abc\n.');
    expect(error.errors?.[0]).to.deep.include({ line: 1, column: 23, found: "end of line" });
    expect(error.message).to.contain("unterminated string (it starts at line 1, column 19)");
  });

  it("refuses a label of two types and an untyped link to an unbound label, with positions", () => {
    const conflict = (() => {
      try {
        compileQuery(parseQuery("Agreement ?a.\nX ?x; link:r Product:?a."));
      } catch (err) {
        return err as QuerySyntaxError;
      }
      return undefined;
    })();
    expect(conflict?.errors?.[0]).to.deep.include({ line: 2, column: 22 });
    expect(conflict?.message).to.contain("label ?a is of type Agreement (line 1, column 11) and cannot also be of type Product");
    expect(() => compileQuery(parseQuery("X ?x; link:r ?ghost."))).to.throw(QuerySyntaxError, /label \?ghost is not bound to an entity/);
  });
});

/** Writes a query back as text; the round trip through the parser must give the same AST shape. */
function print(query: Query): string {
  const value = (v: Value): string => {
    switch (v.kind) {
      case "string":
        return `"${v.parts.map((p) => (typeof p === "string" ? JSON.stringify(p).slice(1, -1).replace(/\$/g, "\\$") : `\${${p.param}}`)).join("")}"`;
      case "number":
        return String(v.value);
      case "boolean":
        return String(v.value);
      case "param":
        return `\${${v.name}}`;
      case "label":
        return `?${v.name}`;
    }
  };
  return query.statements
    .map(
      (s) =>
        `${s.type} ?${s.label.name}` +
        s.clauses
          .map((c) =>
            c.kind === "key"
              ? `; entity:key ${value(c.value)}`
              : c.kind === "attribute"
                ? `; attribute:${c.name} ${value(c.value)}`
                : `; link:${c.relation} ${c.target.type === undefined ? "" : `${c.target.type}:`}?${c.target.label.name}`,
          )
          .join("") +
        ".",
    )
    .join("\n");
}

function stripPositions(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripPositions);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).filter(([k]) => k !== "pos").map(([k, v]) => [k, stripPositions(v)]));
  }
  return value;
}

describe("graph query parser under fuzzing", function () {
  this.timeout(120_000);
  const name = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,8}$/);
  const valueArb: fc.Arbitrary<Value> = fc.oneof(
    fc.array(fc.oneof(fc.string({ unit: "grapheme", maxLength: 6 }), name.map((param) => ({ param }))), { minLength: 1, maxLength: 3 }).map(
      (parts) => ({ kind: "string" as const, parts: mergeText(parts) as Value extends { parts: infer P } ? P : never, pos: undefined as never }),
    ),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => ({ kind: "number" as const, value: Object.is(value, -0) ? 0 : value, pos: undefined as never })),
    fc.boolean().map((value) => ({ kind: "boolean" as const, value, pos: undefined as never })),
    name.map((n) => ({ kind: "param" as const, name: n, pos: undefined as never })),
    name.map((n) => ({ kind: "label" as const, name: n, pos: undefined as never })),
  );
  const clauseArb = fc.oneof(
    valueArb.map((value) => ({ kind: "key" as const, value })),
    fc.record({ name, value: valueArb }).map(({ name: n, value }) => ({ kind: "attribute" as const, name: n, value })),
    fc.record({ relation: name, type: fc.option(name, { nil: undefined }), label: name }).map(({ relation, type, label }) => ({
      kind: "link" as const,
      relation,
      target: { type, label: { name: label } },
    })),
  );
  const queryArb = fc
    .array(fc.record({ type: name, label: name, clauses: fc.array(clauseArb, { maxLength: 4 }) }), { minLength: 1, maxLength: 4 })
    .map((statements) => ({ statements: statements.map((s) => ({ type: s.type, label: { name: s.label }, clauses: s.clauses })) }) as unknown as Query);

  it("parses every printed valid query back to the same tree", () => {
    fc.assert(
      fc.property(queryArb, (query) => {
        expect(stripPositions(parseQuery(print(query)))).to.deep.equal(stripPositions(query));
      }),
      { numRuns: 3000 },
    );
  });

  const onlySyntaxErrors = (source: string) => {
    try {
      const query = parseQuery(source);
      compileQuery(query);
    } catch (err) {
      if (!(err instanceof QuerySyntaxError)) throw err;
      const detail = err.errors?.[0];
      if (detail === undefined || !(detail.line! >= 1) || !(detail.column! >= 1)) throw new Error(`no position for ${JSON.stringify(source)}`, { cause: err });
      if (typeof detail.found !== "string" || typeof detail.expected !== "string") throw new Error("found/expected missing", { cause: err });
    }
  };

  it("throws nothing but a positioned syntax error for random text", () => {
    fc.assert(fc.property(fc.string({ unit: "binary", maxLength: 200 }), onlySyntaxErrors), { numRuns: 5000 });
  });

  it("throws nothing but a positioned syntax error for mutated valid queries", () => {
    const alphabet = ["?", ".", ";", ":", '"', "$", "{", "}", "#", "\n", "\\", "-", "0", "9", "e", "a", "Z", " ", "\u00e9", "\ud83d\ude00", "u"];
    const mutation = fc.record({
      at: fc.nat(),
      kind: fc.constantFrom("insert", "delete", "replace"),
      text: fc.array(fc.constantFrom(...alphabet), { minLength: 1, maxLength: 3 }).map((a) => a.join("")),
    });
    fc.assert(
      fc.property(fc.oneof(queryArb.map(print), fc.constant(EXAMPLE_QUERY)), fc.array(mutation, { minLength: 1, maxLength: 5 }), (source, mutations) => {
        let text = source;
        for (const m of mutations) {
          const at = m.at % (text.length + 1);
          text = m.kind === "insert" ? text.slice(0, at) + m.text + text.slice(at) : m.kind === "delete" ? text.slice(0, at) + text.slice(at + m.text.length) : text.slice(0, at) + m.text + text.slice(at + 1);
        }
        onlySyntaxErrors(text);
      }),
      { numRuns: 5000 },
    );
  });
});

function mergeText(parts: (string | { param: string })[]): (string | { param: string })[] {
  const merged: (string | { param: string })[] = [];
  for (const part of parts) {
    const last = merged[merged.length - 1];
    if (typeof part === "string" && typeof last === "string") merged[merged.length - 1] = last + part;
    else if (part !== "") merged.push(part);
  }
  return merged.length === 0 ? [""] : merged;
}
