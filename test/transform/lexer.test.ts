import { expect } from "chai";
import fc from "fast-check";
import { tokenize } from "../../src/transform/lexer.js";
import { jsonataExpression, jsonataTokenSoup } from "../support/jsonata-arbitrary.js";
import { lexerDisagreement } from "../support/lexer-oracle.js";

/** Each token as `kind text`, the text as written. */
const tokens = (text: string) => {
  const { tokens: found, error } = tokenize(text);
  expect(error, error?.message).to.equal(undefined);
  return found.map((t) => `${t.kind} ${text.slice(t.start, t.end)}`);
};

const errorOf = (text: string) => {
  const { tokens: found, error } = tokenize(text);
  return { code: error?.code, start: error?.start, position: error?.position, message: error?.message, tokens: found.length };
};

describe("transform lexer", () => {
  describe("reads JSONata's tokens", () => {
    it("skips whitespace and comments, and reads names up to whitespace or an operator character", () => {
      expect(tokens(" a /* x */\t.b\n/**/ c\"d'e é$f")).to.deep.equal(["name a", "operator .", "name b", "name c\"d'e", "name é$f"]);
    });

    it("reads strings in both quotes with JSONata's escapes, and backtick names as they are", () => {
      const { tokens: found } = tokenize(String.raw`"a\"b\\\/\b\f\n\r\t\u00e9" 'it\u0027s "x"' ` + "`a ${x} \\`");
      expect(found.map((t) => [t.kind, t.value])).to.deep.equal([
        ["string", 'a"b\\/\b\f\n\r\té'],
        ["string", `it's "x"`],
        ["name", "a ${x} \\"],
      ]);
    });

    it("reads numbers as JSONata's number pattern does, a leading minus being an operator", () => {
      const { tokens: found } = tokenize("-1.5e3 0123 1..2 7x");
      expect(found.map((t) => [t.kind, t.value])).to.deep.equal([
        ["operator", "-"],
        ["number", 1500],
        ["number", 0],
        ["number", 123],
        ["number", 1],
        ["operator", ".."],
        ["number", 2],
        ["number", 7],
        ["name", "x"],
      ]);
    });

    it("reads variables, keywords, values and the two-character operators", () => {
      expect(tokens("$ $$ $x and or in true false null .. := != >= <= ** ~> ?: ?? ! ~")).to.deep.equal([
        "variable $",
        "variable $$",
        "variable $x",
        "operator and",
        "operator or",
        "operator in",
        "value true",
        "value false",
        "value null",
        "operator ..",
        "operator :=",
        "operator !=",
        "operator >=",
        "operator <=",
        "operator **",
        "operator ~>",
        "operator ?:",
        "operator ??",
        "operator !",
        "operator ~",
      ]);
    });
  });

  describe("tells a regular expression from division as JSONata's parser does", () => {
    it("divides after an operand and starts a regular expression where one is expected", () => {
      expect(tokens("a / b")).to.deep.equal(["name a", "operator /", "name b"]);
      expect(tokens("$f(/b/, /c/i)")).to.deep.equal(["variable $f", "operator (", "regex /b/", "operator ,", "regex /c/i", "operator )"]);
      expect(tokens("x ~> /a/m / 2")).to.deep.equal(["name x", "operator ~>", "regex /a/m", "operator /", "number 2"]);
      expect(tokens("c ? /a/ : /b/")).to.deep.equal(["name c", "operator ?", "regex /a/", "operator :", "regex /b/"]);
    });

    it("divides after a closing bracket and after and, or, in used as names", () => {
      expect(tokens("f(x)/2")).to.deep.equal(["name f", "operator (", "name x", "operator )", "operator /", "number 2"]);
      expect(tokens("a[0]/2")).to.deep.equal(["name a", "operator [", "number 0", "operator ]", "operator /", "number 2"]);
      expect(tokens("{}/2")).to.deep.equal(["operator {", "operator }", "operator /", "number 2"]);
      expect(tokens("a.and/2")).to.deep.equal(["name a", "operator .", "operator and", "operator /", "number 2"]);
    });

    it("divides right after a prefix bracket or minus, as JSONata does (so `(/a/)` is an error there too)", () => {
      expect(tokens("(/a/)")).to.deep.equal(["operator (", "operator /", "name a", "operator /", "operator )"]);
      expect(tokens("[/a/]")).to.deep.equal(["operator [", "operator /", "name a", "operator /", "operator ]"]);
      expect(tokens("-/a/")).to.deep.equal(["operator -", "operator /", "name a", "operator /"]);
    });

    it("starts a regular expression after an empty filter, an order-by, a function body and a transform", () => {
      expect(tokens("a[] /x/")).to.deep.equal(["name a", "operator [", "operator ]", "regex /x/"]);
      expect(tokens("a^(b) /x/")).to.deep.equal(["name a", "operator ^", "operator (", "name b", "operator )", "regex /x/"]);
      expect(tokens("function($x){$x} /x/").slice(-2)).to.deep.equal(["operator }", "regex /x/"]);
      expect(tokens("|a|{}| /x/").slice(-2)).to.deep.equal(["operator |", "regex /x/"]);
    });

    it("reads a function signature in prefix position, and a partial application's ? as a placeholder", () => {
      expect(tokens("function($x)</x/>{1}").slice(4, 7)).to.deep.equal(["operator <", "regex /x/", "operator >"]);
      expect(tokens("$f(?, /a/)")).to.deep.equal(["variable $f", "operator (", "operator ?", "operator ,", "regex /a/", "operator )"]);
    });

    it("ends a regular expression at the first unescaped / outside brackets, then reads its i and m flags", () => {
      expect(tokenize(String.raw`/[/*]/ & /a\/b\\/im & /(a/b)/ & /[\]/]/ & /a/g`).tokens.map((t) => t.value)).to.deep.equal([
        { pattern: "[/*]", flags: "" },
        "&",
        { pattern: String.raw`a\/b\\`, flags: "im" },
        "&",
        { pattern: "(a/b)", flags: "" },
        "&",
        { pattern: String.raw`[\]/]`, flags: "" },
        "&",
        { pattern: "a", flags: "" },
        "g",
      ]);
    });

    it("reads /* as a comment even where a regular expression could start", () => {
      expect(tokens("$f(/* /a/ */ /b/)")).to.deep.equal(["variable $f", "operator (", "regex /b/", "operator )"]);
    });
  });

  describe("stops where JSONata's tokenizer fails, with its code", () => {
    it("an unterminated comment at its start", () => {
      expect(errorOf("1 + /* x")).to.deep.equal({ code: "S0106", start: 4, position: 4, message: "comment has no closing */", tokens: 2 });
    });

    it("an unterminated string at its start, JSONata placing it past the end", () => {
      expect(errorOf('1 & "ab')).to.deep.equal({ code: "S0101", start: 4, position: 7, message: 'string has no closing "', tokens: 2 });
    });

    it("an unterminated regular expression at its start, JSONata placing it at the end", () => {
      expect(errorOf("$f(/a(/)")).to.deep.equal({ code: "S0302", start: 3, position: 8, message: "regular expression has no closing /", tokens: 2 });
    });

    it("an empty regular expression, a bad escape, a bad \\u, an unterminated backtick name, a number out of range", () => {
      expect(errorOf("$f(//)")).to.include({ code: "S0301", start: 3, position: 4 });
      expect(errorOf('"a\\qb"')).to.include({ code: "S0103", start: 0, position: 3 });
      expect(errorOf("'\\u12'")).to.include({ code: "S0104", start: 0, position: 2 });
      expect(errorOf("a.`b")).to.include({ code: "S0105", start: 2, position: 4 });
      expect(errorOf("1e400")).to.include({ code: "S0102", start: 0, position: 0 });
    });

    it("a pattern JavaScript refuses, which JSONata reports without a code", () => {
      const error = errorOf("$f(/a{2,1}/)");
      expect(error).to.include({ code: undefined, start: 3, position: 3, tokens: 2 });
      expect(error.message).to.match(/^Invalid regular expression/);
    });
  });

  describe("agrees with JSONata's own tokenizer, token by token and mode by mode", () => {
    it("on random expressions of JSONata's grammar", () => {
      fc.assert(
        fc.property(jsonataExpression, (text) => {
          expect(lexerDisagreement(text)).to.equal(undefined);
        }),
        { numRuns: 5000 },
      );
    });

    it("after an order-by closed where a term was expected (a case the random sequences found)", () => {
      for (const text of ["/a/^()a", "a^()/b/", "a^(b,)/c/"]) expect(lexerDisagreement(text), text).to.equal(undefined);
    });

    it("on random sequences of tokens, valid or not", () => {
      fc.assert(
        fc.property(jsonataTokenSoup, (text) => {
          expect(lexerDisagreement(text)).to.equal(undefined);
        }),
        { numRuns: 5000 },
      );
    });
  });
});
