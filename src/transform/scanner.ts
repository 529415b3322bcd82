/**
 * Reads text exactly as JSONata's tokenizer does (jsonata 2.2, `tokenizer`/`next` in its parser):
 * the same whitespace, comments, strings and escapes, numbers, names, variables, operators and
 * regular expressions, failing where it fails and with its error codes. Whether a `/` starts a
 * regular expression is not decided here: the caller says (see parser-mode.ts).
 */

import { errorText } from "../errors.js";

interface TokenSpan {
  /** Offset of the token's first character. */
  start: number;
  /** Offset just past the token (JSONata's `position` of a token). */
  end: number;
  /**
   * Whether the token was read where JSONata's parser reads a `/` as the start of a regular
   * expression rather than as division.
   */
  regexAllowed: boolean;
}

/** Token kinds are JSONata's token types. */
export type Token = TokenSpan &
  (
    | { kind: "name"; value: string; /** Written in backticks. */ quoted: boolean }
    | { kind: "variable"; /** Without the `$`: "" for `$`, "$" for `$$`. */ value: string }
    | { kind: "operator"; value: string }
    | { kind: "string"; /** With the escapes resolved. */ value: string }
    | { kind: "number"; value: number }
    | { kind: "value"; value: boolean | null }
    | { kind: "regex"; value: { pattern: string; /** The `i` and `m` written after it. */ flags: string } }
  );

/** A text JSONata's tokenizer refuses. */
export class LexicalError extends Error {
  constructor(
    message: string,
    /** JSONata's error code; none for a pattern JavaScript refuses (JSONata lets that SyntaxError through). */
    readonly code: string | undefined,
    /** Where the faulty token starts: what a reader looks for. */
    readonly start: number,
    /** Where JSONata reports it (for an unterminated string or regex: past the end of the text). */
    readonly position: number,
  ) {
    super(message);
    this.name = "LexicalError";
  }
}

const WHITESPACE = " \t\n\r\v";
/** JSONata's single-character operators; they (and whitespace) also end a name. */
const OPERATOR_CHARS = ".[]{}(),@#;:?+-*/%|=<>^&!~";
const TWO_CHAR_OPERATORS = ["..", ":=", "!=", ">=", "<=", "**", "~>", "?:", "??"];
const ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
const NUMBER = /-?(0|([1-9][0-9]*))(\.[0-9]+)?([Ee][-+]?[0-9]+)?/y;

export const isWhitespace = (ch: string) => ch !== "" && WHITESPACE.includes(ch);
const endsName = (ch: string) => isWhitespace(ch) || (ch !== "" && OPERATOR_CHARS.includes(ch));

/** Offset of the next token at or after `from`: whitespace and comments skipped. */
export function skipTrivia(text: string, from: number): number {
  let k = from;
  for (;;) {
    while (isWhitespace(text.charAt(k))) k++;
    if (!text.startsWith("/*", k)) return k;
    const close = text.indexOf("*/", k + 2);
    if (close < 0) throw new LexicalError("comment has no closing */", "S0106", k, k);
    k = close + 2;
  }
}

/**
 * The token at or after `from`, or undefined at the end of the text. `regexAllowed`: whether the
 * parser expects an operand here, so that a `/` opens a regular expression.
 */
export function scanToken(text: string, from: number, regexAllowed: boolean): Token | undefined {
  const start = skipTrivia(text, from);
  if (start >= text.length) return undefined;
  const ch = text.charAt(start);
  const span = (end: number) => ({ start, end, regexAllowed });

  if (regexAllowed && ch === "/") return scanRegex(text, start, regexAllowed);
  const pair = text.slice(start, start + 2);
  if (TWO_CHAR_OPERATORS.includes(pair)) return { kind: "operator", value: pair, ...span(start + 2) };
  if (OPERATOR_CHARS.includes(ch)) return { kind: "operator", value: ch, ...span(start + 1) };
  if (ch === '"' || ch === "'") return scanString(text, start, regexAllowed);

  NUMBER.lastIndex = start;
  const number = NUMBER.exec(text);
  if (number !== null) {
    const value = parseFloat(number[0]);
    if (!Number.isFinite(value)) throw new LexicalError(`number out of range: ${number[0]}`, "S0102", start, start);
    return { kind: "number", value, ...span(start + number[0].length) };
  }

  if (ch === "`") {
    const close = text.indexOf("`", start + 1);
    if (close < 0) throw new LexicalError("quoted name has no closing `", "S0105", start, text.length);
    return { kind: "name", value: text.slice(start + 1, close), quoted: true, ...span(close + 1) };
  }

  let end = start;
  while (end < text.length && !endsName(text.charAt(end))) end++;
  const word = text.slice(start, end);
  if (ch === "$") return { kind: "variable", value: word.slice(1), ...span(end) };
  if (word === "and" || word === "or" || word === "in") return { kind: "operator", value: word, ...span(end) };
  if (word === "true" || word === "false") return { kind: "value", value: word === "true", ...span(end) };
  if (word === "null") return { kind: "value", value: null, ...span(end) };
  return { kind: "name", value: word, quoted: false, ...span(end) };
}

function scanString(text: string, start: number, regexAllowed: boolean): Token {
  const quote = text.charAt(start);
  let value = "";
  let k = start + 1;
  while (k < text.length) {
    const ch = text.charAt(k);
    if (ch === "\\") {
      k++;
      const escaped = text.charAt(k);
      if (Object.hasOwn(ESCAPES, escaped)) value += ESCAPES[escaped];
      else if (escaped === "u") {
        // As JSONata: up to four hex digits, however many remain before the end.
        const hex = text.slice(k + 1, k + 5);
        if (!/^[0-9a-fA-F]+$/.test(hex)) throw new LexicalError("\\u must be followed by four hex digits", "S0104", start, k);
        value += String.fromCharCode(parseInt(hex, 16));
        k += 4;
      } else throw new LexicalError(`unsupported escape sequence \\${escaped}`, "S0103", start, k);
    } else if (ch === quote) {
      return { kind: "string", value, start, end: k + 1, regexAllowed };
    } else value += ch;
    k++;
  }
  throw new LexicalError(`string has no closing ${quote}`, "S0101", start, k);
}

/** JSONata's scanRegex: the closing `/` is the first unescaped one outside (), [] and {}. */
function scanRegex(text: string, start: number, regexAllowed: boolean): Token {
  let depth = 0;
  const isClosingSlash = (k: number) => {
    if (text.charAt(k) !== "/" || depth !== 0) return false;
    let backslashes = 0;
    while (text.charAt(k - (backslashes + 1)) === "\\") backslashes++;
    return backslashes % 2 === 0;
  };
  for (let k = start + 1; k < text.length; k++) {
    const ch = text.charAt(k);
    if (isClosingSlash(k)) {
      const pattern = text.slice(start + 1, k);
      if (pattern === "") throw new LexicalError("empty regular expression", "S0301", start, k);
      let end = k + 1;
      while (text.charAt(end) === "i" || text.charAt(end) === "m") end++;
      const flags = text.slice(k + 1, end);
      try {
        new RegExp(pattern, `${flags}g`);
      } catch (err) {
        throw new LexicalError(errorText(err), undefined, start, start);
      }
      return { kind: "regex", value: { pattern, flags }, start, end, regexAllowed };
    }
    // Only the character just before counts as an escape here, as in JSONata.
    if ("([{".includes(ch) && text.charAt(k - 1) !== "\\") depth++;
    if (")]}".includes(ch) && text.charAt(k - 1) !== "\\") depth--;
  }
  throw new LexicalError("regular expression has no closing /", "S0302", start, text.length);
}
