import { isOperator, type LexicalError, type Token } from "./lexer.js";

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
  /** Where the malformed `result(?` construct it is about starts: JSONata's error from there on is this one again. */
  construct?: number;
}

/** What a label or a parameter name may be. */
export const SIMPLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Whether the tokens at `i` open `result(?label)`. `result(?` followed by `,` or `)` is JSONata's
 * partial application and stays JSONata; followed by anything else it is never valid JSONata.
 */
export function opensResult(tokens: readonly Token[], i: number): boolean {
  const [name, open, mark, after] = tokens.slice(i, i + 4);
  return (
    name?.kind === "name" &&
    !name.quoted &&
    name.value === "result" &&
    isOperator(open, "(") &&
    isOperator(mark, "?") &&
    !isOperator(after, ",") &&
    !isOperator(after, ")")
  );
}

/** A name as JSONata reads it where it expects one, `and`, `or` and `in` included. */
function nameOf(token: Token | undefined): string | undefined {
  if (token?.kind === "name") return token.value;
  if (token?.kind === "operator" && ["and", "or", "in"].includes(token.value)) return token.value;
  return undefined;
}

/** The construct read, with the index of the token after its `}`; or, malformed, only problems saying where and why. */
export type ResultRead = { use: ResultUse; next: number; problems: RewriteProblem[] } | { use?: undefined; problems: RewriteProblem[] };

/**
 * Reads `result(?label) { field, alias: field, … }` from the token at `i` (see opensResult). An
 * alias is a name, a string in either quotes or a backtick name; the field after `:` a name. As
 * the list is read as tokens, comments may stand anywhere between them. An empty list and a
 * trailing comma are accepted, as they always were.
 */
export function readResultConstruct(tokens: readonly Token[], i: number, text: string, lexicalError: LexicalError | undefined): ResultRead {
  const problems: RewriteProblem[] = [];
  let k = i + 3;
  /** Gives up at token `k`: what was expected there, or why the text has no token there. */
  const malformed = (expected: string): ResultRead => {
    const token = tokens[k];
    const construct = tokens[i]!.start;
    if (token !== undefined) problems.push({ message: expected, offset: token.start, construct });
    else if (lexicalError !== undefined) problems.push({ message: lexicalError.message, offset: lexicalError.start, construct });
    else problems.push({ message: `${expected}, but the text ends`, offset: text.length, construct });
    return { problems };
  };

  const labelToken = tokens[k];
  const label = labelToken === undefined ? "" : text.slice(labelToken.start, labelToken.end);
  if (!SIMPLE_NAME.test(label)) return malformed("expected a label name after result(?");
  k++;
  if (!isOperator(tokens[k], ")")) return malformed(`expected ")" after result(?${label}`);
  k++;
  if (!isOperator(tokens[k], "{")) return malformed(`expected "{" and the fields to return after result(?${label})`);
  k++;

  const fields: ResultField[] = [];
  while (!isOperator(tokens[k], "}")) {
    const aliasToken = tokens[k];
    const alias = aliasToken?.kind === "string" ? aliasToken.value : nameOf(aliasToken);
    if (aliasToken === undefined || alias === undefined) return malformed(`expected a field name, or "}" to end result(?${label}) { … }`);
    k++;
    let field = alias;
    if (isOperator(tokens[k], ":")) {
      k++;
      const fieldName = nameOf(tokens[k]);
      if (fieldName === undefined) return malformed(`expected the entity field after "${alias}:"`);
      field = fieldName;
      k++;
    }
    if (fields.some((f) => f.alias === alias)) problems.push({ message: `field "${alias}" appears twice in result(?${label})`, offset: aliasToken.start });
    fields.push({ alias, field });
    if (isOperator(tokens[k], ",")) k++;
    else if (!isOperator(tokens[k], "}")) return malformed(`expected "," or "}" after field "${alias}"`);
  }
  return { use: { label, fields, offset: tokens[i]!.start }, next: k + 1, problems };
}
