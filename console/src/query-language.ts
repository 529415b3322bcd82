import { type Completion, type CompletionContext, type CompletionResult } from "@codemirror/autocomplete";
import { LanguageSupport, StreamLanguage, type StringStream } from "@codemirror/language";
import { call, type Session } from "./api.js";

/**
 * The graph query language (docs/reference/query-language.md) for CodeMirror: highlighting with
 * the token kinds of the service's lexer (src/graph/query/lexer.ts) and completion of the tenant's
 * entity types, relations and attribute names (from `GET /graph/schema`) and of `${param}` names.
 */

export interface GraphSchema {
  types: { type: string; count: number; attributes: string[] }[];
  relations: { relation: string; from: string; to: string; count: number }[];
}

const EMPTY: GraphSchema = { types: [], relations: [] };
const schemas = new Map<string, Promise<GraphSchema>>();

/** The tenant's graph summary, fetched once per token and tenant; an error answers an empty one (and is tried again later). */
export function graphSchema(session: Session): Promise<GraphSchema> {
  const key = `${session.tenant}\u0000${session.token}`;
  let schema = schemas.get(key);
  if (schema === undefined) {
    schema = call<GraphSchema>(session, "GET", "/graph/schema").catch(() => {
      schemas.delete(key);
      return EMPTY;
    });
    schemas.set(key, schema);
  }
  return schema;
}

interface QueryState {
  /** What the next name is: a statement's type, a clause's prefix, the name after a prefix, or a value / link target. */
  expect: "type" | "clause" | "name" | "value";
  prefix: string | undefined;
  inString: boolean;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_-]*/;
const PREFIXES = ["entity", "attribute", "link"];

function stringPart(stream: StringStream, state: QueryState): string {
  if (stream.match(/^\$\{[A-Za-z_][A-Za-z0-9_]*\}/)) return "variableName.special";
  while (!stream.eol()) {
    if (stream.match(/^\\./)) continue;
    if (stream.peek() === "$" && stream.string.charAt(stream.pos + 1) === "{") return "string";
    if (stream.next() === '"') {
      state.inString = false;
      return "string";
    }
  }
  state.inString = false; // unterminated at the end of the line, as the lexer says
  return "string";
}

export const graphQueryLanguage = StreamLanguage.define<QueryState>({
  name: "graph-query",
  startState: () => ({ expect: "type", prefix: undefined, inString: false }),
  token(stream, state) {
    if (state.inString) return stringPart(stream, state);
    if (stream.eatSpace()) return null;
    if (stream.match("#")) {
      stream.skipToEnd();
      return "comment";
    }
    if (stream.eat('"')) {
      state.inString = true;
      return stringPart(stream, state);
    }
    if (stream.match(/^\?[A-Za-z_][A-Za-z0-9_]*/)) return "labelName";
    if (stream.match(/^\$\{[A-Za-z_][A-Za-z0-9_]*\}/)) return "variableName.special";
    if (stream.match(/^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/)) return "number";
    const c = stream.peek();
    if (c === "." || c === ";" || c === ":") {
      stream.next();
      if (c === ".") state.expect = "type";
      else if (c === ";") state.expect = "clause";
      else if (state.prefix !== undefined && state.expect === "clause") state.expect = "name";
      return "punctuation";
    }
    const word = stream.match(IDENT) as RegExpMatchArray | null;
    if (word === null) {
      stream.next();
      return "invalid";
    }
    const text = word[0];
    const beforeColon = /^\s*:/.test(stream.string.slice(stream.pos));
    switch (state.expect) {
      case "type":
        state.expect = "clause";
        state.prefix = undefined;
        return "typeName";
      case "clause":
        state.prefix = PREFIXES.includes(text) ? text : undefined;
        return state.prefix !== undefined ? "keyword" : "invalid";
      case "name":
        state.expect = "value";
        return state.prefix === "entity" && text === "key" ? "keyword" : "propertyName";
      default:
        if (text === "true" || text === "false") return "bool";
        return beforeColon ? "typeName" : "variableName";
    }
  },
  languageData: { commentTokens: { line: "#" } },
});

/** What the text before the cursor asks for; `statementType` is the type of the statement being written, if given. */
export function completionKind(before: string): { kind: "type" | "clause" | "attribute" | "relation" | "param"; statementType?: string } {
  const text = before.replace(/#[^\n]*/g, "");
  const statement = text.slice(text.lastIndexOf(".") + 1);
  const statementType = /^\s*([A-Za-z_][A-Za-z0-9_-]*)/.exec(statement)?.[1];
  if (/\$\{$/.test(text)) return { kind: "param" };
  if (/attribute\s*:\s*$/.test(text)) return { kind: "attribute", statementType };
  if (/link\s*:\s*$/.test(text)) return { kind: "relation", statementType };
  if (/^\s*$/.test(statement) || /link\s*:\s*[A-Za-z_][A-Za-z0-9_-]*\s+$/.test(text)) return { kind: "type" };
  if (/;\s*$/.test(text)) return { kind: "clause" };
  return { kind: "type" };
}

const unique = (names: string[]) => [...new Set(names)].sort();

/** Completion of names from the tenant's graph and of the definition's parameters. */
export function queryCompletion(schema: () => Promise<GraphSchema>, parameters: () => string[]) {
  return async (context: CompletionContext): Promise<CompletionResult | null> => {
    const word = context.matchBefore(/[A-Za-z_][A-Za-z0-9_-]*/);
    const from = word?.from ?? context.pos;
    if (word === null && !context.explicit && !/(\$\{|:)$/.test(context.state.sliceDoc(Math.max(0, context.pos - 2), context.pos))) return null;
    const { kind, statementType } = completionKind(context.state.sliceDoc(0, from));
    let options: Completion[];
    if (kind === "param") {
      // Closed with "}" unless the editor closed the bracket already.
      const closed = context.state.sliceDoc(context.pos, context.pos + 1) === "}";
      options = unique(parameters()).map((label) => ({ label, type: "variable", apply: closed ? label : `${label}}` }));
    } else if (kind === "clause") {
      options = ["entity:key ", "attribute:", "link:"].map((label) => ({ label, type: "keyword" }));
    } else {
      const graph = await schema();
      if (kind === "type") {
        options = graph.types.map((t) => ({ label: t.type, type: "type", detail: `${t.count} entities` }));
      } else if (kind === "attribute") {
        const own = graph.types.filter((t) => statementType === undefined || t.type === statementType);
        options = unique((own.length > 0 ? own : graph.types).flatMap((t) => t.attributes)).map((label) => ({ label, type: "property" }));
      } else {
        const own = graph.relations.filter((r) => r.from === statementType);
        options = (own.length > 0 ? own : graph.relations).map((r) => ({ label: r.relation, type: "property", detail: `${r.from} → ${r.to}` }));
        options = options.filter((o, i) => options.findIndex((p) => p.label === o.label) === i);
      }
    }
    return { from, options, validFor: /^[A-Za-z0-9_-]*$/ };
  };
}

/** The language with its completion, for one editor. */
export function graphQuery(schema: () => Promise<GraphSchema>, parameters: () => string[]): LanguageSupport {
  return new LanguageSupport(graphQueryLanguage, graphQueryLanguage.data.of({ autocomplete: queryCompletion(schema, parameters) }));
}
