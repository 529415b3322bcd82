import type { ParamRef, Position } from "./ast.js";
import { QuerySyntaxError } from "./errors.js";

export type Token =
  | { kind: "ident"; text: string; pos: Position }
  | { kind: "label"; name: string; pos: Position }
  | { kind: "string"; parts: (string | ParamRef)[]; pos: Position }
  | { kind: "number"; value: number; pos: Position }
  | { kind: "param"; name: string; pos: Position }
  | { kind: ":" | ";" | "."; pos: Position }
  | { kind: "end"; pos: Position };

const IDENT_START = /[A-Za-z_]/;
const IDENT_PART = /[A-Za-z0-9_-]/;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** How a token is named in an error message. */
export function describeToken(token: Token): string {
  switch (token.kind) {
    case "ident":
      return `"${token.text}"`;
    case "label":
      return `label ?${token.name}`;
    case "string":
      return "a string";
    case "number":
      return `number ${token.value}`;
    case "param":
      return `parameter \${${token.name}}`;
    case "end":
      return "end of input";
    default:
      return `"${token.kind}"`;
  }
}

/**
 * Splits a query into tokens. White space and `#` comments to the end of a line are skipped.
 * Strings are double-quoted with JSON escapes plus `\$`; `${name}` inside one is a parameter.
 */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let offset = 0;
  let line = 1;
  let lineStart = 0;
  const here = (): Position => ({ line, column: offset - lineStart + 1, offset });
  const fail = (pos: Position, found: string, expected: string, message?: string): never => {
    throw new QuerySyntaxError(pos, found, expected, message);
  };
  const charAt = (i: number) => source[i] ?? "";
  const describeChar = (c: string) => (c === "" ? "end of input" : c === "\n" ? "end of line" : JSON.stringify(c));

  /** Reads `${name}` at the current offset (just past `$`), returning the name. */
  const readParamName = (): string => {
    offset++; // "{"
    const nameStart = offset;
    while (IDENT_PART.test(charAt(offset)) && charAt(offset) !== "-") offset++;
    const name = source.slice(nameStart, offset);
    if (!NAME.test(name)) fail(here(), describeChar(charAt(offset)), "a parameter name after ${");
    if (charAt(offset) !== "}") fail(here(), describeChar(charAt(offset)), `"}" to close \${${name}`);
    offset++;
    return name;
  };

  while (offset < source.length) {
    const c = charAt(offset);
    if (c === "\n") {
      offset++;
      line++;
      lineStart = offset;
      continue;
    }
    if (c === " " || c === "\t" || c === "\r" || c === "\f" || c === "\v" || c === "\u00a0" || c === "\ufeff") {
      offset++;
      continue;
    }
    if (c === "#") {
      while (offset < source.length && charAt(offset) !== "\n") offset++;
      continue;
    }
    const pos = here();
    if (c === ":" || c === ";" || c === ".") {
      tokens.push({ kind: c, pos });
      offset++;
      continue;
    }
    if (IDENT_START.test(c)) {
      const start = offset;
      while (IDENT_PART.test(charAt(offset))) offset++;
      tokens.push({ kind: "ident", text: source.slice(start, offset), pos });
      continue;
    }
    if (c === "?") {
      offset++;
      const start = offset;
      while (IDENT_PART.test(charAt(offset)) && charAt(offset) !== "-") offset++;
      const name = source.slice(start, offset);
      if (!NAME.test(name)) fail(here(), describeChar(charAt(offset)), "a label name after ?");
      tokens.push({ kind: "label", name, pos });
      continue;
    }
    if (c === "$") {
      if (charAt(offset + 1) !== "{") fail(here(), describeChar(charAt(offset + 1)), '"{" after $', 'expected "{" after $');
      offset++;
      tokens.push({ kind: "param", name: readParamName(), pos });
      continue;
    }
    if (c === "-" || (c >= "0" && c <= "9")) {
      const match = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/.exec(source.slice(offset, offset + 400));
      if (match === null) fail(pos, describeChar(charAt(offset + 1)), "a digit after -");
      const text = match![0];
      const value = Number(text);
      if (!Number.isFinite(value)) fail(pos, `number ${text}`, "a number within the range of a double", `number ${text} is out of range`);
      offset += text.length;
      if (IDENT_PART.test(charAt(offset))) fail(here(), describeChar(charAt(offset)), `";" or "." after number ${text}`);
      tokens.push({ kind: "number", value, pos });
      continue;
    }
    if (c === '"') {
      offset++;
      const parts: (string | ParamRef)[] = [];
      let text = "";
      for (;;) {
        const d = charAt(offset);
        if (d === "" || d === "\n") fail(here(), describeChar(d), '"\\"" to close the string', `unterminated string (it starts at line ${pos.line}, column ${pos.column})`);
        if (d === '"') {
          offset++;
          break;
        }
        if (d === "\\") {
          const e = charAt(offset + 1);
          const simple: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", $: "$" };
          if (e in simple) {
            text += simple[e];
            offset += 2;
            continue;
          }
          if (e === "u") {
            const hex = source.slice(offset + 2, offset + 6);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail(here(), JSON.stringify(`\\u${hex}`), "\\u and four hex digits");
            text += String.fromCharCode(parseInt(hex, 16));
            offset += 6;
            continue;
          }
          offset++;
          fail(here(), describeChar(e), 'an escape: \\" \\\\ \\/ \\b \\f \\n \\r \\t \\$ or \\uXXXX', `unknown escape \\${e === "\n" ? "(end of line)" : e}`);
        }
        if (d === "$" && charAt(offset + 1) === "{") {
          const paramPos = here();
          offset++;
          if (text !== "") parts.push(text);
          text = "";
          parts.push({ param: readParamName(), pos: paramPos });
          continue;
        }
        text += d;
        offset++;
      }
      if (text !== "" || parts.length === 0) parts.push(text);
      tokens.push({ kind: "string", parts, pos });
      continue;
    }
    fail(pos, describeChar(c), "a statement, a clause or a value");
  }
  tokens.push({ kind: "end", pos: here() });
  return tokens;
}
