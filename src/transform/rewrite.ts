import { generatedNames, type GeneratedNames } from "./generated-names.js";
import { isOperator, tokenize, type Token } from "./lexer.js";
import { opensResult, readResultConstruct, SIMPLE_NAME, type ResultUse, type RewriteProblem } from "./result-construct.js";

export type { ResultField, ResultUse, RewriteProblem } from "./result-construct.js";

export type { GeneratedNames } from "./generated-names.js";

/**
 * The transform language is JSONata plus two forms JSONata does not have:
 *
 *   ${name}                                  a query parameter
 *   result(?label) { field, alias: field }   one object per entity bound to ?label
 *
 * This module finds both among the tokens of the text, read as JSONata's own tokenizer reads it
 * (so never inside a string, a backtick name, a comment or a regular expression), and writes plain
 * JSONata in their place, keeping a map from positions in the rewritten text back to the original,
 * so that JSONata's own errors point at what the administrator wrote. A text without them comes
 * out unchanged.
 *
 * `${name}` is `${` written together, a name, and `}`; spaces and comments may surround the name.
 * JSONata reads `${…}` as `$` grouped by an object constructor, which needs `name: value` pairs, so
 * a lone name there is never JSONata, while `${"n": 1}`, `${id: v}`, `$${id: v}` and `${}` are,
 * and stay as written.
 */

export interface TextPosition {
  offset: number;
  line: number;
  column: number;
}

export interface ParamUse {
  name: string;
  offset: number;
}

export interface Rewritten {
  source: string;
  params: ParamUse[];
  results: ResultUse[];
  problems: RewriteProblem[];
  /** The names given to the bound function and the parameter variables in `source`: none the text uses. */
  names: GeneratedNames;
  /** Maps an offset in `source` to the offset in the original text. */
  originalOffset(offset: number): number;
  /**
   * Where the token JSONata's tokenizer refuses starts, in the original text: JSONata itself points
   * past the end for an unclosed string, name, comment or regular expression.
   */
  lexicalErrorStart?: number;
}

/** Where the text is to change, as data: a parameter or a `result(?label) { … }` construct, by its place in the original text. */
export type Edit = { kind: "param"; name: string; origStart: number; origEnd: number } | { kind: "result"; use: ResultUse; origStart: number; origEnd: number };

/** What the text uses of the extension, and where it is to change: the rewriter's decisions, free of the text written. */
export interface RewritePlan {
  params: ParamUse[];
  results: ResultUse[];
  problems: RewriteProblem[];
  edits: Edit[];
  lexicalErrorStart?: number;
}

/**
 * Whether the tokens at `i` are `${`, one word (a name, literal or variable, not an operator or a
 * bracket: `{"a": ${}}` and `${{}: 1}` are JSONata) and `}`.
 */
export function isParameter(tokens: readonly Token[], i: number): boolean {
  const [dollar, open, word, close] = tokens.slice(i, i + 4);
  const isWord = word !== undefined && (word.kind !== "operator" || ["and", "or", "in"].includes(word.value));
  return dollar?.kind === "variable" && dollar.value === "" && isOperator(open, "{") && open!.start === dollar.end && isWord && isOperator(close, "}");
}

/** Rewrites a transform into plain JSONata: its plan ({@link planRewrite}), then the text ({@link emitRewrite}). */
export function rewriteTransform(text: string): Rewritten {
  return emitRewrite(text, planRewrite(text));
}

/** Finds `${name}` and `result(?label) { … }` as token sequences, and what each becomes. */
export function planRewrite(text: string): RewritePlan {
  const { tokens, error } = tokenize(text);
  const edits: Edit[] = [];
  const params: ParamUse[] = [];
  const results: ResultUse[] = [];
  const problems: RewriteProblem[] = [];

  for (let i = 0; i < tokens.length; ) {
    const token = tokens[i]!;
    if (isParameter(tokens, i)) {
      const nameToken = tokens[i + 2]!;
      const name = text.slice(nameToken.start, nameToken.end);
      if (SIMPLE_NAME.test(name)) {
        params.push({ name, offset: token.start });
        edits.push({ kind: "param", name, origStart: token.start, origEnd: tokens[i + 3]!.end });
      } else {
        problems.push({ message: "expected ${name} with a parameter name made of letters, digits and _", offset: token.start });
      }
      i += 4;
    } else if (opensResult(tokens, i)) {
      const read = readResultConstruct(tokens, i, text, error);
      problems.push(...read.problems);
      if (read.use === undefined) {
        i++; // the problem is reported; the rest is read as it is
        continue;
      }
      results.push(read.use);
      edits.push({ kind: "result", use: read.use, origStart: token.start, origEnd: tokens[read.next - 1]!.end });
      i = read.next;
    } else i++;
  }
  return { ...(error !== undefined ? { lexicalErrorStart: error.start } : {}), params, results, problems, edits };
}

/**
 * Writes the plan into the text: a parameter becomes its generated variable, a construct a call of
 * the generated function with its label and fields. Generated names are chosen so that none is used
 * by the text.
 */
export function emitRewrite(text: string, plan: RewritePlan): Rewritten {
  const names = generatedNames(text);
  const written = (edit: Edit) => {
    if (edit.kind === "param") return `$${names.param(edit.name)}`;
    const spec = edit.use.fields.map((f) => `[${JSON.stringify(f.alias)}, ${JSON.stringify(f.field)}]`).join(", ");
    return `$${names.result}(${JSON.stringify(edit.use.label)}, [${spec}])`;
  };
  // The text after a lexical error is left as it is: JSONata, reading the same text, reports that
  // error itself (problems here are about the extension only).
  let source = "";
  let last = 0;
  const segments: { newStart: number; newEnd: number; origStart: number; origEnd: number }[] = [];
  for (const edit of plan.edits) {
    source += text.slice(last, edit.origStart);
    const newStart = source.length;
    source += written(edit);
    segments.push({ newStart, newEnd: source.length, origStart: edit.origStart, origEnd: edit.origEnd });
    last = edit.origEnd;
  }
  source += text.slice(last);

  return {
    ...(plan.lexicalErrorStart !== undefined ? { lexicalErrorStart: plan.lexicalErrorStart } : {}),
    source,
    params: plan.params,
    results: plan.results,
    problems: plan.problems,
    names,
    originalOffset(offset) {
      let shift = 0;
      for (const s of segments) {
        if (offset < s.newStart) break;
        if (offset < s.newEnd) return s.origStart;
        shift = s.origEnd - s.newEnd;
      }
      return offset + shift;
    },
  };
}

/** 1-based line and column of an offset in a text. */
export function positionAt(text: string, offset: number): TextPosition {
  const clamped = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let k = 0; k < clamped; k++) {
    if (text[k] === "\n") {
      line++;
      lineStart = k + 1;
    }
  }
  return { offset: clamped, line, column: clamped - lineStart + 1 };
}
