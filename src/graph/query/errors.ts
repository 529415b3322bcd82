import { ProblemError } from "../../errors.js";
import type { Position } from "./ast.js";

/**
 * A query that does not follow the grammar (shared/CONTRACT.md §2), or that follows it but
 * contradicts itself (a label of two types). The only error the lexer and parser ever throw.
 */
export class QuerySyntaxError extends ProblemError {
  constructor(
    readonly pos: Position,
    readonly found: string,
    readonly expected: string,
    message = `expected ${expected}, found ${found}`,
  ) {
    super("INVALID_DEFINITION", `query: line ${pos.line}, column ${pos.column}: ${message}`, {
      errors: [{ message, line: pos.line, column: pos.column, found, expected, path: "query" }],
    });
    this.name = "QuerySyntaxError";
  }
}
