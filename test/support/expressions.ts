import fc from "fast-check";

/**
 * Expressions built by repeating a few shapes a random number of times, inside one another: flat
 * chains, parentheses, calls, unary, power and postfix chains, conditionals. Many land near the
 * ceilings, on either side.
 */
export const expressionText: fc.Arbitrary<string> = (() => {
  const atom = fc.constantFrom("1", "a", "2.5", "pi", "index", "(b)");
  // Few, around the depth ceiling, around the length ceiling (a chain of 1,250 terms is 2,499 characters).
  const times = fc.oneof(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 40, max: 150 }), fc.integer({ min: 1100, max: 1300 }), fc.integer({ min: 500, max: 3000 }));
  const operator = fc.constantFrom("+", "-", "*", "/", "^", " and ", " == ", "%");
  const layer = fc.tuple(fc.constantFrom("chain", "parens", "call", "unary", "power", "postfix", "conditional", "mixed"), times, operator);
  return fc.tuple(atom, fc.array(layer, { minLength: 1, maxLength: 3 })).map(([start, layers]) => {
    let text: string = start;
    for (const [shape, n, op] of layers) {
      if (text.length > 12_000) break;
      switch (shape) {
        case "chain":
          text = Array(Math.max(1, Math.floor(n / Math.max(1, text.length / 10)))).fill(text).join(op);
          break;
        case "parens":
          text = "(".repeat(n) + text + ")".repeat(n);
          break;
        case "call":
          text = "abs(".repeat(n) + text + ")".repeat(n);
          break;
        case "unary":
          text = "-".repeat(n) + text;
          break;
        case "power":
          text = Array(n).fill(text).join("^").slice(0, 12_000);
          break;
        case "postfix":
          text = text + "!".repeat(n);
          break;
        case "conditional":
          text = "a ? 1 : ".repeat(n) + text;
          break;
        case "mixed":
          text = "-(a + ".repeat(n) + text + ")".repeat(n);
          break;
      }
    }
    return text;
  });
})();
