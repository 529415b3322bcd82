import fc from "fast-check";

/**
 * Random JSONata texts for property tests. `jsonataExpression` follows JSONata's grammar (so
 * nearly every text parses) and leans on what is hard to lex: strings with escapes and with
 * `${…}` or `result(?…)` inside, regular expressions with `/` in classes and escaped slashes,
 * comments, backtick names, keywords used as names, `$${…}` groupings, lambdas with signatures,
 * order-by, empty filters and transforms. `jsonataTokenSoup` strings tokens together at random.
 */

/** Between tokens: nothing, whitespace, or a comment holding what must not be read as code. */
const gap = fc.constantFrom("", " ", "  ", "\n", "\t", "\r\n", "/**/", " /* ${x} */ ", "/* result(?a) { b } / [ */", "/*/ ' \" ` */");
/** Around binary operators: at least one space, so that `/` next to `*` never makes a comment by accident. */
const spaced = gap.map((g) => (g === "" ? " " : ` ${g} `));

const stringPiece = fc.constantFrom(
  "a",
  " ",
  "${p}",
  "${x}",
  "result(?x) { id }",
  "/",
  "/*",
  "*/",
  "`",
  "\\\\",
  "\\/",
  "\\n",
  "\\t",
  "\\b",
  "\\f",
  "\\r",
  "\\u00e9",
  "\\u0027",
  "\\\"",
  "é",
  "{",
  "}",
);
const doubleQuoted = fc.array(fc.oneof(stringPiece, fc.constant("'")), { maxLength: 5 }).map((p) => `"${p.join("")}"`);
// JSONata has no \' escape: a single-quoted string spells ' as \u0027.
const singleQuoted = fc.array(stringPiece, { maxLength: 5 }).map((p) => `'${p.join("")}'`);
export const jsonataString = fc.oneof(doubleQuoted, singleQuoted);

const regexPiece = fc.constantFrom(
  "a",
  "\\/",
  "\\\\",
  "[/]",
  "[/*]",
  "[^\\]/]",
  "(?:x)",
  "(?<n>\\d)",
  "result(?:s)?:",
  "result(?<n>\\d)",
  "\\${x}",
  "x{1,2}",
  "\\d+",
  ".",
  '"',
  "'",
  "`",
  "\\(",
);
export const jsonataRegex = fc
  .tuple(fc.array(regexPiece, { minLength: 1, maxLength: 4 }), fc.constantFrom("", "i", "m", "im"))
  .map(([pieces, flags]) => `/${pieces.join("")}/${flags}`);

const name = fc.constantFrom("a", "b", "Account", "Order", "and", "or", "in", "`a b`", "`${x}`", "`result(?x) { y }`", "`a/b`", "é");
const variable = fc.constantFrom("$", "$$", "$x", "$f", "$__result", "$__param_p");
const number = fc.constantFrom("0", "1", "2.5", "1e3", "10", "0.25");
const value = fc.constantFrom("true", "false", "null");
const binary = fc.constantFrom("+", "-", "*", "/", "%", "=", "!=", "<", "<=", ">", ">=", "&", "and", "or", "in", "~>", "??", "?:");
const signature = fc.constantFrom("<n-n:n>", "<s?:s>", "<a<n>:n>", "<x-:x>", "<s-n?:s>");
const callee = fc.constantFrom("$string", "$count", "$contains", "$match", "$replace", "$split", "$exists", "$x");

const join = (...parts: string[]) => parts.join("");

const depth = { depthSize: "small", maxDepth: 5, depthIdentifier: fc.createDepthIdentifier(), withCrossShrink: true } as const;

export const jsonataExpression: fc.Arbitrary<string> = fc.letrec<{ expr: string; operand: string; path: string }>((tie) => {
  const expr = tie("expr");
  const operand = tie("operand");
  const pair = fc.tuple(fc.oneof(jsonataString, name), gap, expr).map(([k, g, v]) => join(k, g, ":", g, v));
  const pairs = fc.array(pair, { maxLength: 2 }).map((ps) => ps.join(", "));
  return {
    expr: fc.oneof(
      depth,
      operand,
      fc.tuple(operand, spaced, binary, spaced, operand).map((p) => join(...p)),
      fc.tuple(operand, gap, fc.constantFrom("?", "? "), expr, fc.constantFrom(" : ", ":"), expr).map((p) => join(...p)),
      fc.tuple(variable.filter((v) => v.length > 2), gap, fc.constant(":="), gap, expr).map((p) => join(...p)),
    ),
    path: fc.oneof(
      name,
      fc.tuple(name, gap, fc.constant("."), gap, name).map((p) => join(...p)),
      fc.tuple(name, fc.constantFrom("[]", "[0]", "[ ]"), gap, fc.constant("."), gap, name).map((p) => join(...p)),
      fc.tuple(name, gap, fc.constant("@$v"), gap, fc.constant("."), gap, name).map((p) => join(...p)),
      fc.tuple(name, gap, fc.constant("#$i"), gap, fc.constant("."), gap, name).map((p) => join(...p)),
    ),
    operand: fc.oneof(
      depth,
      jsonataString,
      jsonataRegex,
      tie("path"),
      variable,
      number,
      value,
      fc.tuple(fc.constant("-"), gap, number).map((p) => join(...p)),
      fc.tuple(fc.constant("("), gap, expr, gap, fc.constant(";"), gap, expr, gap, fc.constant(")")).map((p) => join(...p)),
      fc.tuple(fc.constant("("), gap, expr, gap, fc.constant(")")).map((p) => join(...p)),
      fc.tuple(fc.constant("["), gap, fc.array(expr, { maxLength: 3 }), gap, fc.constant("]")).map(([o, g1, items, g2, c]) => join(o, g1, items.join(", "), g2, c)),
      fc.constantFrom("[1..3]", "[0 .. 2]", "[]", "{}", "()", "*", "**"),
      fc.tuple(fc.constant("{"), gap, pairs, gap, fc.constant("}")).map((p) => join(...p)),
      fc.tuple(tie("path"), gap, fc.constant("{"), gap, pairs, gap, fc.constant("}")).map((p) => join(...p)),
      fc.tuple(fc.constantFrom("$$", "$"), fc.constant("{"), gap, pairs, gap, fc.constant("}")).map((p) => join(...p)),
      fc.tuple(tie("path"), gap, fc.constant("["), gap, expr, gap, fc.constant("]")).map((p) => join(...p)),
      fc.tuple(tie("path"), gap, fc.constant("^("), gap, fc.constantFrom("", "<", ">"), gap, tie("path"), gap, fc.constant(")")).map((p) => join(...p)),
      fc.tuple(callee, gap, fc.constant("("), gap, fc.array(fc.oneof(expr, fc.constant("?")), { maxLength: 3 }), gap, fc.constant(")")).map(
        ([f, g1, o, g2, args, g3, c]) => join(f, g1, o, g2, args.join(", "), g3, c),
      ),
      fc.tuple(fc.constantFrom("function", "λ"), fc.constant("($x, $y)"), gap, fc.option(signature, { nil: "" }), gap, fc.constant("{"), gap, expr, gap, fc.constant("}")).map(
        (p) => join(...p),
      ),
      fc.tuple(fc.constant("|"), gap, tie("path"), gap, fc.constant("|"), gap, fc.constant("{"), pairs, fc.constant("}"), gap, fc.constantFrom("|", ', ["a"]|')).map(
        (p) => join(...p),
      ),
    ),
  };
}).expr;

const soupToken = fc.oneof(
  jsonataString,
  jsonataRegex,
  name,
  variable,
  number,
  value,
  binary,
  signature,
  fc.constantFrom("(", ")", "[", "]", "{", "}", ",", ";", ":", "?", ".", "..", ":=", "^", "|", "@", "#", "-", "*", "**", "%", "/", "function", "λ", "${", "result"),
);
export const jsonataTokenSoup = fc.array(fc.tuple(soupToken, gap), { maxLength: 14 }).map((ts) => ts.map(([t, g]) => t + g).join(""));
