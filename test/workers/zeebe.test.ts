import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { SignJWT } from "jose";
import { loadConfig, zeebeSettings, type ZeebeSettings } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { EXAMPLE_DEFINITION } from "../../src/demo/seed.js";
import { createLogger } from "../../src/logger.js";
import { Metrics } from "../../src/metrics.js";
import { createServices, type Services } from "../../src/services.js";
import type { RunningWorker } from "../../src/tasks/runner.js";
import { startZeebeWorker } from "../../workers/zeebe/worker.js";
import { backend, randomTenant, TEST_DATABASE_URL } from "../support/backends.js";
import { freePort, startNode } from "../support/process.js";
import { TcpProxy } from "../support/proxy.js";
import { selfSignedCertificate } from "../support/tls.js";
import { MemoryTransport } from "../support/server.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";
import {
  expectCompletedWhileStopping,
  inHandRow,
  LONG_DEFINITION,
  seedWorkerTenant,
  servicesWithDatabaseDown,
  SLOW_DEFINITION,
  startWorkerProcess,
  taskLines,
  waitUntil,
} from "../support/workers.js";
import { ZeebeGateway, type NewJob } from "../support/zeebe-gateway.js";

/**
 * The Zeebe worker against the gateway stand-in (test/support/zeebe-gateway.ts): what the worker
 * sends and when, read back from the stand-in's job records. What only a BPMN engine shows (a
 * boundary event caught the error, the instance took the gateway's branch) is checked on Camunda 7
 * (camunda7.test.ts), where the same task runner runs.
 */
describe("Zeebe worker against the gateway stand-in", function () {
  this.timeout(120_000);
  const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET });
  let gateway: ZeebeGateway;
  let db: Database;
  let services: Services;
  let tenant: string;
  const workers: RunningWorker[] = [];
  const start = (s: Services, logs = new MemoryTransport(), address = gateway.address, metrics?: Metrics, given: Partial<ZeebeSettings> = {}) => {
    const worker = startZeebeWorker(s, zeebeSettings(address, { lockDurationMs: 20_000, ...given }), { database: db.knex, logger: createLogger("debug", [logs]), metrics });
    workers.push(worker);
    return { logs, worker };
  };

  before(async () => {
    db = await backend("postgres");
    services = createServices(config, db);
    tenant = randomTenant();
    await seedWorkerTenant(services, db, tenant);
  });
  beforeEach(async () => {
    gateway = await ZeebeGateway.start();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await gateway.close();
  });

  /** The job the example model's service task makes (bpmn/zeebe/api-request-example.bpmn). */
  const apiRequestJob = (variables: Record<string, unknown>, job: Partial<NewJob> = {}) =>
    gateway.createJob({
      type: "api-request",
      bpmnProcessId: "api-request-example-zeebe",
      elementId: "RequestAccessPoints",
      retries: 3,
      variables: { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, tenantId: tenant, ...variables },
      ...job,
    });
  const completedWith = async (key: string) => {
    expect(await gateway.settle(key)).to.equal("completed");
    return gateway.records({ key, intent: "COMPLETED" })[0]?.variables as Record<string, unknown>;
  };
  const accessPoints = (variables: Record<string, unknown>) => (variables.result as { accessPoints: { externalId: string }[] }).accessPoints.map((a) => a.externalId);

  it("completes the job with the result as its variables, queryParameters given as JSON or as text", async () => {
    const { logs } = start(services);
    expect(accessPoints(await completedWith(apiRequestJob({ queryParameters: { publicId: "AGR-1" } })))).to.deep.equal(["EAN-1", "EAN-2"]);
    expect(accessPoints(await completedWith(apiRequestJob({ queryParameters: JSON.stringify({ publicId: "AGR-EMPTY" }) })))).to.deep.equal([]);
    // A result variable of the model's choice.
    expect(Object.keys(await completedWith(apiRequestJob({ queryParameters: { publicId: "AGR-1" }, resultVariable: "points" })))).to.deep.equal(["points"]);
    await waitUntil(() => taskLines(logs.entries, "completed").length === 3, "three completions logged");
  });

  it("throws API_DEFINITION_NOT_FOUND as a BPMN error, with the problem's message", async () => {
    const { logs } = start(services);
    const key = apiRequestJob({ apiDefinitionExternalId: "no-such-definition" });
    expect(await gateway.settle(key)).to.equal("errorThrown");
    const [thrown] = gateway.records({ key, intent: "ERROR_THROWN" });
    expect(thrown?.errorCode).to.equal("API_DEFINITION_NOT_FOUND");
    expect(thrown?.errorMessage).to.match(/no-such-definition/);
    // Thrown once, by the worker that activated it; no failure, no completion.
    expect(gateway.records({ key }).map((r) => r.intent)).to.deep.equal(["CREATED", "ACTIVATED", "ERROR_THROWN"]);
    await waitUntil(() => taskLines(logs.entries, "bpmnError API_DEFINITION_NOT_FOUND").length === 1, "the BPMN error logged");
  });

  it("fails a job on a passing fault with one retry fewer each time and a growing back-off, then the engine raises an incident", async () => {
    const broken = servicesWithDatabaseDown(config, db);
    const metrics = new Metrics();
    const { logs } = start(broken.services, new MemoryTransport(), gateway.address, metrics);
    const key = apiRequestJob({ queryParameters: { publicId: "AGR-1" } });
    expect(await gateway.settle(key, 30_000)).to.equal("incident");
    // The incident can be raised before the worker has logged the acknowledged third failure.
    await waitUntil(() => taskLines(logs.entries, "failure UNAVAILABLE").length >= 3, "three failures logged");
    // The job came with 3, 2 and 1 retries; at 0 the engine raised the incident.
    expect(taskLines(logs.entries, "failure UNAVAILABLE").map((e) => e.retries)).to.deep.equal([3, 2, 1]);
    expect(gateway.records({ key, intent: "FAILED" }).map((r) => [r.retries, r.retryBackoff])).to.deep.equal([
      [2, 1000],
      [1, 2000],
      [0, 4000],
    ]);
    // Activated again only after each back-off.
    expect(gateway.records({ key }).map((r) => r.intent)).to.deep.equal(["CREATED", "ACTIVATED", "FAILED", "RECURRED_AFTER_BACKOFF", "ACTIVATED", "FAILED", "RECURRED_AFTER_BACKOFF", "ACTIVATED", "FAILED"]);
    const exposed = await metrics.registry.metrics();
    expect(exposed).to.contain('tasks_fetched_total{engine="zeebe",topic="api-request"} 3');
    expect(exposed).to.contain('tasks_failures_total{engine="zeebe",topic="api-request",code="UNAVAILABLE"} 3');
    const [incident] = gateway.incidents(key);
    expect(incident?.errorType).to.equal("JOB_NO_RETRIES");
    expect(incident?.errorMessage).to.match(/not reachable/);
    expect(incident?.elementId).to.equal("RequestAccessPoints");
    await broken.close();
  });

  it("calculates a value (completed with it); an unknown calculation is a BPMN error", async () => {
    start(services);
    const calc = (variables: Record<string, unknown>) =>
      gateway.createJob({ type: "calculate-series", bpmnProcessId: "calculate-series-example-zeebe", elementId: "Calculate", variables: { tenantId: tenant, threshold: 40, ...variables } });
    expect((await completedWith(calc({ calculationDefinitionExternalId: "doubled", inputs: { a: { value: 21 } } }))).result).to.deep.equal({ value: 42 });
    expect((await completedWith(calc({ calculationDefinitionExternalId: "doubled", inputs: { a: { value: 5 } } }))).result).to.deep.equal({ value: 10 });
    const missing = calc({ calculationDefinitionExternalId: "no-such-calculation" });
    expect(await gateway.settle(missing)).to.equal("errorThrown");
    expect(gateway.records({ key: missing, intent: "ERROR_THROWN" }).map((r) => r.errorCode)).to.deep.equal(["CALCULATION_DEFINITION_NOT_FOUND"]);
  });

  it("lets two workers share a job type, each job completed exactly once", async () => {
    const { logs: first } = start(services);
    const { logs: second } = start(services);
    const keys = Array.from({ length: 20 }, (_, i) => apiRequestJob({ queryParameters: { publicId: i % 2 === 0 ? "AGR-1" : "AGR-EMPTY" } }));
    const results = await Promise.all(keys.map(completedWith));
    expect(results.map((r) => accessPoints(r).length)).to.deep.equal(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 2 : 0)));
    const done = () => taskLines([...first.entries, ...second.entries], "completed").map((e) => e.taskId);
    await waitUntil(() => done().length >= 20, "20 completions logged");
    const ran = [...first.entries, ...second.entries].filter((e) => e.message === "task");
    // Twenty job runs in all, each a different job, each completed: none was run twice.
    expect(ran).to.have.length(20);
    expect(new Set(ran.map((e) => e.taskId)).size).to.equal(20);
    expect(ran.every((e) => e.outcome === "completed")).to.equal(true);
    expect(gateway.records({ intent: "ACTIVATED" })).to.have.length(20);
  });

  it("takes only the jobs of its tenants (ZEEBE_TENANT_IDS), each run in the job's tenant", async () => {
    // Zeebe's tenant ids are at most 31 characters.
    const zeebeTenant = `t-${randomUUID().slice(0, 8)}`;
    await seedWorkerTenant(services, db, zeebeTenant);
    const { logs } = start(services, new MemoryTransport(), gateway.address, undefined, { tenantIds: [zeebeTenant] });
    const variables = { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } };
    const other = gateway.createJob({ type: "api-request", tenantId: "other-tenant", variables });
    const ours = gateway.createJob({ type: "api-request", tenantId: zeebeTenant, variables });
    expect(accessPoints(await completedWith(ours))).to.deep.equal(["EAN-1", "EAN-2"]);
    await waitUntil(() => taskLines(logs.entries, "completed").length === 1, "the completion logged");
    expect(taskLines(logs.entries, "completed")[0]?.tenant).to.equal(zeebeTenant);
    expect(gateway.job(other)?.state).to.equal("activatable");
    expect(gateway.records({ key: other, intent: "ACTIVATED" })).to.deep.equal([]);
  });

  it("survives a lost gateway connection: logs it once, and takes jobs again when the gateway is back", async () => {
    const proxy = await TcpProxy.start(gateway.address);
    try {
      const { logs } = start(services, new MemoryTransport(), proxy.through(gateway.address));
      expect(await gateway.settle(apiRequestJob({ queryParameters: { publicId: "AGR-1" } }))).to.equal("completed");
      // The completion's answer has reached the worker (its task line follows it) before the cut.
      await waitUntil(() => taskLines(logs.entries, "completed").length === 1, "the completion acknowledged");
      await proxy.cut();
      // Three failed probes (0.5, 1 and 2 s apart): the worker keeps trying, the job waits.
      const failedProbes = () => Math.max(0, ...logs.entries.filter((e) => e.message === "zeebe gateway still unreachable").map((e) => Number(e.failedProbes)));
      await waitUntil(() => failedProbes() >= 1, "a failed probe");
      const during = apiRequestJob({ queryParameters: { publicId: "AGR-1" } });
      await waitUntil(() => failedProbes() >= 3, "three failed probes");
      expect(gateway.job(during)?.state).to.equal("activatable");
      expect(logs.entries.filter((e) => e.message === "zeebe gateway unreachable; retrying")).to.have.length(1);
      await proxy.restore();
      expect(await gateway.settle(during, 60_000)).to.equal("completed");
      await waitUntil(() => taskLines(logs.entries, "completed").length === 2, "the second completion acknowledged");
      await waitUntil(() => logs.entries.some((e) => e.message === "zeebe gateway reachable again"), "reconnection logged");
      // Probes after 0.5, 1, 2, 4 s …: a handful of failed ones in the 4 s outage, not one every poll interval.
      expect(Number(logs.entries.find((e) => e.message === "zeebe gateway reachable again")?.failedProbes)).to.be.within(2, 6);
    } finally {
      await proxy.cut();
    }
  });

  it("survives a gateway restart on the same port: the job in hand is completed after it, and new jobs are taken", async () => {
    const slow = createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET, TRANSFORM_TIMEOUT_MS: "60000" }), db);
    try {
      const { logs } = start(slow);
      // A job of a couple of seconds, in hand when the gateway goes away.
      const inHand = apiRequestJob({ apiDefinitionExternalId: SLOW_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } });
      await waitUntil(() => gateway.records({ key: inHand, intent: "ACTIVATED" }).length === 1, "the slow job activated");
      await gateway.stop();
      await waitUntil(() => logs.entries.some((e) => e.message === "zeebe gateway unreachable; retrying"), "the loss logged");
      await gateway.restart();
      const after = apiRequestJob({ queryParameters: { publicId: "AGR-1" } });
      expect(accessPoints(await completedWith(inHand))).to.deep.equal(["EAN-1", "EAN-2"]);
      expect(accessPoints(await completedWith(after))).to.deep.equal(["EAN-1", "EAN-2"]);
      await waitUntil(() => logs.entries.some((e) => e.message === "zeebe gateway reachable again"), "reconnection logged");
      await waitUntil(() => taskLines(logs.entries, "completed").length === 2, "two completions logged");
      expect(logs.entries.filter((e) => e.message === "zeebe gateway unreachable; retrying")).to.have.length(1);
      // Each job activated once, completed once: nothing lost, nothing run twice.
      for (const key of [inHand, after]) expect(gateway.records({ key }).map((r) => r.intent)).to.deep.equal(["CREATED", "ACTIVATED", "COMPLETED"]);
      expect(taskLines(logs.entries, "completed").map((e) => e.taskId).sort()).to.deep.equal([inHand, after].sort());
    } finally {
      await Promise.all(workers.splice(0).map((w) => w.stop()));
      await slow.transforms.close();
    }
  });

  it("backs off under back-pressure (RESOURCE_EXHAUSTED) exponentially, logged as back-pressure, reset by a success: every job completed once", async () => {
    // The next six activations (of both job types) are refused, as a broker over its limit refuses them.
    gateway.backPressure(6);
    const keys = Array.from({ length: 5 }, () => apiRequestJob({ queryParameters: { publicId: "AGR-1" } }));
    const { logs } = start(services);
    for (const key of keys) expect(accessPoints(await completedWith(key))).to.deep.equal(["EAN-1", "EAN-2"]);
    const activations = gateway.calls("ActivateJobs").filter((c) => c.jobType === "api-request");
    const refused = activations.filter((c) => c.status === "RESOURCE_EXHAUSTED");
    expect(gateway.calls("ActivateJobs").filter((c) => c.status === "RESOURCE_EXHAUSTED")).to.have.length(6);
    // Both job types are refused together, so the six refusals make at least three pauses.
    expect(refused.length).to.be.at.least(3);
    // After each refusal the worker paused before asking again, each pause longer than the one
    // before (0.5, 1, 2 s, less up to a quarter of jitter), not a flat pause.
    const pauses = refused.map((call) => activations.find((c) => c.at > call.at)!.at - call.at);
    expect(pauses[0]).to.be.at.least(375);
    for (let i = 1; i < pauses.length; i++) expect(pauses[i]).to.be.greaterThan(pauses[i - 1]!);
    // Logged as back-pressure, not as an unreachable gateway: a warning, then a line per longer pause.
    const pressure = logs.entries.filter((e) => String(e.message).startsWith("zeebe gateway back-pressure"));
    expect(pressure.map((e) => e.refusals)).to.deep.equal(pauses.map((_, i) => i + 1));
    expect(pressure[0]?.level).to.equal("warn");
    expect(pressure.map((e) => Number(e.pauseMs))).to.satisfy((ms: number[]) => ms.every((m, i) => i === 0 || m > ms[i - 1]!));
    expect(logs.entries.filter((e) => e.message === "zeebe gateway unreachable; retrying")).to.deep.equal([]);
    // No job lost: each activated once and completed once.
    for (const key of keys) expect(gateway.records({ key }).map((r) => r.intent)).to.deep.equal(["CREATED", "ACTIVATED", "COMPLETED"]);
    await waitUntil(() => taskLines(logs.entries, "completed").length === 5, "five completions logged");

    // The jobs activated since reset the back-off: the next back-pressure starts again at the first pause.
    // (The open activation takes the first job; the one the worker then opens is refused.)
    gateway.backPressure(1);
    const first = apiRequestJob({ queryParameters: { publicId: "AGR-1" } });
    const again = () => logs.entries.filter((e) => String(e.message).startsWith("zeebe gateway back-pressure")).slice(pressure.length);
    await waitUntil(() => again().length === 1, "the next refusal logged");
    const later = apiRequestJob({ queryParameters: { publicId: "AGR-1" } });
    for (const key of [first, later]) expect(accessPoints(await completedWith(key))).to.deep.equal(["EAN-1", "EAN-2"]);
    expect(again().map((e) => [e.level, e.refusals])).to.deep.equal([["warn", 1]]);
    expect(Number(again()[0]?.pauseMs)).to.be.within(375, 500);
    for (const key of [first, later]) expect(gateway.records({ key }).map((r) => r.intent)).to.deep.equal(["CREATED", "ACTIVATED", "COMPLETED"]);
  });

  it("asks for a job as soon as a slot frees, not only once most of its slots are free", async () => {
    // Four transform processes, so that the three slow jobs run side by side and the fast ones wait for none.
    const roomy = createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET, TRANSFORM_TIMEOUT_MS: "60000", TRANSFORM_PROCESSES: "4" }), db);
    try {
      const slow = Array.from({ length: 3 }, () => apiRequestJob({ apiDefinitionExternalId: SLOW_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } }));
      const fast = apiRequestJob({ queryParameters: { publicId: "AGR-1" } });
      // Four in hand at most: the four jobs fill every slot.
      start(roomy, new MemoryTransport(), gateway.address, undefined, { maxTasks: 4 });
      expect(await gateway.settle(fast)).to.equal("completed");
      // One slot free, three slow jobs in hand: the next job is taken at once (the SDK alone would
      // wait until no more than a third of its slots were taken, i.e. for two slow jobs to end).
      const next = apiRequestJob({ queryParameters: { publicId: "AGR-1" } });
      expect(await gateway.settle(next)).to.equal("completed");
      const completedAt = (key: string) => gateway.records({ key, intent: "COMPLETED" })[0]?.position ?? Infinity;
      for (const key of slow) expect(completedAt(next)).to.be.lessThan(completedAt(key));
      for (const key of slow) expect(await gateway.settle(key, 60_000)).to.equal("completed");
    } finally {
      await Promise.all(workers.splice(0).map((w) => w.stop()));
      await roomy.transforms.close();
    }
  });

  it("reports not ready while the gateway leaves Topology unanswered, ready again once it answers", async () => {
    const { worker } = start(services);
    await worker.check();
    const stall = gateway.stall(["Topology"]);
    let refused: unknown;
    await worker.check().catch((err: unknown) => (refused = err));
    expect((refused as Error | undefined)?.message).to.equal("the Zeebe gateway did not answer in 2 s");
    stall.release();
    await worker.check();
  });

  it("runs alone (npm run worker): on SIGTERM stops activating, completes the job in hand, then exits 0", async () => {
    const port = await freePort();
    const worker = startNode("dist/src/worker.js", { DATABASE_URL: TEST_DATABASE_URL, PORT: String(port), HOST: "127.0.0.1", ZEEBE_ADDRESS: gateway.address, TRANSFORM_TIMEOUT_MS: "60000" });
    try {
      await worker.waitFor(/"listening"/);
      // Operations only: readiness reports the engine; the API is not served by the worker.
      const ready = (await (await fetch(`http://127.0.0.1:${port}/ready`)).json()) as { checks: Record<string, { status: string }> };
      expect(ready.checks).to.deep.equal({ database: { status: "up" }, zeebe: { status: "up" } });
      expect((await fetch(`http://127.0.0.1:${port}/api-definitions`)).status).to.equal(404);

      const key = apiRequestJob({ apiDefinitionExternalId: SLOW_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } });
      await waitUntil(() => gateway.records({ key, intent: "ACTIVATED" }).length > 0, "job activated");
      // In hand, not only sent: a job still on its way when the stop cancels the activation is lost
      // to its job timeout (docs/reference/workers.md), which is not what this test is about.
      await waitUntil(async () => (await inHandRow(db.knex, { engine: "zeebe", taskKey: key })) !== undefined, "the job in hand");
      worker.child.kill("SIGTERM");
      expect(await worker.exited).to.equal(0);
      expect(accessPoints(await completedWith(key))).to.deep.equal(["EAN-1", "EAN-2"]);
      expectCompletedWhileStopping(worker.lines);
    } finally {
      worker.kill();
    }
  });

  /** A job's activations (by worker) and its events by intent. */
  const jobOf = (key: string) => ({
    activatedBy: gateway.records({ key, intent: "ACTIVATED" }).map((r) => r.worker),
    intents: gateway.records({ key }).map((r) => r.intent),
  });

  for (const streaming of [false, true]) {
    it(`gives a job created while a worker stops (a job in hand, its ${streaming ? "job stream" : "long poll"} open) to another worker at once, not to the stopping one`, async () => {
      // A job timeout of 60 s: a job dropped by the stopping worker would wait that long; the test waits 20 s.
      // Room for the long job to finish on a loaded machine (the default 30 s shutdown was passed once).
      const stopping = await startWorkerProcess({ ZEEBE_ADDRESS: gateway.address, WORKER_LOCK_DURATION_MS: "60000", SHUTDOWN_TIMEOUT_MS: "120000", ZEEBE_STREAM_JOBS: String(streaming) });
      try {
        const inHand = apiRequestJob({ apiDefinitionExternalId: LONG_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } });
        await waitUntil(() => jobOf(inHand).activatedBy.length > 0, "the long job activated");
        await waitUntil(async () => (await inHandRow(db.knex, { engine: "zeebe", taskKey: inHand }))?.worker_id === stopping.workerId, "the long job in hand");
        stopping.process.child.kill("SIGTERM");
        await stopping.process.waitFor(/shutting down/);
        // The stopping worker gives up its open activation (the test's point: left open, it would take the next job and drop it).
        await waitUntil(() => !gateway.openCalls().some((c) => c.worker === stopping.workerId), "the stopping worker's activation closed at the gateway");
        // Created while the first worker stops with a job in hand; a second worker starts after it.
        const during = apiRequestJob({ queryParameters: { publicId: "AGR-1" } });
        const { worker: second } = start(services);
        expect(await gateway.settle(during, 20_000)).to.equal("completed");
        const { activatedBy, intents } = jobOf(during);
        // A streaming worker may still be pushed the job as its stream is cancelled: it hands it back at once (a FAILED with retries unchanged).
        if (streaming) expect(activatedBy.at(-1)).to.equal(second.workerId);
        else expect(activatedBy).to.deep.equal([second.workerId]);
        expect(intents).to.not.include("TIMED_OUT");
        // The stopping worker still finishes its own job, then exits 0.
        expect(await stopping.process.exited, stopping.process.lines.join("\n")).to.equal(0);
        expect(await gateway.settle(inHand, 60_000)).to.equal("completed");
        expect(jobOf(inHand).activatedBy).to.deep.equal([stopping.workerId]);
        expectCompletedWhileStopping(stopping.process.lines);
      } finally {
        stopping.process.kill();
      }
    });
  }

  it("extends the job timeout while a job runs past it: the job is not given to a second worker", async () => {
    // A 3 s job timeout and a job of some 11 s (transforms may take a minute here).
    const slow = createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET, TRANSFORM_TIMEOUT_MS: "60000" }), db);
    try {
      const { worker: first, logs } = start(slow, new MemoryTransport(), gateway.address, undefined, { lockDurationMs: 3000 });
      const key = apiRequestJob({ apiDefinitionExternalId: LONG_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } });
      await waitUntil(() => jobOf(key).activatedBy.length > 0, "the long job activated");
      const { worker: second } = start(slow, new MemoryTransport(), gateway.address, undefined, { lockDurationMs: 3000 });
      expect(await gateway.settle(key, 60_000)).to.equal("completed");
      const { activatedBy, intents } = jobOf(key);
      // Activated once, by the first worker; its timeout moved on (a third of it apart), never lapsing.
      expect(activatedBy).to.deep.equal([first.workerId]);
      expect(activatedBy).to.not.include(second.workerId);
      expect(intents).to.not.include("TIMED_OUT");
      expect(intents.filter((i) => i === "TIMEOUT_UPDATED").length).to.be.greaterThan(2);
      expect(intents.at(-1)).to.equal("COMPLETED");
      await waitUntil(() => taskLines(logs.entries, "completed").length > 0, "completion logged");
      expect(taskLines(logs.entries, "completed")).to.have.length(1);
      expect(logs.entries.filter((e) => e.message === "job timeout extension failed")).to.deep.equal([]);
    } finally {
      await Promise.all(workers.splice(0).map((w) => w.stop()));
      await slow.transforms.close();
    }
  });

  it("reaches the gateway over TLS with an OAuth token (ZEEBE_TLS, ZEEBE_CLIENT_ID/SECRET, ZEEBE_OAUTH_URL)", async () => {
    // TLS terminated in front of the gateway with a self-signed certificate the worker is told to
    // trust, and a token endpoint that hands out client-credentials tokens.
    const certificate = selfSignedCertificate();
    const proxy = await TcpProxy.start(gateway.address, { key: certificate.key, cert: certificate.cert, ALPNProtocols: ["h2"] });
    const tokenRequests: URLSearchParams[] = [];
    // The SDK reads the token's expiry from it, so it is a JWT.
    const accessToken = await new SignJWT({ scope: "zeebe" }).setProtectedHeader({ alg: "HS256" }).setExpirationTime("1h").sign(new TextEncoder().encode(TEST_JWT_SECRET));
    const oauth = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        const form = new URLSearchParams(body);
        tokenRequests.push(form);
        const ok = form.get("grant_type") === "client_credentials" && form.get("client_id") === "worker-client" && form.get("client_secret") === "worker-secret";
        res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
        res.end(JSON.stringify(ok ? { access_token: accessToken, token_type: "Bearer", expires_in: 3600 } : { error: "invalid_client" }));
      });
    });
    await new Promise<void>((resolve) => oauth.listen(0, "127.0.0.1", resolve));
    const oauthPort = (oauth.address() as AddressInfo).port;
    const worker = startNode("dist/src/worker.js", {
      DATABASE_URL: TEST_DATABASE_URL,
      PORT: String(await freePort()),
      HOST: "127.0.0.1",
      ZEEBE_ADDRESS: `localhost:${proxy.port}`,
      ZEEBE_TLS: "true",
      ZEEBE_CLIENT_ID: "worker-client",
      ZEEBE_CLIENT_SECRET: "worker-secret",
      ZEEBE_OAUTH_URL: `http://127.0.0.1:${oauthPort}/token`,
      CAMUNDA_CUSTOM_ROOT_CERT_PATH: certificate.certPath,
    });
    try {
      await worker.waitFor(/"listening"/);
      const key = apiRequestJob({ queryParameters: { publicId: "AGR-1" } });
      expect(accessPoints(await completedWith(key))).to.deep.equal(["EAN-1", "EAN-2"]);
      expect(proxy.accepted).to.be.greaterThan(0);
      expect(tokenRequests.length).to.be.greaterThan(0);
      expect(tokenRequests.every((f) => f.get("client_id") === "worker-client")).to.equal(true);
      // Every job call the gateway received carried the token.
      const jobCalls = gateway.calls().filter((c) => c.method !== "Topology");
      expect(jobCalls.length).to.be.greaterThan(0);
      expect(jobCalls.every((c) => c.authorization === `Bearer ${accessToken}`)).to.equal(true);
      // Nothing but JSON lines of ours on the worker's output.
      expect(worker.lines.filter((l) => !l.startsWith("{"))).to.deep.equal([]);
    } finally {
      worker.kill();
      await proxy.cut();
      await new Promise((resolve) => oauth.close(resolve));
    }
  });
});
