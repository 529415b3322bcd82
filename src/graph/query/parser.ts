import type { Clause, Label, Query, Statement, Value } from "./ast.js";
import { QuerySyntaxError } from "./errors.js";
import { describeToken, tokenize, type Token } from "./lexer.js";

/**
 * Parses a graph query (shared/CONTRACT.md §2) into an AST with positions:
 *
 *   query     := statement+
 *   statement := Type ?label ( ';' clause )* '.'
 *   clause    := entity:key value | attribute:name value | link:relation target
 *   target    := Type:?label | ?label
 *   value     := "string" | number | true | false | ${param} | ?label
 *
 * Whatever the input, it returns a Query or throws a QuerySyntaxError.
 */
export function parseQuery(source: string): Query {
  const tokens = tokenize(source);
  let index = 0;
  const peek = (): Token => tokens[index] ?? tokens[tokens.length - 1]!;
  const next = (): Token => {
    const token = peek();
    if (token.kind !== "end") index++;
    return token;
  };
  const fail = (token: Token, expected: string): never => {
    throw new QuerySyntaxError(token.pos, describeToken(token), expected);
  };
  const expectKind = <K extends Token["kind"]>(kind: K, expected: string): Extract<Token, { kind: K }> => {
    const token = next();
    if (token.kind !== kind) fail(token, expected);
    return token as Extract<Token, { kind: K }>;
  };
  const label = (expected: string): Label => {
    const token = expectKind("label", expected);
    return { name: token.name, pos: token.pos };
  };

  const value = (): Value => {
    const token = next();
    switch (token.kind) {
      case "string":
        return { kind: "string", parts: token.parts, pos: token.pos };
      case "number":
        return { kind: "number", value: token.value, pos: token.pos };
      case "param":
        return { kind: "param", name: token.name, pos: token.pos };
      case "label":
        return { kind: "label", name: token.name, pos: token.pos };
      case "ident":
        if (token.text === "true" || token.text === "false") return { kind: "boolean", value: token.text === "true", pos: token.pos };
        break;
      default:
        break;
    }
    return fail(token, 'a value: "string", number, true, false, ${param} or ?label');
  };

  const clause = (): Clause => {
    const head = next();
    if (head.kind !== "ident" || !["entity", "attribute", "link"].includes(head.text)) {
      return fail(head, "a clause: entity:key, attribute:<name> or link:<relation>");
    }
    expectKind(":", `":" after ${head.text}`);
    if (head.text === "entity") {
      const key = next();
      if (key.kind !== "ident" || key.text !== "key") fail(key, '"key" after entity:');
      return { kind: "key", value: value(), pos: head.pos };
    }
    if (head.text === "attribute") {
      const name = expectKind("ident", "an attribute name after attribute:");
      return { kind: "attribute", name: name.text, value: value(), pos: head.pos };
    }
    const relation = expectKind("ident", "a relation name after link:");
    const target = peek();
    if (target.kind === "label") {
      next();
      return { kind: "link", relation: relation.text, target: { type: undefined, label: { name: target.name, pos: target.pos } }, pos: head.pos };
    }
    if (target.kind !== "ident") fail(target, "a link target: Type:?label or ?label");
    next();
    expectKind(":", `":" after the target type ${(target as { text: string }).text}`);
    return {
      kind: "link",
      relation: relation.text,
      target: { type: (target as { text: string }).text, label: label("a label (?name) after the target type") },
      pos: head.pos,
    };
  };

  const statement = (): Statement => {
    const type = expectKind("ident", "a statement: an entity type followed by ?label");
    const subject = label(`a label (?name) after the entity type ${type.text}`);
    const clauses: Clause[] = [];
    for (;;) {
      const token = next();
      if (token.kind === ".") break;
      if (token.kind !== ";") fail(token, '";" before the next clause or "." to end the statement');
      clauses.push(clause());
    }
    return { type: type.text, label: subject, clauses, pos: type.pos };
  };

  const statements: Statement[] = [];
  do statements.push(statement());
  while (peek().kind !== "end");
  return { statements };
}
