/**
 * The official JSONata test suite through the project's transform path — rewritten by our lexer,
 * compiled with our limits, evaluated in the transform pool's child processes, its result sent back
 * as JSON — next to plain jsonata run as the suite's own runner runs it. Every case must have the
 * same outcome on both: the same JSON result, both no result, or the same error code. The one
 * documented difference: our sequence limit (1,000,000) refuses what plain jsonata builds longer.
 *
 *   npm run conformance            (the suite's folder: JSONATA_SUITE_DIR, default ../shared/jsonata-test-suite)
 *
 * Exits 1 when a case differs otherwise, 2 when the suite cannot be read.
 */
import { isDeepStrictEqual } from "node:util";
import path from "node:path";
import jsonata from "jsonata";
import { ProblemError } from "../../src/errors.js";
import { TransformPool } from "../../src/transform/pool.js";
import { compileTransform, DEFAULT_TRANSFORM_LIMITS } from "../../src/transform/transform.js";
import { loadJsonataSuite, type JsonataSuiteCase } from "../support/jsonata-suite.js";

/** What a case came to: a JSON value (its text), no value, or an error code. */
type Outcome = { kind: "value"; json: string } | { kind: "undefined" } | { kind: "error"; code: string };

/** Runaway evaluations: the suite's runner says U1001, JSONata's own guards D1011/D1012, our pool its time limit. */
const RUNAWAY = new Set(["U1001", "D1011", "D1012", "TRANSFORM_TIMEOUT_MS"]);
const SEQUENCE_LIMIT = "D2015";
const DEFAULT_TIMELIMIT_MS = 10_000;

function normalise(outcome: Outcome): Outcome {
  return outcome.kind === "error" && RUNAWAY.has(outcome.code) ? { kind: "error", code: "runaway" } : outcome;
}

function valueOutcome(value: unknown): Outcome {
  const json = JSON.stringify(value);
  return json === undefined ? { kind: "undefined" } : { kind: "value", json };
}

function errorCode(err: unknown): string {
  if (err instanceof ProblemError) {
    const first = err.errors?.[0];
    return String(first?.jsonataCode ?? first?.limit ?? err.code);
  }
  if (typeof err === "object" && err !== null && "code" in err) return String((err as { code: unknown }).code);
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** Plain jsonata, guarded as the suite's runner guards it (depth and time counted on entry and exit of every step). */
async function plainOutcome(c: JsonataSuiteCase): Promise<Outcome> {
  let expression: jsonata.Expression;
  try {
    expression = jsonata(c.expr);
  } catch (err) {
    return { kind: "error", code: errorCode(err) };
  }
  if (c.timelimit !== undefined && c.depth !== undefined) {
    const { timelimit, depth: maxDepth } = c;
    let depth = 0;
    const started = Date.now();
    const check = () => {
      if (depth > maxDepth || Date.now() - started > timelimit) throw { code: "U1001", message: "runaway" };
    };
    type Env = { isParallelCall?: boolean };
    expression.assign(Symbol.for("jsonata.__evaluate_entry") as unknown as string, (_e: unknown, _i: unknown, env: Env) => {
      if (env.isParallelCall !== true) {
        depth++;
        check();
      }
    });
    expression.assign(Symbol.for("jsonata.__evaluate_exit") as unknown as string, (_e: unknown, _i: unknown, env: Env) => {
      if (env.isParallelCall !== true) {
        depth--;
        check();
      }
    });
  }
  try {
    return valueOutcome(await expression.evaluate(c.input, c.bindings));
  } catch (err) {
    return { kind: "error", code: errorCode(err) };
  }
}

/** The project's path: the case's depth and time limit become the transform's. */
async function projectOutcome(c: JsonataSuiteCase, pool: TransformPool): Promise<Outcome> {
  const limits = { ...DEFAULT_TRANSFORM_LIMITS, ...(c.depth !== undefined ? { maxDepth: c.depth } : {}), timeoutMs: c.timelimit ?? DEFAULT_TIMELIMIT_MS };
  const { transform, problems } = compileTransform(c.expr, limits);
  if (transform === undefined) return { kind: "error", code: String(problems[0]?.jsonataCode ?? problems[0]?.message) };
  try {
    return valueOutcome(await pool.evaluate(transform, { queryOutput: c.input as Record<string, unknown[]>, params: {}, bindings: c.bindings }));
  } catch (err) {
    return { kind: "error", code: errorCode(err) };
  }
}

/** Whether an outcome is what the suite expects (informative: plain jsonata is the reference). */
function meetsExpectation(c: JsonataSuiteCase, outcome: Outcome): boolean {
  const expected = c.outcome;
  if (expected.kind === "undefined") return outcome.kind === "undefined";
  if (expected.kind === "error") return outcome.kind === "error" && (outcome.code === expected.code || (expected.code === "U1001" && outcome.code === "runaway"));
  if (outcome.kind !== "value") return false;
  const actual: unknown = JSON.parse(outcome.json);
  if (isDeepStrictEqual(actual, expected.value)) return true;
  if (expected.unordered && Array.isArray(actual) && Array.isArray(expected.value)) {
    const sort = (a: unknown[]) => a.map((v) => JSON.stringify(v)).sort();
    return isDeepStrictEqual(sort(actual), sort(expected.value));
  }
  // Numbers the suite writes with fewer digits than the engine computes.
  return typeof actual === "number" && typeof expected.value === "number" && Math.abs(actual - expected.value) <= 1e-10 * Math.max(1, Math.abs(actual));
}

async function main(): Promise<number> {
  const dir = process.env.JSONATA_SUITE_DIR ?? path.resolve(import.meta.dirname, "../../../../shared/jsonata-test-suite");
  let cases: JsonataSuiteCase[];
  try {
    cases = loadJsonataSuite(dir);
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    return 2;
  }
  const pool = new TransformPool({ timeoutMs: DEFAULT_TIMELIMIT_MS, maxResultBytes: 64 * 1024 * 1024, memoryMb: 512 });
  const differences: string[] = [];
  const sequenceLimit: string[] = [];
  let same = 0;
  let plainMeets = 0;
  let projectMeets = 0;
  try {
    for (const c of cases) {
      const plain = normalise(await plainOutcome(c));
      const project = normalise(await projectOutcome(c, pool));
      if (meetsExpectation(c, plain)) plainMeets++;
      if (meetsExpectation(c, project)) projectMeets++;
      if (isDeepStrictEqual(plain, project)) same++;
      else if (project.kind === "error" && project.code === SEQUENCE_LIMIT) sequenceLimit.push(c.id);
      else differences.push(`${c.id}: plain ${JSON.stringify(plain).slice(0, 200)} vs project ${JSON.stringify(project).slice(0, 200)}\n    ${c.expr.slice(0, 200)}`);
    }
  } finally {
    await pool.close();
  }
  console.log(`JSONata suite (${dir}): ${cases.length} cases`);
  console.log(`  same outcome as plain jsonata: ${same}`);
  console.log(`  refused by the sequence limit (documented): ${sequenceLimit.length}${sequenceLimit.length > 0 ? ` (${sequenceLimit.join(", ")})` : ""}`);
  console.log(`  different: ${differences.length}`);
  console.log(`  as the suite expects: plain jsonata ${plainMeets}, project ${projectMeets}`);
  for (const d of differences) console.log(`  DIFFERENT ${d}`);
  return differences.length === 0 ? 0 : 1;
}

process.exitCode = await main();
