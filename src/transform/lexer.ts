import { ParserMode } from "./parser-mode.js";
import { LexicalError, scanToken, type Token } from "./scanner.js";

export { LexicalError, type Token } from "./scanner.js";

export interface Tokenized {
  /** Every token up to the end of the text, or up to the lexical error. */
  tokens: Token[];
  /** What stopped the tokenizer before the end, as JSONata would refuse it. */
  error?: LexicalError;
}

/**
 * Splits a JSONata text into tokens as JSONata 2.2 does, deciding regular expression against
 * division as its parser does. The extension forms (`${name}`, `result(?label) { … }`) are made of
 * ordinary JSONata tokens, so they need no rule of their own here.
 */
export function tokenize(text: string): Tokenized {
  const mode = new ParserMode();
  const tokens: Token[] = [];
  let offset = 0;
  try {
    for (;;) {
      const token = scanToken(text, offset, mode.regexAllowed);
      if (token === undefined) return { tokens };
      tokens.push(token);
      mode.advance(token);
      offset = token.end;
    }
  } catch (err) {
    if (err instanceof LexicalError) return { tokens, error: err };
    throw err;
  }
}

/** Whether a token is the operator `op` (or the keyword operator `and`, `or`, `in`). */
export const isOperator = (token: Token | undefined, op: string): boolean => token?.kind === "operator" && token.value === op;
