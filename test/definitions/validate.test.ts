import { expect } from "chai";
import type { ApiDefinitionInput } from "../../src/definitions/api-definition.js";
import { checkDefinition } from "../../src/definitions/validate.js";
import { EXAMPLE_DEFINITION } from "../../src/demo/seed.js";

const LIMITS = { timeoutMs: 1000, maxDepth: 200, maxSequence: 10_000 };
const problems = (input: Partial<ApiDefinitionInput>) =>
  checkDefinition({ externalId: "x", query: "T ?t.", ...input }, LIMITS).problems.map((p) => ({ ...p }));

describe("API definition validation", () => {
  it("accepts the specification's example definition", () => {
    const { compiled, problems: found } = checkDefinition(EXAMPLE_DEFINITION, LIMITS);
    expect(found).to.deep.equal([]);
    expect([...compiled!.declared]).to.have.members(["publicId", "tenantId"]);
    expect(compiled!.transform?.results.map((r) => r.label)).to.deep.equal(["accessPoint"]);
  });

  it("names a ${variable} of the query that is not declared, with its position", () => {
    expect(problems({ query: "T ?t;\n  entity:key ${code}." })).to.deep.equal([
      { path: "query", message: "${code} is used but not declared in data.queryParameters", line: 2, column: 14 },
    ]);
  });

  it("names a ${variable} of the transform that is not declared, with its position", () => {
    expect(problems({ transform: '{\n  "x": ${secret}\n}' })).to.deep.equal([
      { path: "transform", message: "${secret} is used but not declared in data.queryParameters", line: 2, column: 8 },
    ]);
  });

  it("refuses userId and tenantId used without being declared, saying how to declare them", () => {
    const found = problems({ query: 'T ?t; entity:key ${tenantId}; attribute:owner ${userId}.' });
    expect(found.map((p) => p.message)).to.deep.equal([
      '${tenantId} is used but not declared: add { "name": "tenantId", "type": "string" } to data.queryParameters',
      '${userId} is used but not declared: add { "name": "userId", "type": "string" } to data.queryParameters',
    ]);
  });

  it("names a declared parameter that nothing uses", () => {
    expect(problems({ data: { queryParameters: [{ name: "unused", type: "string" }] } })).to.deep.equal([
      { path: "data.queryParameters[0]", message: 'parameter "unused" is declared but used in neither the query nor the transform' },
    ]);
  });

  it("counts a parameter used only in the transform as used", () => {
    expect(problems({ data: { queryParameters: [{ name: "p" }] }, transform: "${p}" })).to.deep.equal([]);
  });

  it("reports a query that does not parse, with line and column", () => {
    const [problem] = problems({ query: "T ?t;\nentity:key." });
    expect(problem).to.deep.include({ path: "query", line: 2, column: 11, found: '"."' });
  });

  it("reports a transform that does not parse, with line and column in the text as written", () => {
    const [problem] = problems({ transform: '{\n  "a": result(?t) { key },\n  "b": foo(\n}' });
    expect(problem).to.deep.include({ path: "transform", line: 4, column: 1 });
    expect(problem?.message).to.equal('The symbol "}" cannot be used as a unary operator');
  });

  it("refuses result() of a label the query does not bind", () => {
    expect(problems({ transform: "result(?nope) { id }" })).to.deep.equal([
      { path: "transform", message: "result(?nope) names a label the query does not bind", line: 1, column: 1 },
    ]);
  });

  it("lists every problem at once", () => {
    const found = problems({
      query: "T ?t; entity:key ${a}.",
      transform: "${b} & result(?zz) { id }",
      data: { queryParameters: [{ name: "c" }, { name: "c" }, { name: "1bad" }] },
    });
    expect(found.map((p) => p.path)).to.deep.equal([
      "data.queryParameters[1].name",
      "data.queryParameters[2].name",
      "query",
      "transform",
      "transform",
      "data.queryParameters[0]",
      "data.queryParameters[1]",
    ]);
  });

  it("treats an empty or blank transform as no transform", () => {
    for (const transform of [undefined, "", "  \n\t "]) {
      const { compiled } = checkDefinition({ externalId: "x", query: "T ?t.", transform }, LIMITS);
      expect(compiled?.transform).to.equal(undefined);
    }
  });
});
