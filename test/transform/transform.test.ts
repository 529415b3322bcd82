import { expect } from "chai";
import { ACCESS_POINTS_OUTPUT, compileValid } from "../support/transforms.js";
import { ProblemError } from "../../src/errors.js";
import { rewriteTransform } from "../../src/transform/rewrite.js";
import { compileTransform, evaluateTransform } from "../../src/transform/transform.js";

const LIMITS = { timeoutMs: 800, maxDepth: 200, maxSequence: 100_000 };
const output = ACCESS_POINTS_OUTPUT;

const compile = (text: string) => compileValid(text, LIMITS);

async function failure(text: string): Promise<ProblemError> {
  try {
    await evaluateTransform(compile(text), { queryOutput: output, params: {} });
  } catch (err) {
    expect(err).to.be.instanceOf(ProblemError);
    return err as ProblemError;
  }
  expect.fail("the transform did not fail");
}

describe("transform language", () => {
  it("returns one object per entity from result(?label) with fields and aliases, missing fields null", async () => {
    const result = await evaluateTransform(compile('{ "points": result(?ap) { externalId, kind: accessPointType, "the id": id } }'), {
      queryOutput: output,
      params: {},
    });
    expect(result).to.deep.equal({
      points: [
        { externalId: "E1", kind: "GAS", "the id": "id-1" },
        { externalId: "E2", kind: null, "the id": "id-2" },
      ],
    });
  });

  it("is JSONata over the query output, with ${param} as values", async () => {
    const result = await evaluateTransform(compile('{ "count": $count(ap), "for": ${who}, "gas": ap[accessPointType = "GAS"].key }'), {
      queryOutput: output,
      params: { who: "u-7" },
    });
    expect(result).to.deep.equal({ count: 2, for: "u-7", gas: "k1" });
  });

  it("leaves result( and ${ inside strings and comments alone", () => {
    const rewritten = rewriteTransform('"result(?x) { a } ${p}" & /* result(?y) { b } ${q} */ \'${r}\'');
    expect(rewritten.params).to.deep.equal([]);
    expect(rewritten.results).to.deep.equal([]);
    expect(rewritten.source).to.equal('"result(?x) { a } ${p}" & /* result(?y) { b } ${q} */ \'${r}\'');
  });

  it("maps positions after a rewrite back to the text as written", () => {
    const text = "result(?ap) { id } & ${p} & bad(";
    const { problems } = compileTransform(text, LIMITS);
    expect(problems[0]).to.deep.include({ path: "transform", line: 1, column: 33 });
  });

  it("keeps a compiled transform unchanged between runs: two concurrent runs see their own parameters", async () => {
    const transform = compile("${p} & '-' & $count(ap)");
    const runs = await Promise.all(["a", "b", "c"].map((p) => evaluateTransform(transform, { queryOutput: output, params: { p } })));
    expect(runs).to.deep.equal(["a-2", "b-2", "c-2"]);
  });

  it("stops infinite recursion by the stack limit", async () => {
    const error = await failure("($f := function($x){ 1 + $f($x) }; $f(1))");
    expect(error.status).to.equal(422);
    expect(error.code).to.equal("TRANSFORM_FAILED");
    expect(error.message).to.match(/^the transform failed at line 1, column \d+: Stack overflow/);
  });

  it("stops a huge range by the sequence limit", async () => {
    const error = await failure("$sum([1..5000000])");
    expect(error.message).to.contain("maximum sequence length");
  });

  it("stops an endless tail-recursive loop within the time limit", async () => {
    const error = await failure("($loop := function($i){ $loop($i + 1) }; $loop(0))");
    expect(error.code).to.equal("TRANSFORM_FAILED");
    // Stopped by the 800 ms limit, as the message says (tests assert no timings).
    expect(error.message).to.match(/longer than 800 ms|Evaluation timeout after 800 milliseconds/);
  });

  it("reports a run-time error of JSONata with its position", async () => {
    const error = await failure('$number("not a number")');
    expect(error.message).to.match(/^the transform failed at line 1, column \d+: Unable to cast value to a number/);
    expect(error.errors?.[0]).to.deep.include({ path: "transform", line: 1, jsonataCode: "D3030" });
  });
});
