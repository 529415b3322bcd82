import type { ProblemDetail } from "../errors.js";
import { ProblemError } from "../errors.js";
import type { ParamRef, Value } from "../graph/query/ast.js";
import { compileQuery, type CompiledQuery } from "../graph/query/compiler.js";
import { QuerySyntaxError } from "../graph/query/errors.js";
import { parseQuery } from "../graph/query/parser.js";
import { positionAt } from "../transform/rewrite.js";
import type { TransformLimits } from "../transform/protocol.js";
import { compileTransform, type CompiledTransform } from "../transform/transform.js";
import type { EventDateRange } from "../timeseries/periods.js";
import type { QueryOptions } from "../timeseries/query.js";
import { seriesRequestProblems } from "../timeseries/service.js";
import { isEmptyTransform, type ApiDefinitionInput } from "./api-definition.js";

/** A definition checked and compiled: ready to run many times. */
export interface CompiledDefinition {
  query: CompiledQuery;
  /** Undefined when the transform is empty: the query output is the answer. */
  transform: CompiledTransform | undefined;
  /** Declared parameter names, header parameters included. */
  declared: Set<string>;
}

const PARAMETER_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Checks a definition against the contract's §3.1 and compiles it. Every problem is listed, with
 * its place: the path in the definition, and line and column in the query or the transform.
 */
export function checkDefinition(input: ApiDefinitionInput, limits: TransformLimits): { compiled?: CompiledDefinition; problems: ProblemDetail[] } {
  const problems: ProblemDetail[] = [];
  const declared = new Set<string>();
  (input.data?.queryParameters ?? []).forEach((p, i) => {
    if (!PARAMETER_NAME.test(p.name)) {
      problems.push({ path: `data.queryParameters[${i}].name`, message: `"${p.name}" is not a parameter name (letters, digits and _, not starting with a digit)` });
    } else if (declared.has(p.name)) {
      problems.push({ path: `data.queryParameters[${i}].name`, message: `parameter "${p.name}" is declared twice` });
    }
    declared.add(p.name);
  });
  const timelines = new Set<string>();
  (input.data?.timelineParameters ?? []).forEach((t, i) => {
    if (!PARAMETER_NAME.test(t.name)) problems.push({ path: `data.timelineParameters[${i}].name`, message: `"${t.name}" is not a timeline name` });
    else if (timelines.has(t.name)) problems.push({ path: `data.timelineParameters[${i}].name`, message: `timeline "${t.name}" is declared twice` });
    timelines.add(t.name);
    for (const problem of seriesRequestProblems({ eventDateRange: t.eventDateRange as EventDateRange, queryOptions: t.queryOptions as QueryOptions })) {
      problems.push({ ...problem, path: `data.timelineParameters[${i}].${problem.path ?? ""}` });
    }
  });

  // The query: it parses, and every ${name} in it is declared.
  let query: CompiledQuery | undefined;
  const used = new Set<string>();
  try {
    const ast = parseQuery(input.query);
    query = compileQuery(ast);
    for (const statement of ast.statements) {
      for (const clause of statement.clauses) {
        if (clause.kind === "link") continue;
        for (const ref of paramRefs(clause.value)) {
          used.add(ref.param);
          if (!declared.has(ref.param)) {
            problems.push({
              path: "query",
              message: undeclaredMessage(ref.param),
              line: ref.pos.line,
              column: ref.pos.column,
            });
          }
        }
      }
    }
  } catch (err) {
    if (!(err instanceof QuerySyntaxError)) throw err;
    problems.push(...(err.errors ?? []));
  }

  // The transform, when there is one: it parses, its ${name} are declared, its labels exist.
  let transform: CompiledTransform | undefined;
  if (!isEmptyTransform(input.transform)) {
    const text = input.transform!;
    const result = compileTransform(text, limits);
    problems.push(...result.problems);
    transform = result.transform;
    if (transform !== undefined) {
      for (const ref of transform.rewritten.params) {
        used.add(ref.name);
        if (!declared.has(ref.name)) {
          const at = positionAt(text, ref.offset);
          problems.push({ path: "transform", message: undeclaredMessage(ref.name), line: at.line, column: at.column });
        }
      }
      const labels = new Set(query?.labels.map((l) => l.name) ?? []);
      for (const use of transform.results) {
        const at = positionAt(text, use.offset);
        if (query !== undefined && !labels.has(use.label)) {
          problems.push({ path: "transform", message: `result(?${use.label}) names a label the query does not bind`, line: at.line, column: at.column });
        }
      }
    }
  }

  (input.data?.queryParameters ?? []).forEach((p, i) => {
    if (PARAMETER_NAME.test(p.name) && !used.has(p.name)) {
      problems.push({ path: `data.queryParameters[${i}]`, message: `parameter "${p.name}" is declared but used in neither the query nor the transform` });
    }
  });

  if (problems.length > 0 || query === undefined) return { problems };
  return { compiled: { query, transform, declared }, problems };
}

/** Like {@link checkDefinition}, but a definition with problems is a 400 INVALID_DEFINITION listing them all. */
export function compileDefinition(input: ApiDefinitionInput, limits: TransformLimits): CompiledDefinition {
  const { compiled, problems } = checkDefinition(input, limits);
  if (compiled === undefined) {
    const first = problems[0];
    const where = first?.line !== undefined ? ` (${first.path}, line ${first.line}, column ${first.column})` : first?.path !== undefined ? ` (${first.path})` : "";
    throw new ProblemError("INVALID_DEFINITION", `the definition has ${problems.length} problem(s); the first: ${first?.message ?? "unknown"}${where}`, {
      errors: problems,
    });
  }
  return compiled;
}

function undeclaredMessage(name: string): string {
  return name === "userId" || name === "tenantId"
    ? `\${${name}} is used but not declared: add { "name": "${name}", "type": "string" } to data.queryParameters`
    : `\${${name}} is used but not declared in data.queryParameters`;
}

function paramRefs(value: Value): ParamRef[] {
  if (value.kind === "param") return [{ param: value.name, pos: value.pos }];
  if (value.kind === "string") return value.parts.filter((p): p is ParamRef => typeof p !== "string");
  return [];
}
