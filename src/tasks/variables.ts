import { ProblemError } from "../errors.js";
import { depthFault, inputFaults, textFault } from "../input.js";
import { parseJson } from "../json.js";

/**
 * Process variables arrive typed (a JSON object) or as text holding JSON (a String variable set by
 * a script or a form): both are accepted for the object-valued inputs.
 */
export function objectVariable(value: unknown, name: string): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  let parsed: unknown = value;
  if (typeof value === "string") {
    try {
      parsed = parseJson(value);
    } catch {
      throw invalidVariable(name, "must be a JSON object (typed, or as text holding JSON)");
    }
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw invalidVariable(name, "must be a JSON object");
  // The same text rules as a REST body (docs/reference/input-limits.md): a process variable is input too.
  const fault = inputFaults(parsed, name)[0] ?? depthFault(parsed, name);
  if (fault !== undefined) throw new ProblemError("INVALID_REQUEST", `process variable ${fault.path} ${fault.message}`, { errors: [fault] });
  return parsed as Record<string, unknown>;
}

export function textVariable(value: unknown, name: string, required = false): string | undefined {
  if (value === undefined || value === null || value === "") {
    if (required) throw invalidVariable(name, "is required");
    return undefined;
  }
  if (typeof value !== "string") throw invalidVariable(name, "must be text");
  const fault = textFault(value);
  if (fault !== undefined) throw invalidVariable(name, fault);
  return value;
}

export function invalidVariable(name: string, message: string): ProblemError {
  return new ProblemError("INVALID_REQUEST", `process variable ${name} ${message}`, { errors: [{ path: name, message }] });
}

/** The variable the result is written to: `resultVariable`, default `result`. */
export function resultVariable(value: unknown): string {
  const name = textVariable(value, "resultVariable") ?? "result";
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw invalidVariable("resultVariable", "must be a variable name (letters, digits, _)");
  return name;
}

/** The tenant a task runs in: the `tenantId` variable, else the engine's tenant of the task. */
export function taskTenant(variable: unknown, engineTenant: string | undefined | null): string {
  const tenant = textVariable(variable, "tenantId") ?? engineTenant ?? undefined;
  if (tenant === undefined || tenant.trim() === "") {
    throw new ProblemError("MISSING_TENANT", "the task has no tenant: set the process variable tenantId or deploy the process for a tenant");
  }
  return tenant.trim();
}
