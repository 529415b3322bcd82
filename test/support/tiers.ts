import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";

/**
 * The test tiers of test/tiers.json, each a list of test files (paths from the repository's root):
 * - unit: pure code; no database, no server, no child process, no browser, no engine. Seconds.
 * - db: uses a database (both backends, through test/support/backends or openDatabase), with the
 *   service in the test's own process (fastify's inject or a listening port; the service's transform
 *   pool may start its processes).
 * - e2e: starts processes itself (the service, a worker, a replica, a temporary PostgreSQL, the
 *   transform pool), a browser, or a process engine (Camunda 7/Operaton, the Zeebe gateway stand-in).
 */
export type Tiers = Record<string, string[]>;

/** The repository's root, from dist/test/support/ or test/support/. */
export const REPOSITORY = join(import.meta.dirname, import.meta.dirname.includes(`${sep}dist${sep}`) ? "../../.." : "../..");

export function readTiers(root = REPOSITORY): Tiers {
  return JSON.parse(readFileSync(join(root, "test/tiers.json"), "utf8")) as Tiers;
}

/** Every test file under test/, as a path from the root with forward slashes. */
export function testFiles(root = REPOSITORY): string[] {
  return readdirSync(join(root, "test"), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".test.ts"))
    .map((file) => relative(root, join(root, "test", file)).split(sep).join("/"))
    .sort();
}

/** Each test file in no tier or in two, each listed file that does not exist, and each tier name that is not unit, db or e2e. */
export function tierProblems(files: string[], tiers: Tiers): string[] {
  const problems = Object.keys(tiers)
    .filter((name) => !["unit", "db", "e2e"].includes(name))
    .map((name) => `unknown tier ${name}`);
  const tiersOf = new Map<string, string[]>(files.map((file) => [file, []]));
  for (const [name, listed] of Object.entries(tiers)) {
    for (const file of listed) {
      const of = tiersOf.get(file);
      if (of === undefined) problems.push(`${file} (tier ${name}) is not a test file`);
      else of.push(name);
    }
  }
  for (const [file, of] of tiersOf) {
    if (of.length === 0) problems.push(`${file} is in no tier`);
    if (of.length > 1) problems.push(`${file} is in ${of.length} tiers: ${of.join(", ")}`);
  }
  return problems;
}

/** Imports that bring a database, a server, a process or a browser into a test file. */
const NOT_UNIT_IMPORTS: RegExp[] = [
  /support\/(backends|server|demo|streams|workers|camunda7|zeebe-gateway|pg-instance|proxy)\.js$/,
  /src\/db\//,
  /src\/transform\/pool\.js$/,
  /^(node:)?child_process$/,
  /^(pg|knex|knex-pglite|@electric-sql\/pglite|playwright-core|tinypool)$/,
];

/** Calls that start a process, a server, a database or a browser. */
const NOT_UNIT_CALLS =
  /\b(spawn|spawnSync|fork|execFile|execFileSync|execSync|startNode|startWorkerProcess|startReplica|testServer|adminServer|demoServer|openDatabase|backend|describeEachBackend|TransformPool|Tinypool|Camunda7Engine|ZeebeGateway|TemporaryPostgres|chromium)\s*\(/;

/**
 * What in a unit-tier file's source is not unit: the modules it imports that are (above, or a test
 * file of another tier) and the calls that start something. A look at the file's own text, not at
 * what its imports import.
 */
export function unitProblems(file: string, source: string, tierOf: (testFile: string) => string | undefined): string[] {
  const problems: string[] = [];
  for (const [, named, bare] of source.matchAll(/^\s*(?:import|export)\b[^"';]*?\bfrom\s+["']([^"']+)["']|^\s*import\s*\(?\s*["']([^"']+)["']/gm)) {
    const from = named ?? bare;
    if (from === undefined) continue;
    if (NOT_UNIT_IMPORTS.some((pattern) => pattern.test(from))) problems.push(`${file} imports ${from}`);
    if (from.endsWith(".test.js")) {
      const imported = join(file, "..", from.replace(/\.js$/, ".ts")).split(sep).join("/");
      if (tierOf(imported) !== "unit") problems.push(`${file} imports ${from}, a test file outside the unit tier`);
    }
  }
  const call = NOT_UNIT_CALLS.exec(source);
  if (call !== null) problems.push(`${file} calls ${call[1]!}`);
  return problems;
}
