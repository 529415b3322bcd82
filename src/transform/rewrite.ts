/**
 * The transform language is JSONata plus two forms JSONata does not have:
 *
 *   ${name}                                  a query parameter
 *   result(?label) { field, alias: field }   one object per entity bound to ?label
 *
 * This module finds both in the text (outside strings, quoted names and comments) and writes
 * plain JSONata in their place, keeping a map from positions in the rewritten text back to the
 * original, so that JSONata's own errors point at what the administrator wrote.
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

export interface ResultField {
  /** Key in each output object. */
  alias: string;
  /** Entity field it is taken from (`id`, `type`, `key` or an attribute). */
  field: string;
}

export interface ResultUse {
  label: string;
  fields: ResultField[];
  offset: number;
}

export interface RewriteProblem {
  message: string;
  offset: number;
}

export interface Rewritten {
  source: string;
  params: ParamUse[];
  results: ResultUse[];
  problems: RewriteProblem[];
  /** Maps an offset in `source` to the offset in the original text. */
  originalOffset(offset: number): number;
}

/** The JSONata variable a `${name}` parameter becomes. */
export const paramVariable = (name: string) => `__param_${name}`;
/** The bound function `result(...)` becomes. */
export const RESULT_FUNCTION = "__result";

const NAME_START = /[A-Za-z_]/;
const NAME_PART = /[A-Za-z0-9_]/;

interface Edit {
  origStart: number;
  origEnd: number;
  text: string;
}

export function rewriteTransform(text: string): Rewritten {
  const edits: Edit[] = [];
  const params: ParamUse[] = [];
  const results: ResultUse[] = [];
  const problems: RewriteProblem[] = [];
  let i = 0;
  const at = (k: number) => text[k] ?? "";
  const skipSpace = (k: number) => {
    while (/\s/.test(at(k))) k++;
    return k;
  };
  const readName = (k: number): [string, number] => {
    const start = k;
    if (!NAME_START.test(at(k))) return ["", k];
    while (NAME_PART.test(at(k))) k++;
    return [text.slice(start, k), k];
  };

  while (i < text.length) {
    const c = at(i);
    // Strings, quoted names and comments are copied as they are.
    if (c === '"' || c === "'" || c === "`") {
      let k = i + 1;
      while (k < text.length && at(k) !== c) k += at(k) === "\\" && c !== "`" ? 2 : 1;
      i = k + 1;
      continue;
    }
    if (c === "/" && at(i + 1) === "*") {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 2;
      continue;
    }
    if (c === "$" && at(i + 1) === "{") {
      const [name, afterName] = readName(i + 2);
      if (name === "" || at(afterName) !== "}") {
        problems.push({ message: "expected ${name} with a parameter name made of letters, digits and _", offset: i });
        i += 2;
        continue;
      }
      params.push({ name, offset: i });
      edits.push({ origStart: i, origEnd: afterName + 1, text: `$${paramVariable(name)}` });
      i = afterName + 1;
      continue;
    }
    if (c === "r" && text.startsWith("result", i) && !NAME_PART.test(at(i - 1)) && at(i - 1) !== "$" && at(i - 1) !== ".") {
      const open = skipSpace(i + "result".length);
      if (at(open) === "(" && at(skipSpace(open + 1)) === "?") {
        const parsed = readResult(i, open);
        if (parsed !== undefined) {
          results.push(parsed.use);
          const spec = parsed.use.fields.map((f) => `[${JSON.stringify(f.alias)}, ${JSON.stringify(f.field)}]`).join(", ");
          edits.push({ origStart: i, origEnd: parsed.end, text: `$${RESULT_FUNCTION}(${JSON.stringify(parsed.use.label)}, [${spec}])` });
          i = parsed.end;
        } else {
          i += "result".length; // the problem is reported; the rest is read as it is
        }
        continue;
      }
    }
    i++;
  }

  /** Reads `result(?label) { fields }` starting at `start`, with `(` at `open`. */
  function readResult(start: number, open: number): { use: ResultUse; end: number } | undefined {
    let k = skipSpace(open + 1) + 1; // past "?"
    const [label, afterLabel] = readName(k);
    if (label === "") {
      problems.push({ message: "expected a label name after result(?", offset: k });
      return undefined;
    }
    k = skipSpace(afterLabel);
    if (at(k) !== ")") {
      problems.push({ message: `expected ")" after result(?${label}`, offset: k });
      return undefined;
    }
    k = skipSpace(k + 1);
    if (at(k) !== "{") {
      problems.push({ message: `expected "{" and the fields to return after result(?${label})`, offset: k });
      return undefined;
    }
    k = skipSpace(k + 1);
    const fields: ResultField[] = [];
    while (at(k) !== "}") {
      let alias: string;
      if (at(k) === '"') {
        const close = text.indexOf('"', k + 1);
        if (close < 0) {
          problems.push({ message: "unterminated field name", offset: k });
          return undefined;
        }
        alias = text.slice(k + 1, close);
        k = close + 1;
      } else {
        [alias, k] = readName(k);
        if (alias === "") {
          problems.push({ message: `expected a field name, or "}" to end result(?${label}) { … }`, offset: k });
          return undefined;
        }
      }
      let field = alias;
      k = skipSpace(k);
      if (at(k) === ":") {
        k = skipSpace(k + 1);
        [field, k] = readName(k);
        if (field === "") {
          problems.push({ message: `expected the entity field after "${alias}:"`, offset: k });
          return undefined;
        }
        k = skipSpace(k);
      }
      if (fields.some((f) => f.alias === alias)) problems.push({ message: `field "${alias}" appears twice in result(?${label})`, offset: k });
      fields.push({ alias, field });
      if (at(k) === ",") k = skipSpace(k + 1);
      else if (at(k) !== "}") {
        problems.push({ message: `expected "," or "}" after field "${alias}"`, offset: k });
        return undefined;
      }
    }
    return { use: { label, fields, offset: start }, end: k + 1 };
  }

  let source = "";
  let last = 0;
  const segments: { newStart: number; newEnd: number; origStart: number; origEnd: number }[] = [];
  for (const edit of edits) {
    source += text.slice(last, edit.origStart);
    const newStart = source.length;
    source += edit.text;
    segments.push({ newStart, newEnd: source.length, origStart: edit.origStart, origEnd: edit.origEnd });
    last = edit.origEnd;
  }
  source += text.slice(last);

  return {
    source,
    params,
    results,
    problems,
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
