import ts from "typescript";
import { migrations } from "../../src/db/migrations.js";

/**
 * Finds statements in TypeScript source that may join across tenants: the check that keeps
 * `tenant` a sound distribution column (docs/explanations/distribution.md). It reads the source
 * with the TypeScript parser and looks at
 * - every SQL text (string and template literals, a `${…}` kept as written): where it names more
 *   than one relation (a join, a subquery, a lateral call), each table with a tenant column must
 *   have its tenant named (`alias.tenant`, or `tenant` unqualified for an unaliased one) in that text;
 * - every knex join call (`.join`, `.leftJoin`, …, `.joinRaw`): its arguments must name `tenant`.
 */

/** The tables of the schema with a `tenant` column, read from the migrations. */
export function tenantTables(): string[] {
  const tables = new Set<string>();
  for (const statement of migrations.flatMap((m) => m.statements)) {
    const m = /^\s*create table (\w+) \(([\s\S]*)\)/i.exec(statement);
    if (m !== null && /\btenant text not null\b/.test(m[2]!)) tables.add(m[1]!);
  }
  return [...tables].sort();
}

export interface JoinFinding {
  file: string;
  line: number;
  message: string;
}

const KNEX_JOINS = new Set(["join", "innerJoin", "leftJoin", "leftOuterJoin", "rightJoin", "rightOuterJoin", "fullOuterJoin", "crossJoin", "joinRaw"]);
/** Words that may follow a table name and are not its alias. */
const NOT_ALIAS = new Set(["where", "on", "join", "left", "right", "inner", "cross", "full", "group", "order", "limit", "using", "set", "union", "returning", "for", "natural", "as", "and", "select"]);

/** The text of a literal, `${…}` kept as written. */
function literalText(node: ts.Node, source: ts.SourceFile): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node)) {
    return node.head.text + node.templateSpans.map((span) => `\${${span.expression.getText(source)}}${span.literal.text}`).join("");
  }
  return undefined;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** What is wrong with one SQL text: each tenant table of a multi-relation statement whose tenant it does not name. */
export function sqlFindings(sql: string, tables: string[]): string[] {
  const text = sql.replace(/--[^\n]*/g, " ");
  if (!/\b(select|insert|update|delete|with)\b/i.test(text)) return [];
  // Every relation the text reads: `from X`, `join X`, a subquery or a lateral call included.
  const relations = [...text.matchAll(/\b(?:from|join)\s+(?:lateral\s+)?(\(|\$\{[^}]*\}|[a-z_][\w.]*)/gi)].length;
  const joined = /\bjoin\b/i.test(text) || relations > 1;
  if (!joined) return [];
  const findings: string[] = [];
  const reference = new RegExp(`\\b(?:from|join|update|into)\\s+(${tables.map(escape).join("|")})\\b(?:\\s+(?:as\\s+)?(\\$\\{[^}]*\\}|[a-z_]\\w*))?`, "gi");
  // Each reference to a tenant table under an alias needs its own `alias.tenant` (an alias may be
  // used twice, in a recursive query): the namings are counted against the references.
  const references = new Map<string, { table: string; count: number }>();
  for (const m of text.matchAll(reference)) {
    const alias = m[2] !== undefined && !NOT_ALIAS.has(m[2].toLowerCase()) ? m[2] : "";
    const seen = references.get(alias) ?? { table: m[1]!, count: 0 };
    seen.count++;
    references.set(alias, seen);
  }
  for (const [alias, { table, count }] of references) {
    const naming = alias === "" ? /(?<![\w.])tenant\b/gi : new RegExp(`(?<![\\w.])${escape(alias)}\\.tenant\\b`, "gi");
    const named = [...text.matchAll(naming)].length;
    if (named < count) findings.push(`${table}${alias === "" ? "" : ` ${alias}`} is joined without its tenant: ${text.replace(/\s+/g, " ").slice(0, 160)}`);
  }
  return findings;
}

/** The findings in one TypeScript source text. */
export function joinFindings(file: string, code: string, tables: string[] = tenantTables()): JoinFinding[] {
  const source = ts.createSourceFile(file, code, ts.ScriptTarget.Latest, true);
  const findings: JoinFinding[] = [];
  const lineOf = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  const visit = (node: ts.Node): void => {
    const text = literalText(node, source);
    if (text !== undefined) {
      for (const message of sqlFindings(text, tables)) findings.push({ file, line: lineOf(node), message });
      return;
    }
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && KNEX_JOINS.has(node.expression.name.text)) {
      // Array#join takes one separator, knex's join a table and its condition.
      const knexJoin = node.expression.name.text !== "join" || node.arguments.length > 1;
      if (knexJoin && !node.arguments.some((a) => /\btenant\b/.test(a.getText(source)))) {
        findings.push({ file, line: lineOf(node), message: `a knex ${node.expression.name.text} that does not name the tenant: ${node.getText(source).slice(0, 160)}` });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return findings;
}
