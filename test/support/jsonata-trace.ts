import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

/** A token as JSONata's own tokenizer returned it to its parser. */
export interface TracedToken {
  type: string;
  value: unknown;
  /** JSONata's `position` of a token: just past its end. */
  position: number;
  /** Whether the parser asked for it in prefix position (a `/` there starts a regular expression). */
  regexAllowed: boolean;
}

export interface JsonataTrace {
  /** Every token the parser read, in order, up to where it stopped. */
  tokens: TracedToken[];
  /** What `jsonata(text)` threw, if anything. */
  error?: { code?: string; position?: number; message: string };
}

interface RawToken {
  type: string;
  value: unknown;
  position: number;
}
type Next = (infix?: boolean) => RawToken | null;

const require = createRequire(import.meta.url);
const HOOK = "lexer = tokenizer(source);";
let recording: TracedToken[] = [];

/**
 * JSONata does not export its tokenizer, so this loads a copy of jsonata.js whose parser hands
 * every token it reads, and the mode it read it in, to `recording`: the oracle the lexer is
 * compared with. It fails loudly if the line it hooks is gone from a newer jsonata.
 */
const tracedJsonata = (() => {
  const file = require.resolve("jsonata");
  const source = readFileSync(file, "utf8");
  if (source.split(HOOK).length !== 2) throw new Error(`cannot trace jsonata: "${HOOK}" is not in ${file} exactly once`);
  const trace = (next: Next): Next => (infix) => {
    const token = next(infix);
    if (token !== null) recording.push({ type: token.type, value: token.value, position: token.position, regexAllowed: infix !== true });
    return token;
  };
  const module = { exports: {} as unknown };
  new Function("module", "exports", "require", "traceTokens", source.replace(HOOK, "lexer = traceTokens(tokenizer(source));"))(
    module,
    module.exports,
    require,
    trace,
  );
  return module.exports as (text: string) => unknown;
})();

/** Parses `text` with JSONata and returns the tokens its parser read. */
export function traceJsonata(text: string): JsonataTrace {
  recording = [];
  try {
    tracedJsonata(text);
    return { tokens: recording };
  } catch (err) {
    const e = err as { code?: string; position?: number; message?: string };
    return { tokens: recording, error: { code: e.code, position: e.position, message: e.message ?? String(err) } };
  } finally {
    recording = [];
  }
}

const LEXICAL_CODES = new Set(["S0101", "S0102", "S0103", "S0104", "S0105", "S0106", "S0301", "S0302"]);

/** Whether JSONata's error comes from its tokenizer rather than its parser. */
export function isLexicalError(error: JsonataTrace["error"]): boolean {
  if (error === undefined) return false;
  return error.code !== undefined ? LEXICAL_CODES.has(error.code) : error.message.startsWith("Invalid regular expression");
}
