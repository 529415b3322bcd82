import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";

/**
 * The official JSONata test suite (jsonata-js/jsonata `test/test-suite/`), read from a folder
 * outside the project: `groups/<group>/caseNNN.json` (one case or an array of cases), the
 * `.jsonata` files some cases name with `expr-file`, and `datasets/`.
 */

/** What a case expects: a value, no value, or an error with its code. */
export type JsonataSuiteOutcome =
  | { kind: "result"; value: unknown; /** The order of an array result does not matter. */ unordered: boolean }
  | { kind: "undefined" }
  | { kind: "error"; code: string; token?: string; message?: string };

export interface JsonataSuiteCase {
  /** `group/caseNNN`, with `[i]` for the i-th case of a file that holds several. */
  id: string;
  group: string;
  expr: string;
  /** The input: the case's `data`, or its `dataset` read from `datasets/`; undefined for none. */
  input: unknown;
  bindings: Record<string, unknown>;
  /** Milliseconds and evaluation depth a case is allowed, where it says. */
  timelimit?: number;
  depth?: number;
  outcome: JsonataSuiteOutcome;
  description?: string;
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

function expectString(value: unknown, what: string, id: string): string {
  if (typeof value !== "string") throw new Error(`JSONata suite case ${id}: ${what} is not a string`);
  return value;
}

function optionalNumber(value: unknown, what: string, id: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number") throw new Error(`JSONata suite case ${id}: ${what} is not a number`);
  return value;
}

function outcomeOf(raw: Json, id: string): JsonataSuiteOutcome {
  if ("result" in raw) return { kind: "result", value: raw.result, unordered: raw.unordered === true };
  if (raw.undefinedResult === true) return { kind: "undefined" };
  if ("code" in raw) {
    const token = raw.token === undefined ? {} : { token: expectString(raw.token, "token", id) };
    return { kind: "error", code: expectString(raw.code, "code", id), ...token };
  }
  if (isObject(raw.error)) {
    const { code, token, message } = raw.error;
    return {
      kind: "error",
      code: expectString(code, "error.code", id),
      ...(token === undefined ? {} : { token: expectString(token, "error.token", id) }),
      ...(message === undefined ? {} : { message: expectString(message, "error.message", id) }),
    };
  }
  throw new Error(`JSONata suite case ${id}: none of result, undefinedResult, code or error`);
}

/** Reads every case of the suite in `dir`, in group and file order; throws, naming the folder, if it is not there. */
export function loadJsonataSuite(dir: string): JsonataSuiteCase[] {
  const groupsDir = path.join(dir, "groups");
  if (!existsSync(groupsDir)) {
    throw new Error(`the JSONata test suite is not at ${path.resolve(dir)} (no groups/ folder there): set JSONATA_SUITE_DIR to its folder`);
  }
  const datasets = new Map<string, unknown>();
  const dataset = (name: string) => {
    if (!datasets.has(name)) datasets.set(name, JSON.parse(readFileSync(path.join(dir, "datasets", `${name}.json`), "utf8")));
    return datasets.get(name);
  };

  const cases: JsonataSuiteCase[] = [];
  for (const group of readdirSync(groupsDir).sort()) {
    const groupDir = path.join(groupsDir, group);
    for (const file of readdirSync(groupDir).filter((f) => f.endsWith(".json")).sort()) {
      const parsed: unknown = JSON.parse(readFileSync(path.join(groupDir, file), "utf8"));
      const raws = Array.isArray(parsed) ? parsed : [parsed];
      raws.forEach((raw: unknown, i) => {
        const id = `${group}/${file.replace(/\.json$/, "")}${Array.isArray(parsed) ? `[${i}]` : ""}`;
        if (!isObject(raw)) throw new Error(`JSONata suite case ${id} is not an object`);
        const expr =
          raw["expr-file"] !== undefined
            ? readFileSync(path.join(groupDir, expectString(raw["expr-file"], "expr-file", id)), "utf8")
            : expectString(raw.expr, "expr", id);
        const input = "data" in raw ? raw.data : typeof raw.dataset === "string" ? dataset(raw.dataset) : undefined;
        cases.push({
          id,
          group,
          expr,
          input,
          bindings: isObject(raw.bindings) ? raw.bindings : {},
          timelimit: optionalNumber(raw.timelimit, "timelimit", id),
          depth: optionalNumber(raw.depth, "depth", id),
          outcome: outcomeOf(raw, id),
          ...(typeof raw.description === "string" ? { description: raw.description } : {}),
        });
      });
    }
  }
  return cases;
}
