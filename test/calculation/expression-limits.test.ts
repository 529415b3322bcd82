import { expect } from "chai";
import fc from "fast-check";
import { all, create } from "mathjs";
import { compileExpression, INTERNAL_VARIABLES } from "../../src/calculation/expression.js";
import { EXPRESSION_LIMIT_CEILINGS, expressionSizeProblem, nestingDepth } from "../../src/calculation/expression-size.js";
import { expressionText } from "../support/expressions.js";

const known = new Set(["a", "b", ...INTERNAL_VARIABLES]);
/** The configuration's defaults (EXPRESSION_MAX_LENGTH, EXPRESSION_MAX_DEPTH). */
const DEFAULTS = { maxLength: 1000, maxDepth: 50 };

describe("expression size limits", () => {
  it("counts nesting: groups, calls, unary, power and postfix chains, conditionals; not flat chains, strings or comments", () => {
    const cases: [string, number][] = [
      ["1 + 2 * 3 - 4 / a", 0],
      ["(((1)))", 3],
      ["abs(max(a, (b)))", 3],
      ["-(-(-1))", 5],
      ["- - - a", 3],
      ["-a * -b + -a", 1],
      ["1 ^ 2 ^ 3", 2],
      ["2 ^ -3", 2],
      ["a! + b!!", 2],
      ["a ? b : a ? 1 : 2", 2],
      ["max(a ? 1 : 2, a ? 3 : 4)", 2],
      ["f(1)(2)(3)", 1],
      ["[[1, 2], [3, 4]]", 2],
      ['"((((" + 1', 0],
      ["1 + 1 # ((((", 0],
      ["not not a", 2],
      ["1e-3 + 2.5e+4 - 0x1F", 0],
    ];
    for (const [text, depth] of cases) expect(nestingDepth(text).depth, text).to.equal(depth);
  });

  it("accepts an expression of exactly the maximum length and refuses one character more, naming the limit", () => {
    const longest = "1" + "+1".repeat((DEFAULTS.maxLength - 1) / 2);
    expect(longest).to.have.length(999);
    expect(expressionSizeProblem(longest + " ", DEFAULTS)).to.equal(undefined);
    expect(compileExpression(longest + " ", known, DEFAULTS).expression?.evaluate({})).to.equal(500);
    expect(compileExpression(longest + "+1", known, DEFAULTS).problems).to.deep.equal([
      { message: "the expression is 1001 characters long; at most 1000 are allowed (EXPRESSION_MAX_LENGTH)", column: 1001 },
    ]);
  });

  it("accepts the maximum depth and refuses one level more, naming the limit and the column", () => {
    const nested = (levels: number) => "(".repeat(levels) + "a" + ")".repeat(levels);
    expect(compileExpression(nested(50), known, DEFAULTS).expression?.evaluate({ a: 7 })).to.equal(7);
    expect(compileExpression(nested(51), known, DEFAULTS).problems).to.deep.equal([
      { message: "the expression nests deeper than 50 levels (parentheses, function calls, unary, power and conditional operators; EXPRESSION_MAX_DEPTH)", column: 51 },
    ]);
    expect(compileExpression("-".repeat(51) + "a", known, DEFAULTS).problems[0]?.column).to.equal(51);
  });

  it("refuses the 20,001-term expression that overflowed the stack, with a problem instead of a RangeError", () => {
    const text = Array(20_001).fill("1").join("+");
    expect(compileExpression(text, known, EXPRESSION_LIMIT_CEILINGS).problems.map((p) => p.message)).to.deep.equal([
      "the expression is 40001 characters long; at most 2500 are allowed (EXPRESSION_MAX_LENGTH)",
    ]);
  });

  it("parses, checks, compiles and evaluates whatever passes the ceilings, with half the stack already used", () => {
    const plain = create(all);
    fc.assert(
      fc.property(expressionText, (text) => {
        withStackUsed(0.5, () => {
          const { expression, problems } = compileExpression(text, known, EXPRESSION_LIMIT_CEILINGS);
          // The limits must be what refuses an expression, never the stack.
          for (const p of problems) expect(p.message).not.to.match(/nests too deeply to compile|call stack/);
          if (expression === undefined) return;
          const value = expression.evaluate({ a: 2, b: 3, index: 1 });
          expect(value === null || Number.isFinite(value)).to.equal(true);
          // Our evaluation turns any error into null: evaluate the same tree plainly to see none is a RangeError.
          try {
            plain.parse(text).compile().evaluate({ a: 2, b: 3, index: 1 });
          } catch (err) {
            expect(err).not.to.be.instanceOf(RangeError);
          }
        });
      }),
      { numRuns: 300 },
    );
  });
});

let deepestRecursion: number | undefined;

/** Runs `work` with about `share` of the stack already used, as a caller deeper in the stack would. */
function withStackUsed(share: number, work: () => void): void {
  if (deepestRecursion === undefined) {
    let depth = 0;
    const probe = (n: number): number => (depth = n) + probe(n + 1);
    try {
      probe(0);
    } catch {
      // the stack is full: `depth` frames fit
    }
    deepestRecursion = depth;
  }
  const descend = (n: number): number => {
    if (n === 0) {
      work();
      return 0;
    }
    return descend(n - 1) + 1;
  };
  descend(Math.floor(deepestRecursion * share));
}
