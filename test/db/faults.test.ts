import { randomUUID } from "node:crypto";
import { request } from "node:http";
import { expect } from "chai";
import knexFactory, { type Knex } from "knex";
import { loadConfig } from "../../src/config.js";
import { openDatabase } from "../../src/db/database.js";
import { EXAMPLE_DEFINITION } from "../../src/demo/seed.js";
import { createServices } from "../../src/services.js";
import { Camunda7Engine } from "../support/camunda7.js";
import { TemporaryPostgres } from "../support/pg-instance.js";
import { ENGINE_START_TIMEOUT_MS, freePort, startNode, type RunningProcess } from "../support/process.js";
import { adminToken, TEST_JWT_SECRET } from "../support/tokens.js";
import { processTaskLines, seedWorkerTenant, waitUntil } from "../support/workers.js";

/** The bounds the service under test runs with (short, so that the faults pass quickly). */
const STATEMENT_TIMEOUT_MS = 2000;
const LIMITS = {
  DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
  QUERY_TIMEOUT_MS: "1000",
  DATABASE_CONNECT_TIMEOUT_MS: "1000",
  DATABASE_ACQUIRE_TIMEOUT_MS: "2000",
  DATABASE_PROBE_TIMEOUT_MS: "500",
  DATABASE_KEEPALIVE_MS: "1000",
};

interface Outcome {
  kind: "entity" | "event";
  n: number;
  status: number;
  contentType: string;
  code?: string;
  started: number;
  ms: number;
}

/** The service as its own process on the temporary instance. */
async function startService(pg: TemporaryPostgres, env: Record<string, string> = {}): Promise<{ process: RunningProcess; base: string }> {
  const port = await freePort();
  const child = startNode("dist/src/main.js", { DATABASE_URL: pg.url(), PORT: String(port), HOST: "127.0.0.1", JWT_SECRET: TEST_JWT_SECRET, ...LIMITS, ...env });
  try {
    await child.waitFor(/"message":"listening"/, 30_000);
  } catch (err) {
    child.kill();
    throw err;
  }
  return { process: child, base: `http://127.0.0.1:${port}` };
}

/** Creates an `INGEST` item (an entity of type Item) of the tenant; answers its id. */
async function createItem(base: string, token: string, tenant: string): Promise<string> {
  const id = randomUUID();
  const res = await fetch(`${base}/graph/entities`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenant, "content-type": "application/json" },
    body: JSON.stringify({ entities: [{ type: "Item", key: `item-${id}`, id, attributes: { itemAction: "INGEST" } }] }),
  });
  expect(res.status, await res.text()).to.be.oneOf([200, 201]);
  return id;
}

/**
 * Writers that store one entity or one event per request, one request at a time each, until
 * stopped; every answer is kept with its timing.
 */
class SteadyWriters {
  readonly outcomes: Outcome[] = [];
  private running = true;
  private next = 0;
  private readonly done: Promise<void[]>;

  constructor(
    private readonly base: string,
    private readonly token: string,
    readonly tenant: string,
    readonly itemId: string,
    writers: number,
  ) {
    this.done = Promise.all(Array.from({ length: writers }, () => this.loop()));
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const n = this.next++;
      const kind = n % 2 === 0 ? "entity" : "event";
      const started = Date.now();
      const [path, body] =
        kind === "entity"
          ? ["/graph/entities", { entities: [{ type: "Fault", key: `k${n}`, attributes: { n } }] }]
          : [`/items/${this.itemId}/events`, { events: [{ timestamp: new Date(Date.UTC(2024, 0, 1) + n * 1000).toISOString(), value: n }] }];
      let outcome: Outcome;
      try {
        const res = await fetch(`${this.base}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${this.token}`, "x-tenant-id": this.tenant, "content-type": "application/json" },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(30_000),
        });
        const text = await res.text();
        const code = res.ok ? undefined : (JSON.parse(text) as { code?: string }).code;
        outcome = { kind, n, status: res.status, contentType: res.headers.get("content-type") ?? "", ...(code !== undefined ? { code } : {}), started, ms: Date.now() - started };
      } catch (err) {
        outcome = { kind, n, status: 0, contentType: String(err), started, ms: Date.now() - started };
      }
      this.outcomes.push(outcome);
      // A refused request comes back at once: a short pause keeps the writers from spinning.
      if (outcome.status !== 200 && outcome.status !== 201) await new Promise((r) => setTimeout(r, 50));
    }
  }

  successesSince(t: number): number {
    return this.outcomes.filter((o) => o.started >= t && o.status >= 200 && o.status < 300).length;
  }

  async stop(): Promise<Outcome[]> {
    this.running = false;
    await this.done;
    return this.outcomes;
  }
}

/** Every acknowledged entity and event is stored: read straight from the instance. */
async function expectAcknowledgedStored(knex: Knex, writers: SteadyWriters, outcomes: Outcome[]): Promise<void> {
  const keys = new Set((await knex("entities").where({ tenant: writers.tenant, type: "Fault" }).select("key")).map((r: { key: string }) => r.key));
  const stamps = new Set(
    (await knex("events").where({ tenant: writers.tenant, item_id: writers.itemId }).select("ts")).map((r: { ts: Date }) => r.ts.getTime()),
  );
  const acknowledged = outcomes.filter((o) => o.status >= 200 && o.status < 300);
  const missing = acknowledged.filter((o) => (o.kind === "entity" ? !keys.has(`k${o.n}`) : !stamps.has(Date.UTC(2024, 0, 1) + o.n * 1000)));
  expect(acknowledged.length).to.be.greaterThan(0);
  expect(missing, "acknowledged rows missing").to.deep.equal([]);
}

/** Every failure is a 503 problem+json UNAVAILABLE, nothing else. */
function expectOnlyUnavailable(outcomes: Outcome[]): Outcome[] {
  const failures = outcomes.filter((o) => o.status < 200 || o.status >= 300);
  const other = failures.filter((o) => o.status !== 503 || !o.contentType.startsWith("application/problem+json") || o.code !== "UNAVAILABLE");
  expect(other, "failures other than 503 problem+json UNAVAILABLE").to.deep.equal([]);
  return failures;
}

async function health(base: string): Promise<{ status: number; ms: number; body: { detail?: string; status?: string } }> {
  const started = Date.now();
  const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(30_000) });
  return { status: res.status, body: (await res.json()) as { detail?: string }, ms: Date.now() - started };
}

describe("database faults, on a PostgreSQL instance of the test's own", function () {
  this.timeout(90_000);
  let pg: TemporaryPostgres;
  let service: { process: RunningProcess; base: string } | undefined;
  let direct: Knex;
  let token: string;
  const extra: RunningProcess[] = [];

  before(async () => {
    pg = await TemporaryPostgres.create();
    direct = knexFactory({ client: "pg", connection: pg.url(), pool: { min: 0, max: 2 } });
    service = await startService(pg);
    token = await adminToken();
  });
  afterEach(() => extra.splice(0).forEach((p) => p.kill()));
  after(async () => {
    service?.process.kill();
    await direct?.destroy();
    pg?.destroy();
  });

  /** Three writers in a fresh tenant, once 20 of their writes were stored. */
  const writing = async (prefix: string) => {
    const tenant = `${prefix}-${randomUUID()}`;
    const writers = new SteadyWriters(service!.base, token, tenant, await createItem(service!.base, token, tenant), 3);
    await waitUntil(() => writers.successesSince(0) >= 20, "writes before the fault");
    return writers;
  };

  it("stopped with -m immediate and started again: every acknowledged row stored, failures only 503, recovery without a restart", async () => {
    const writers = await writing("fault");
    const stoppedAt = Date.now();
    pg.stopImmediately();
    await waitUntil(() => writers.outcomes.some((o) => o.started > stoppedAt && o.status === 503), "a 503 while stopped");
    const down = await health(service!.base);
    pg.start();
    const startedAt = Date.now();
    await waitUntil(() => writers.successesSince(startedAt) >= 20, "writes after the start", 20_000);
    const outcomes = await writers.stop();

    const failures = expectOnlyUnavailable(outcomes);
    expect(failures.length).to.be.greaterThan(0);
    // Failures belong to the outage: none long after the start, and none waited long (a stopped database refuses at once).
    const lastFailure = Math.max(...failures.map((f) => f.started));
    expect(lastFailure - startedAt, "a failure well after the database came back").to.be.lessThan(10_000);
    expect(Math.max(...failures.map((f) => f.ms)), "a failure that took longer than the statement time-out").to.be.lessThan(STATEMENT_TIMEOUT_MS + 1000);
    expect(down.status).to.equal(503);
    expect(down.body.detail).to.match(/^the database does not answer: /);
    await expectAcknowledgedStored(direct, writers, outcomes);
    expect(service!.process.child.exitCode).to.equal(null);
    expect((await health(service!.base)).status).to.equal(200);
  });

  it("frozen with SIGSTOP: 503 within the statement time-out plus a second, /health within a second, recovery after SIGCONT", async () => {
    const writers = await writing("freeze");
    pg.freeze();
    // Taken once every process is stopped: a request begun while the freeze was being sent may still be answered.
    const frozenAt = Date.now();
    let healthWhileFrozen: Awaited<ReturnType<typeof health>>[];
    try {
      // Long enough for every writer's request to meet the frozen database more than once.
      await new Promise((r) => setTimeout(r, 2 * STATEMENT_TIMEOUT_MS + 1500));
      healthWhileFrozen = [await health(service!.base), await health(service!.base)];
    } finally {
      pg.thaw();
    }
    const thawedAt = Date.now();
    await waitUntil(() => writers.successesSince(thawedAt) >= 20, "writes after the thaw", 20_000);
    const outcomes = await writers.stop();

    const failures = expectOnlyUnavailable(outcomes);
    // Requests begun while frozen and answered before the thaw were all 503, each within the time-out plus a second.
    const whileFrozen = outcomes.filter((o) => o.started >= frozenAt && o.started + o.ms < thawedAt);
    expect(whileFrozen.length).to.be.greaterThan(2);
    expect(whileFrozen.filter((o) => o.status !== 503)).to.deep.equal([]);
    expect(failures.filter((o) => o.ms > STATEMENT_TIMEOUT_MS + 1000), "503s slower than the time-out plus a second").to.deep.equal([]);
    for (const h of healthWhileFrozen) {
      expect(h.status).to.equal(503);
      expect(h.body.detail).to.equal("the database does not answer: it did not answer in time");
      expect(h.ms, "/health took a second or more").to.be.lessThan(1000);
    }
    await expectAcknowledgedStored(direct, writers, outcomes);
    expect((await health(service!.base)).status).to.equal(200);
  });

  it("a streamed NDJSON upload whose connection is killed mid-transaction: 503 problem+json, the connection closed, nothing stored", async () => {
    const tenant = `stream-${randomUUID()}`;
    const itemId = await createItem(service!.base, token, tenant);
    const line = (i: number) => `${JSON.stringify({ timestamp: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString(), value: i })}\n`;
    const { hostname, port } = new URL(service!.base);
    let sent = 0;
    let clientError: string | undefined;
    let requestClosed: Promise<void> = Promise.resolve();
    const answer = new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: hostname,
          port,
          method: "POST",
          path: `/items/${itemId}/events`,
          headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenant, "content-type": "application/x-ndjson", "transfer-encoding": "chunked" },
        },
        (res) => {
          let text = "";
          res.on("data", (c: Buffer) => (text += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, type: String(res.headers["content-type"]), body: text }));
          res.on("error", reject);
        },
      );
      // Writing may fail once the server has answered and closed: that is the point.
      req.on("error", (err) => (clientError = err.message));
      requestClosed = new Promise((done) => req.once("close", () => done()));
      // Two batches (5,000 rows each) first: the first is written inside the upload's transaction.
      req.write(Array.from({ length: 6000 }, (_, i) => line(i)).join(""));
      sent = 6000;
      const more = async () => {
        // Seen idle and killed in one statement: between two, the backend could be busy with the next batch.
        await waitUntil(
          async () =>
            (await direct.raw("select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'process-task-backend' and state = 'idle in transaction'")).rows
              .length > 0,
          "the upload's transaction open and idle, then killed",
          10_000,
        );
        // The client keeps sending, far more than the server will read, and is never told to stop but by the answer.
        for (let chunk = 0; chunk < 40 && !req.destroyed && clientError === undefined; chunk++) {
          const ok = req.write(Array.from({ length: 5000 }, (_, i) => line(sent + i)).join(""));
          sent += 5000;
          if (!ok) await new Promise((r) => setTimeout(r, 20));
        }
        req.end();
      };
      more().catch(reject);
    });
    const res = await answer;
    expect(res.status).to.equal(503);
    expect(res.type).to.match(/^application\/problem\+json/);
    expect((JSON.parse(res.body) as { code: string }).code).to.equal("UNAVAILABLE");
    // The client is not left blocked: its request ends (drained to the end, or closed by the server).
    await requestClosed;
    expect((await direct("events").where({ tenant }).count<{ count: string }[]>("* as count"))[0]!.count).to.equal("0");
    expect(clientError ?? "none").to.be.oneOf(["none", "write EPIPE", "write ECONNRESET", "socket hang up", "read ECONNRESET"]);
  });

  it("started while the database is down: tries again with back-off and starts once it is up", async () => {
    pg.stopImmediately();
    let child: RunningProcess | undefined;
    try {
      const port = await freePort();
      child = startNode("dist/src/main.js", { DATABASE_URL: pg.url(), PORT: String(port), HOST: "127.0.0.1", JWT_SECRET: TEST_JWT_SECRET, ...LIMITS, DATABASE_STARTUP_TIMEOUT_MS: "30000" });
      extra.push(child);
      await child.waitFor(/cannot be reached \(attempt 2\)/, 15_000);
    } finally {
      pg.start();
    }
    await child.waitFor(/"message":"listening"/, 30_000);
    expect(child.child.exitCode).to.equal(null);
  });

  it("started with the database down past DATABASE_STARTUP_TIMEOUT_MS: exits 1 naming the database and the last error, no stack", async () => {
    const closed = await freePort();
    const child = startNode("dist/src/main.js", {
      DATABASE_URL: `postgres://postgres:secret@127.0.0.1:${closed}/service`,
      PORT: String(await freePort()),
      HOST: "127.0.0.1",
      JWT_SECRET: TEST_JWT_SECRET,
      ...LIMITS,
      DATABASE_STARTUP_TIMEOUT_MS: "1500",
    });
    extra.push(child);
    expect(await child.exited).to.equal(1);
    const failure = child.lines.find((l) => l.startsWith("failed to start"));
    expect(failure).to.equal(
      `failed to start: the database postgres://postgres:***@127.0.0.1:${closed}/service could not be reached within 1500 ms (DATABASE_STARTUP_TIMEOUT_MS, ${/attempts/.test(failure ?? "") ? failure!.match(/(\d+) attempts/)![1] : "?"} attempts); last error: connect ECONNREFUSED 127.0.0.1:${closed}`,
    );
    expect(Number(failure!.match(/(\d+) attempts/)![1])).to.be.greaterThan(1);
    expect(child.lines.filter((l) => /^\s+at /.test(l)), "a stack trace").to.deep.equal([]);
  });
});

describe("database faults with a Camunda 7 worker attached, on a PostgreSQL instance of the test's own", function () {
  this.timeout(180_000);
  let pg: TemporaryPostgres | undefined;
  let engine: Camunda7Engine | undefined;
  let service: { process: RunningProcess; base: string } | undefined;
  const tenant = `camunda-fault-${randomUUID()}`;

  before(async function () {
    this.timeout(ENGINE_START_TIMEOUT_MS + 60_000);
    [pg, engine] = await Promise.all([TemporaryPostgres.create(), Camunda7Engine.start()]);
    await engine.deploy("bpmn/camunda7/api-request-example.bpmn");
    const db = await openDatabase({ databaseUrl: pg.url(), dataDir: "memory://", poolSize: 2 });
    try {
      await seedWorkerTenant(createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }), db), db, tenant);
    } finally {
      await db.close();
    }
    service = await startService(pg, {
      CAMUNDA_URL: engine.baseUrl,
      CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: "1000",
      WORKER_LOCK_DURATION_MS: "5000",
      // Back-off of 1, 2, 4, 8, 16 s: the outage below passes well within it.
      WORKER_DEFAULT_RETRIES: "6",
    });
  });
  after(async () => {
    service?.process.kill();
    await engine?.stop();
    pg?.destroy();
  });

  it("stopped and started again while instances run: every instance ends exactly once, through the task's completion, none twice, none lost", async () => {
    const start = () => engine!.startInstance("api-request-example", { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, tenantId: tenant, queryParameters: { publicId: "AGR-1" } });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await start());
    await waitUntil(() => processTaskLines(service!.process.lines).some((l) => l.outcome === "completed"), "a task completed before the stop");
    pg!.stopImmediately();
    try {
      for (let i = 0; i < 15; i++) ids.push(await start());
      await waitUntil(() => processTaskLines(service!.process.lines).some((l) => String(l.outcome).startsWith("failure")), "a task failed while the database is down");
    } finally {
      pg!.start();
    }
    for (let i = 0; i < 5; i++) ids.push(await start());

    for (const id of ids) expect(await engine!.settle(id, 60_000), `instance ${id}`).to.equal("ended");
    for (const id of ids) {
      const ends = await engine!.call<{ activityId: string }[]>("GET", `/history/activity-instance?processInstanceId=${id}&activityType=noneEndEvent`);
      expect(ends.map((e) => e.activityId), `ends of ${id}`).to.deep.equal(["EndFound"]);
      const successes = await engine!.call<unknown[]>("GET", `/history/external-task-log?processInstanceId=${id}&successLog=true`);
      expect(successes, `completions of ${id}`).to.have.length(1);
    }
    // The worker's own account: no task reported completed twice, and some failed while the database was down.
    const lines = processTaskLines(service!.process.lines);
    const completed = lines.filter((l) => l.outcome === "completed").map((l) => String(l.taskId));
    expect(completed.length).to.equal(ids.length);
    expect(new Set(completed).size).to.equal(completed.length);
    const failures = lines.filter((l) => l.outcome !== "completed");
    expect(failures.length).to.be.greaterThan(0);
    expect(failures.filter((l) => l.outcome !== "failure UNAVAILABLE"), "failures other than UNAVAILABLE").to.deep.equal([]);
    expect(service!.process.child.exitCode).to.equal(null);
  });
});
