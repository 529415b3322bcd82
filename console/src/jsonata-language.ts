import { LanguageSupport, StreamLanguage, type StringStream } from "@codemirror/language";

/**
 * JSONata (docs/reference/transform-language.md) for CodeMirror: strings, numbers, `$variables`
 * and `$functions(`, operators, comments, backtick names, regular expressions, and the service's
 * extensions: `${param}` and `result(?label) { … }` (`result` a keyword, `?label` a label).
 */

interface JsonataState {
  inComment: boolean;
  /** Inside `result( … )`, where `?name` is a label, not the conditional operator. */
  inResult: boolean;
  /** The token before, to tell a regular expression from a division, and `result` before `(`. */
  last: string;
}

const KEYWORD_OPERATORS = new Set(["and", "or", "in"]);
const ATOMS = new Set(["true", "false"]);
const OPERATORS = /^(?::=|!=|<=|>=|~>|\.\.|\?:|\?\?|\*\*|[-+*/%&=<>!?:.|^#@])/;

function blockComment(stream: StringStream, state: JsonataState): string {
  state.inComment = !stream.skipTo("*/");
  if (state.inComment) stream.skipToEnd();
  else stream.pos += 2;
  return "comment";
}

function quoted(stream: StringStream, quote: string): void {
  while (!stream.eol()) {
    const c = stream.next();
    if (c === "\\") stream.next();
    else if (c === quote) return;
  }
}

const regexAllowed = (last: string) => last === "" || /^[-+*/%&=<>!?:.|^#@(,[{;~]$|^(and|or|in)$/.test(last);

export const jsonataLanguage = StreamLanguage.define<JsonataState>({
  name: "jsonata",
  startState: () => ({ inComment: false, inResult: false, last: "" }),
  token(stream, state) {
    if (state.inComment) return blockComment(stream, state);
    if (stream.eatSpace()) return null;
    const style = tokenStyle(stream, state);
    state.last = stream.current();
    return style;
  },
  languageData: { commentTokens: { block: { open: "/*", close: "*/" } }, closeBrackets: { brackets: ["(", "[", "{", '"', "'", "`"] } },
});

function tokenStyle(stream: StringStream, state: JsonataState): string | null {
  if (stream.match("/*")) return blockComment(stream, state);
  const c = stream.peek() ?? "";
  if (c === '"' || c === "'") {
    stream.next();
    quoted(stream, c);
    return "string";
  }
  if (c === "`") {
    stream.next();
    quoted(stream, "`");
    return "propertyName.special";
  }
  if (c === "/" && regexAllowed(state.last)) {
    stream.next();
    quoted(stream, "/");
    stream.match(/^[im]*/);
    return "regexp";
  }
  if (stream.match(/^\$\{[A-Za-z_][A-Za-z0-9_]*\}/)) return "variableName.special";
  if (stream.match(/^\$[A-Za-z0-9_]*/)) return /^\s*\(/.test(stream.string.slice(stream.pos)) ? "variableName.function" : "variableName";
  if (state.inResult && stream.match(/^\?[A-Za-z_][A-Za-z0-9_]*/)) return "labelName";
  if (stream.match(/^(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/)) return "number";
  const word = stream.match(/^[A-Za-z_][A-Za-z0-9_]*/) as RegExpMatchArray | null;
  if (word !== null) {
    const text = word[0];
    if (text === "result" && /^\s*\(/.test(stream.string.slice(stream.pos))) return "keyword";
    if (text === "function" && /^\s*\(/.test(stream.string.slice(stream.pos))) return "keyword";
    if (KEYWORD_OPERATORS.has(text)) return "operatorKeyword";
    if (ATOMS.has(text)) return "bool";
    if (text === "null") return "null";
    return "propertyName";
  }
  if (c === "(") {
    stream.next();
    if (state.last === "result") state.inResult = true;
    return "paren";
  }
  if (c === ")") {
    stream.next();
    state.inResult = false;
    return "paren";
  }
  if (stream.match(/^[[\]{}]/)) return "bracket";
  if (stream.match(/^[,;]/)) return "punctuation";
  if (stream.match(OPERATORS)) return "operator";
  stream.next();
  return "invalid";
}

export function jsonata(): LanguageSupport {
  return new LanguageSupport(jsonataLanguage);
}
