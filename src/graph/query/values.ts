import { ProblemError } from "../../errors.js";
import type { Value } from "./ast.js";

/** Values for `${name}` parameters, by name. */
export type QueryParameters = Readonly<Record<string, unknown>>;

type Scalar = string | number | boolean;

function parameter(name: string, params: QueryParameters): Scalar {
  if (!Object.prototype.hasOwnProperty.call(params, name)) {
    throw new ProblemError("INVALID_QUERY_PARAMETERS", `the query uses \${${name}} but no value was given for it`, {
      errors: [{ path: `queryParameters.${name}`, message: "missing" }],
    });
  }
  const value = params[name];
  if (typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))) return value;
  throw new ProblemError("INVALID_QUERY_PARAMETERS", `the value of \${${name}} must be a string, a number or a boolean`, {
    errors: [{ path: `queryParameters.${name}`, message: "must be a string, a number or a boolean" }],
  });
}

/** The value a clause compares with, parameters substituted. Labels never reach here. */
export function resolveValue(value: Value, params: QueryParameters): Scalar {
  switch (value.kind) {
    case "string":
      return value.parts.map((part) => (typeof part === "string" ? part : String(parameter(part.param, params)))).join("");
    case "number":
    case "boolean":
      return value.value;
    case "param":
      return parameter(value.name, params);
    case "label":
      throw new Error("a label value is compiled as a join, not bound");
  }
}

export function textOf(value: Scalar): string {
  return String(value);
}
