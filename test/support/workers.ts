import { expect } from "chai";
import type { Database } from "../../src/db/database.js";
import { EXAMPLE_DEFINITION, exampleGraph } from "../../src/demo/seed.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import type { Services } from "../../src/services.js";
import knexFactory from "knex";
import { createServices } from "../../src/services.js";
import type { Config } from "../../src/config.js";
import type { InHandKey } from "../../src/tasks/in-hand.js";
import { loadConfig } from "../../src/config.js";
import { backend, randomTenant, TEST_DATABASE_URL } from "./backends.js";
import { Camunda7Engine, type Camunda7Kind, type Camunda7Options } from "./camunda7.js";
import { TEST_JWT_SECRET } from "./tokens.js";
import { freePort, startNode, type RunningProcess } from "./process.js";

/**
 * The example definition with a transform that takes a couple of seconds (JSONata yields to the
 * event loop while it runs): a task that is surely in hand when a signal or a lock deadline comes.
 */
export const SLOW_DEFINITION = {
  ...EXAMPLE_DEFINITION,
  externalId: "slow-access-points",
  transform: '( $loop := function($i){ $i < 400000 ? $loop($i + 1) : $i }; { "accessPoints": result(?accessPoint) { externalId }, "steps": $loop(0) } )',
};

/**
 * A transform of some 11 s (measured: 3.7 µs a step): surely in hand when its worker is killed,
 * yet short enough that a run of it would show as a completion within a test.
 */
export const LONG_DEFINITION = {
  ...EXAMPLE_DEFINITION,
  externalId: "long-access-points",
  transform: '( $loop := function($i){ $i < 3000000 ? $loop($i + 1) : $i }; { "accessPoints": result(?accessPoint) { externalId }, "steps": $loop(0) } )',
};

/**
 * What the workers' end-to-end tests run against in one tenant: agreement AGR-1 with two access
 * points and AGR-EMPTY with none, the example, the slow and the long API definitions, and the calculation
 * `doubled` (a VALUE input times two).
 */
export async function seedWorkerTenant(services: Services, db: Database, tenant: string): Promise<void> {
  const { entities, links } = exampleGraph(tenant, [
    { publicId: "AGR-1", accessPoints: [["EAN-1", "GAS"], ["EAN-2", "WATER"]] },
    { publicId: "AGR-EMPTY", accessPoints: [] },
  ]);
  await upsertEntities(db.knex, tenant, entities);
  await createLinks(db.knex, tenant, links);
  await services.apiDefinitions.create(tenant, EXAMPLE_DEFINITION);
  await services.apiDefinitions.create(tenant, SLOW_DEFINITION);
  await services.apiDefinitions.create(tenant, LONG_DEFINITION);
  await services.calculations.create(tenant, {
    externalId: "doubled",
    calculationType: "EXPRESSION",
    data: { inputDefinitions: [{ name: "a", type: "VALUE" }], calculation: { expression: "a * 2", expressionType: "VALUE", scope: { a: { type: "VALUE", value: 0 } } } },
  });
}

/** Services whose database is unreachable: every task meets a passing fault (UNAVAILABLE). */
export function servicesWithDatabaseDown(config: Config, db: Database): { services: Services; close: () => Promise<void> } {
  const down = knexFactory({ client: "pg", connection: "postgres://postgres@127.0.0.1:1/test", acquireConnectionTimeout: 500, log: { warn: () => {}, error: () => {} } });
  return { services: createServices(config, { ...db, knex: down, graph: { knex: down, presetTimeoutMs: undefined } }), close: () => down.destroy() };
}

/** Polls until `done` holds; throws naming `what` after the timeout. */
export async function waitUntil(done: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The `task` log lines of a worker with the given outcome. */
export function taskLines(entries: Record<string, unknown>[], outcome: string): Record<string, unknown>[] {
  return entries.filter((e) => e.message === "task" && e.outcome === outcome);
}

/** A process's log shows the task completed after "shutting down" and before "stopped". */
export function expectCompletedWhileStopping(lines: string[]): void {
  const text = lines.join("\n");
  expect(text.indexOf("shutting down"), text).to.be.greaterThanOrEqual(0);
  expect(text.indexOf('"outcome":"completed"'), text).to.be.greaterThan(text.indexOf("shutting down"));
  expect(text.indexOf('"message":"stopped"'), text).to.be.greaterThan(text.indexOf('"outcome":"completed"'));
}

/** A task's row in tasks_in_hand, or undefined when it has none. */
export async function inHandRow(knex: Database["knex"], key: InHandKey): Promise<{ worker_id: string; topic: string; attempts: number } | undefined> {
  const rows: { worker_id: string; topic: string; attempts: number }[] = await knex("tasks_in_hand").where({ engine: key.engine, task_key: key.taskKey }).select("worker_id", "topic", "attempts");
  return rows[0];
}

/**
 * `npm run worker` as a child process on the test database, with a 2 s lock / job timeout, two
 * default retries and room for long transforms; answers once its worker has started, with the
 * worker id it logged.
 */
export async function startWorkerProcess(env: Record<string, string>): Promise<{ process: RunningProcess; workerId: string }> {
  const child = startNode("dist/src/worker.js", {
    DATABASE_URL: TEST_DATABASE_URL,
    PORT: String(await freePort()),
    HOST: "127.0.0.1",
    TRANSFORM_TIMEOUT_MS: "60000",
    WORKER_LOCK_DURATION_MS: "2000",
    WORKER_DEFAULT_RETRIES: "2",
    ...env,
  });
  try {
    const started = JSON.parse(await child.waitFor(/worker started/)) as { workerId: string };
    return { process: child, workerId: started.workerId };
  } catch (err) {
    child.kill();
    throw err;
  }
}

/** The `task` log lines of a worker process, parsed. */
export function processTaskLines(lines: string[]): Record<string, unknown>[] {
  return lines.filter((l) => l.includes('"message":"task"')).map((l) => JSON.parse(l) as Record<string, unknown>);
}

/**
 * A Camunda 7 API engine of the given kind with the example api-request model deployed, and a fresh
 * tenant seeded for the workers on the tests' PostgreSQL: what a suite of worker processes needs.
 */
export async function camunda7WorkerSetup(kind: Camunda7Kind, options?: Camunda7Options): Promise<{ engine: Camunda7Engine; db: Database; tenant: string }> {
  const engine = await Camunda7Engine.start(kind, options);
  await engine.deploy("bpmn/camunda7/api-request-example.bpmn");
  const db = await backend("postgres");
  const tenant = randomTenant();
  await seedWorkerTenant(createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }), db), db, tenant);
  return { engine, db, tenant };
}
