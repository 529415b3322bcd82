import { tokenize, type Token } from "../../src/transform/lexer.js";
import { isLexicalError, traceJsonata, type TracedToken } from "./jsonata-trace.js";

interface Comparable {
  type: string;
  value: unknown;
  end: number;
  regexAllowed: boolean;
}

const regexText = (pattern: string, flags: string) => {
  const re = new RegExp(pattern, flags);
  return `/${re.source}/${re.flags}`;
};

function ours(token: Token): Comparable {
  const value = token.kind === "regex" ? regexText(token.value.pattern, `${token.value.flags}g`) : token.value;
  return { type: token.kind, value, end: token.end, regexAllowed: token.regexAllowed };
}

function theirs(token: TracedToken): Comparable {
  const value = token.value instanceof RegExp ? regexText(token.value.source, token.value.flags) : token.value;
  return { type: token.type, value, end: token.position, regexAllowed: token.regexAllowed };
}

/**
 * Where our lexer and JSONata's parser read `text` differently, or undefined when they agree:
 * every token JSONata read (it stops at its first error) is the same token, read in the same mode,
 * and a lexical error JSONata stops at is ours too, at the same place.
 */
export function lexerDisagreement(text: string): string | undefined {
  const mine = tokenize(text);
  const trace = traceJsonata(text);
  for (const [i, token] of trace.tokens.entries()) {
    const expected = JSON.stringify(theirs(token));
    const actual = mine.tokens[i] === undefined ? `nothing (${mine.error?.message ?? "end of text"})` : JSON.stringify(ours(mine.tokens[i]));
    if (actual !== expected) return `token ${i}: JSONata read ${expected}, the lexer ${actual}`;
  }
  if (isLexicalError(trace.error)) {
    const error = mine.error;
    const same =
      error !== undefined &&
      mine.tokens.length === trace.tokens.length &&
      error.code === trace.error!.code &&
      (error.code === undefined || error.position === trace.error!.position);
    if (!same) return `JSONata stops with ${JSON.stringify(trace.error)}, the lexer with ${error === undefined ? "no error" : JSON.stringify({ code: error.code, position: error.position, after: mine.tokens.length })}`;
  }
  return undefined;
}
