import { expect } from "chai";
import fc from "fast-check";
import jsonata from "jsonata";
import { ProblemError, type ProblemDetail } from "../../src/errors.js";
import { planRewrite, rewriteTransform } from "../../src/transform/rewrite.js";
import { compileTransform, evaluateTransform } from "../../src/transform/transform.js";
import { jsonataExpression } from "../support/jsonata-arbitrary.js";

const LIMITS = { timeoutMs: 800, maxDepth: 200, maxSequence: 100_000 };
const output = {
  ap: [
    { id: "id-1", type: "AccessPoint", key: "k1", externalId: "E1", accessPointType: "GAS" },
    { id: "id-2", type: "AccessPoint", key: "k2", externalId: "E2" },
  ],
};

async function evaluate(text: string, params: Record<string, unknown> = {}, queryOutput: Record<string, unknown[]> = output): Promise<unknown> {
  const { transform, problems } = compileTransform(text, LIMITS);
  expect(problems).to.deep.equal([]);
  return evaluateTransform(transform!, { queryOutput, params });
}

const problemsOf = (text: string): ProblemDetail[] => compileTransform(text, LIMITS).problems;

describe("transform rewrite", () => {
  it("points an unclosed string, name, comment or regex at where it opens, not at the end of the text", () => {
    const cases: [string, string, number, number][] = [
      ['{\n  "a": 1,\n  "b": "open\n}', "S0101", 3, 8],
      ["{\n  \"a\": `open\n}", "S0105", 2, 8],
      ["1 +\n /* no end\n 2", "S0106", 2, 2],
      ['$match("x",\n  /open)', "S0302", 2, 3],
    ];
    for (const [text, code, line, column] of cases) {
      const { problems } = compileTransform(text, { timeoutMs: 0, maxDepth: 100, maxSequence: 1000 });
      expect(problems, text).to.have.length(1);
      expect(problems[0], text).to.include({ jsonataCode: code, line, column });
    }
  });

  describe("never reads the extension inside a regular expression", () => {
    it("leaves ${p} in a string after a regular expression holding a quote as the string's text", async () => {
      const text = '[$contains("a\\"b", /"/), "literal ${p}"]';
      expect(rewriteTransform(text).source).to.equal(text);
      expect(await evaluate(text, { p: "x" })).to.deep.equal([true, "literal ${p}"]);
    });

    it("leaves ${x} inside a regular expression to the regular expression", async () => {
      expect(rewriteTransform('$contains("a${x}b", /\\${x}/)').params).to.deep.equal([]);
      expect(await evaluate('$contains("a${x}b", /\\${x}/)')).to.equal(true);
    });

    it("reads /* inside a character class as part of the pattern, not as a comment", async () => {
      expect(await evaluate('[$contains("a/b", /[/*]/), ${p}]', { p: "v" })).to.deep.equal([true, "v"]);
    });

    it("leaves result(?:…) and result(?<name>…) inside a regular expression to the regular expression", async () => {
      const text = '[$contains("results:", /result(?:s)?:/), $match("result7", /result(?<n>\\d)/).groups]';
      expect(rewriteTransform(text).results).to.deep.equal([]);
      expect(await evaluate(text)).to.deep.equal([true, "7"]);
    });

    it("tells a regular expression from division next to a parameter", async () => {
      expect(await evaluate("${p} / 2 / ${q}", { p: 8, q: 2 })).to.equal(2);
      expect(await evaluate('[$match(${p}, /\\d+/).match, "/" & ${p} & "/"]', { p: "a12" })).to.deep.equal(["12", "/a12/"]);
    });
  });

  describe("reads ${name} only where JSONata has no meaning for it", () => {
    it("keeps $ followed by an object constructor as JSONata's grouping: ${id: …}, ${\"n\": …}, $${…}, ${}", async () => {
      for (const text of ["ap.${id: key}", '${"n": $count(ap)}', '$${"n": $count(ap)}', "$${id:{'label':label,'value':value}}", '{"a": ${}}']) {
        const rewritten = rewriteTransform(text);
        expect(rewritten.source, text).to.equal(text);
        expect(rewritten.problems, text).to.deep.equal([]);
      }
      expect(await evaluate("ap.${id: key}")).to.deep.equal({ "id-1": "k1", "id-2": "k2" });
      expect(await evaluate('${"n": $count(ap)}')).to.deep.equal({ n: 2 });
      expect(await evaluate('$${"n": $count(ap)}')).to.deep.equal({ n: 2 });
      expect(await evaluate("$${id:{'label':label,'value':value}}")).to.deep.equal({});
    });

    it("takes spaces and comments around the name", async () => {
      expect(await evaluate("[${ p }, ${/* who */p\n}]", { p: 1 })).to.deep.equal([1, 1]);
    });

    it("leaves ${x} in a backtick name to the name", async () => {
      expect(rewriteTransform("ap.`${x}`").params).to.deep.equal([]);
      expect(await evaluate("ap.`${x}`", {}, { ap: [{ "${x}": "as named" }] })).to.equal("as named");
    });

    it("refuses ${…} around one token that is not a parameter name, at the $", () => {
      expect(problemsOf("1 +\n ${'p'}")[0]).to.deep.equal({
        path: "transform",
        message: "expected ${name} with a parameter name made of letters, digits and _",
        line: 2,
        column: 2,
      });
    });
  });

  describe("reads a result() field list as tokens", () => {
    it("takes comments between fields, single- and double-quoted aliases with JSONata's escapes, and backtick names", async () => {
      const text = "result(?ap) { /* the key */ key, 'Full Name': externalId, \"say \\\"hi\\\"\": id, `back tick`: key, '\\u00e9': type /* end */ }";
      expect(await evaluate(text)).to.deep.equal([
        { key: "k1", "Full Name": "E1", 'say "hi"': "id-1", "back tick": "k1", é: "AccessPoint" },
        { key: "k2", "Full Name": "E2", 'say "hi"': "id-2", "back tick": "k2", é: "AccessPoint" },
      ]);
    });

    it("rewrites a result() inside a function", async () => {
      expect(await evaluate("($points := function($kind){ result(?ap) { id, kind: accessPointType }[kind = $kind] }; $points('GAS'))")).to.deep.equal({
        id: "id-1",
        kind: "GAS",
      });
    });

    it("leaves JSONata's partial application result(?, …) as it is", () => {
      for (const text of ["result(?)", "result(?, 1)"]) expect(rewriteTransform(text).source).to.equal(text);
    });

    it("reports an alias given twice, at the second", () => {
      expect(problemsOf("result(?ap) {\n  id, 'id': key }")).to.deep.equal([
        { path: "transform", message: 'field "id" appears twice in result(?ap)', line: 2, column: 7 },
      ]);
    });

    it("reports a malformed result(? with line and column, before JSONata's own error", () => {
      expect(problemsOf('{\n  "a": result(?1) { id }\n}')[0]).to.deep.equal({
        path: "transform",
        message: "expected a label name after result(?",
        line: 2,
        column: 16,
      });
      expect(problemsOf("result(?ap\n  { id }")[0]).to.deep.include({ message: 'expected ")" after result(?ap', line: 2, column: 3 });
      expect(problemsOf("result(?ap) { id: 'x' }")[0]).to.deep.include({ message: 'expected the entity field after "id:"', line: 1, column: 19 });
      expect(problemsOf("result(?ap) { id key }")[0]).to.deep.include({ message: 'expected "," or "}" after field "id"', line: 1, column: 18 });
      expect(problemsOf("result(?ap) { id,")[0]).to.deep.include({
        message: 'expected a field name, or "}" to end result(?ap) { … }, but the text ends',
        line: 1,
        column: 18,
      });
    });
  });

  describe("reports a malformed result(?label) { … } once, not JSONata's error about the same text again", () => {
    it("one extra comma is one problem, at the comma; the label is not underlined", () => {
      expect(problemsOf('{\n  "points": result(?accessPoint) { externalId,, publicId }\n}')).to.deep.equal([
        { path: "transform", message: 'expected a field name, or "}" to end result(?accessPoint) { … }', line: 2, column: 47 },
      ]);
    });

    it("still reports JSONata's own error before the malformed construct", () => {
      const problems = problemsOf('{ "a": 1 +, "points": result(?ap) { id,, key } }');
      expect(problems).to.have.length(2);
      expect(problems[1]).to.deep.include({ line: 1, column: 11 });
    });
  });

  describe("leaves an unterminated string, comment or regular expression to JSONata, at its place in the text as written", () => {
    it("a string: at its opening quote (JSONata itself points past the end of the text)", () => {
      expect(problemsOf('${p} & "abc\n& 1')).to.deep.equal([
        { path: "transform", message: "String literal must be terminated by a matching quote", line: 1, column: 8, jsonataCode: "S0101" },
      ]);
    });

    it("a comment: at its start, after a rewritten parameter", () => {
      expect(problemsOf("${p} & /* abc")).to.deep.equal([
        { path: "transform", message: "Comment has no closing tag", line: 1, column: 8, jsonataCode: "S0106" },
      ]);
    });

    it("a regular expression: at its opening slash", () => {
      expect(problemsOf("$match(${p}, /ab")).to.deep.equal([
        { path: "transform", message: "No terminating / in regular expression", line: 1, column: 14, jsonataCode: "S0302" },
      ]);
    });

    it("but reports one inside result() itself, where it starts, as JSONata stops earlier", () => {
      expect(problemsOf('result(?ap) { "abc }')[0]).to.deep.equal({ path: "transform", message: 'string has no closing "', line: 1, column: 15 });
    });
  });

  describe("gives the extension names no name of the text can be", () => {
    it("lets a transform bind $__result and $__param_p of its own", async () => {
      expect(await evaluate("($__result := 1; result(?ap) { id })")).to.deep.equal([{ id: "id-1" }, { id: "id-2" }]);
      expect(await evaluate('($__param_p := "mine"; [$__param_p, ${p}])', { p: "given" })).to.deep.equal(["mine", "given"]);
    });

    it("tags the names with the first number neither __result<n> nor __param<n> occurs with", () => {
      expect(rewriteTransform("${p}").source).to.equal("$__param_p");
      const names = rewriteTransform("$__result & $__result1 & $__param2").names;
      expect([names.result, names.param("p")]).to.deep.equal(["__result3", "__param3_p"]);
    });

    it("never gives a name that occurs in the text", () => {
      fc.assert(
        fc.property(jsonataExpression, fc.constantFrom("p", "x", "a"), (text, param) => {
          const { names } = rewriteTransform(text);
          expect(text.includes(names.result) || text.includes(names.param(param))).to.equal(false);
        }),
        { numRuns: 1000 },
      );
    });
  });

  describe("leaves plain JSONata exactly as it is", () => {
    it("maps every offset of a text without the extension to itself", () => {
      const text = '$contains("a${x}", /result(?:s)/) /* ${y} */';
      const rewritten = rewriteTransform(text);
      expect(rewritten.source).to.equal(text);
      expect([0, 10, 20, text.length].map((o) => rewritten.originalOffset(o))).to.deep.equal([0, 10, 20, text.length]);
    });

    it("on random JSONata expressions: the same text, evaluated to the same value or the same error", async () => {
      const input = { a: [{ b: "x/y", Order: [1, 2] }, { b: "y" }], Account: [{ Order: [{ a: "a/b" }] }], and: [true], in: [3] };
      // A function value (a lambda holds its environment, which holds it) compares as a mark.
      const plainValue = (_key: string, value: unknown) =>
        typeof value === "function" || (typeof value === "object" && value !== null && "_jsonata_lambda" in value) ? "<function>" : value;
      const outcome = (run: () => Promise<unknown>) =>
        run().then(
          (value) => `value ${JSON.stringify(value, plainValue)}`,
          (err: unknown) => {
            const cause = err instanceof ProblemError ? err.cause : err;
            const { code, message } = cause as { code?: string; message?: string };
            return `error ${code ?? message}`;
          },
        );
      await fc.assert(
        fc.asyncProperty(jsonataExpression, async (text) => {
          let expression: jsonata.Expression;
          try {
            expression = jsonata(text);
          } catch {
            fc.pre(false); // not JSONata: nothing to keep
            return;
          }
          const rewritten = rewriteTransform(text);
          expect(rewritten.source).to.equal(text);
          expect(rewritten.problems).to.deep.equal([]);
          const plain = await outcome(() => expression.evaluate(input));
          const ours = await outcome(() => evaluate(text, {}, input));
          expect(ours).to.equal(plain);
        }),
        { numRuns: 500 },
      );
    });
  });

  describe("plan", () => {
    it("names each use of the extension and the span of text it replaces, and nothing else", () => {
      const text = '/* ${no} */ [${p}, "${q}", result(?ap) { id, "Full Name": name }, /${r}/]';
      const plan = planRewrite(text);
      expect(plan.edits.map((e) => ({ kind: e.kind, text: text.slice(e.origStart, e.origEnd) }))).to.deep.equal([
        { kind: "param", text: "${p}" },
        { kind: "result", text: 'result(?ap) { id, "Full Name": name }' },
      ]);
      expect(plan.params.map((p) => p.name)).to.deep.equal(["p"]);
      expect(plan.results.map((r) => ({ label: r.label, fields: r.fields.map((f) => [f.alias, f.field]) }))).to.deep.equal([
        { label: "ap", fields: [["id", "id"], ["Full Name", "name"]] },
      ]);
      expect(plan.problems).to.deep.equal([]);
    });

    it("has no edits for plain JSONata, so the text is passed as written", () => {
      fc.assert(
        fc.property(jsonataExpression, (text) => {
          const plan = planRewrite(text);
          if (plan.edits.length === 0) expect(rewriteTransform(text).source).to.equal(text);
          for (const edit of plan.edits) expect(text.slice(edit.origStart, edit.origEnd)).to.match(edit.kind === "param" ? /^\$\{/ : /^result\s*\(/);
        }),
        { numRuns: 500 },
      );
    });
  });
});
