import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { expect } from "chai";
import { SignJWT } from "jose";
import { loadConfig, zeebeSettings } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { EXAMPLE_DEFINITION } from "../../src/demo/seed.js";
import { createLogger } from "../../src/logger.js";
import { Metrics } from "../../src/metrics.js";
import { createServices, type Services } from "../../src/services.js";
import type { RunningWorker } from "../../src/tasks/runner.js";
import { startZeebeWorker } from "../../workers/zeebe/worker.js";
import { backend, randomTenant, TEST_DATABASE_URL } from "../support/backends.js";
import { ENGINE_START_TIMEOUT_MS, freePort, ROOT, startNode } from "../support/process.js";
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
import { ZeebeEngine } from "../support/zeebe.js";

describe("Zeebe worker against a real broker", function () {
  this.timeout(180_000);
  const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET });
  let engine: ZeebeEngine;
  let db: Database;
  let services: Services;
  let tenant: string;
  const workers: RunningWorker[] = [];
  const start = (s: Services, logs = new MemoryTransport(), address = engine.address, metrics?: Metrics, lockDurationMs = 20_000) => {
    const worker = startZeebeWorker(s, zeebeSettings(address, { lockDurationMs }), { database: db.knex, logger: createLogger("debug", [logs]), metrics });
    workers.push(worker);
    return { logs, worker };
  };

  before(async function () {
    this.timeout(ENGINE_START_TIMEOUT_MS + 60_000);
    engine = await ZeebeEngine.shared();
    await engine.client.deployResource({ processFilename: join(ROOT, "bpmn/zeebe/api-request-example.bpmn") });
    await engine.client.deployResource({ processFilename: join(ROOT, "bpmn/zeebe/calculate-series-example.bpmn") });
    db = await backend("postgres");
    // A fresh broker numbers its jobs from the same start: rows an interrupted run left would match new jobs
    // (no worker runs between the test files that share the broker).
    await db.knex("tasks_in_hand").where({ engine: "zeebe" }).del();
    services = createServices(config, db);
    tenant = randomTenant();
    await seedWorkerTenant(services, db, tenant);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });

  const variablesOf = (extra: Record<string, unknown>) => ({ apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, tenantId: tenant, ...extra });
  const run = async (variables: Record<string, unknown>) =>
    (
      await engine.client.createProcessInstanceWithResult({
        bpmnProcessId: "api-request-example-zeebe",
        variables: variablesOf(variables) as never,
        requestTimeout: 30_000,
      })
    ).variables as Record<string, unknown>;
  const startInstance = async (variables: Record<string, unknown>) =>
    (await engine.client.createProcessInstance({ bpmnProcessId: "api-request-example-zeebe", variables: variablesOf(variables) as never })).processInstanceKey;

  it("completes the job with the result, and the gateway routes on it", async () => {
    start(services);
    const found = await run({ queryParameters: { publicId: "AGR-1" } });
    expect(found.outcome).to.equal("found");
    expect((found.result as { accessPoints: { externalId: string }[] }).accessPoints.map((a) => a.externalId)).to.deep.equal(["EAN-1", "EAN-2"]);
    expect((await run({ queryParameters: JSON.stringify({ publicId: "AGR-EMPTY" }) })).outcome).to.equal("none");
    // The path as the engine recorded it.
    const key = await startInstance({ queryParameters: { publicId: "AGR-1" } });
    expect(await engine.settle(key)).to.equal("ended");
    expect(await engine.completedElements(key)).to.deep.equal(["Start", "RequestAccessPoints", "AnyAccessPoint", "EndFound"]);
  });

  it("raises API_DEFINITION_NOT_FOUND as a BPMN error the boundary event catches", async () => {
    const { logs } = start(services);
    expect((await run({ apiDefinitionExternalId: "no-such-definition" })).outcome).to.equal("not found");
    const key = await startInstance({ apiDefinitionExternalId: "no-such-definition" });
    expect(await engine.settle(key)).to.equal("ended");
    expect(await engine.completedElements(key)).to.deep.equal(["Start", "NotFound", "EndNotFound"]);
    // The instance can end before the worker has logged the acknowledged command.
    await waitUntil(() => taskLines(logs.entries, "bpmnError API_DEFINITION_NOT_FOUND").length === 2, "two BPMN errors logged");
  });

  it("fails a job on a passing fault with one retry fewer each time, then the engine raises an incident", async () => {
    const broken = servicesWithDatabaseDown(config, db);
    const metrics = new Metrics();
    const { logs } = start(broken.services, new MemoryTransport(), engine.address, metrics);
    const key = await startInstance({ queryParameters: { publicId: "AGR-1" } });
    const failures = async () => (await engine.records("JOB")).filter((r) => r.intent === "FAILED" && String(r.value.processInstanceKey) === String(key));
    // The back-offs (1 s, then 2 s) run on the broker's wall clock before the job recurs.
    expect(await engine.settle(key, 30_000)).to.equal("incident");
    // The incident can be raised before the worker has logged the acknowledged third failure.
    await waitUntil(() => taskLines(logs.entries, "failure UNAVAILABLE").length >= 3, "three failures logged");
    // The job came with 3, 2 and 1 retries; at 0 the engine raised the incident.
    expect(taskLines(logs.entries, "failure UNAVAILABLE").map((e) => e.retries)).to.deep.equal([3, 2, 1]);
    const failed = await failures();
    expect(failed.map((r) => [r.value.retries, r.value.retryBackoff])).to.deep.equal([
      [2, 1000],
      [1, 2000],
      [0, 4000],
    ]);
    const exposed = await metrics.registry.metrics();
    expect(exposed).to.contain('tasks_fetched_total{engine="zeebe",topic="api-request"} 3');
    expect(exposed).to.contain('tasks_failures_total{engine="zeebe",topic="api-request",code="UNAVAILABLE"} 3');
    const [incident] = await engine.incidents(key);
    expect(incident?.value.errorType).to.equal("JOB_NO_RETRIES");
    expect(incident?.value.errorMessage).to.match(/not reachable/);
    expect(incident?.value.elementId).to.equal("RequestAccessPoints");
    await broken.close();
  });

  it("calculates a value and decides on it; an unknown calculation is caught as a BPMN error", async () => {
    start(services);
    const calc = async (variables: Record<string, unknown>) => {
      const { processInstanceKey, variables: out } = await engine.client.createProcessInstanceWithResult({
        bpmnProcessId: "calculate-series-example-zeebe",
        variables: { tenantId: tenant, threshold: 40, ...variables } as never,
        requestTimeout: 30_000,
      });
      // The instance has ended; its records are read once the engine has written them all.
      await engine.settle(processInstanceKey);
      return { ...(out as Record<string, unknown>), end: await engine.endEvent(processInstanceKey) } as Record<string, unknown>;
    };
    const high = await calc({ calculationDefinitionExternalId: "doubled", inputs: { a: { value: 21 } } });
    expect(high.end).to.equal("EndHigh");
    expect(high.result).to.deep.equal({ value: 42 });
    expect((await calc({ calculationDefinitionExternalId: "doubled", inputs: { a: { value: 5 } } })).end).to.equal("EndLow");
    expect((await calc({ calculationDefinitionExternalId: "no-such-calculation" })).end).to.equal("EndNotFound");
  });

  it("lets two workers share a job type, each job completed exactly once", async () => {
    const { logs: first } = start(services);
    const { logs: second } = start(services);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => run({ queryParameters: { publicId: i % 2 === 0 ? "AGR-1" : "AGR-EMPTY" } })));
    expect(results.map((r) => r.outcome)).to.deep.equal(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? "found" : "none")));
    const done = () => taskLines([...first.entries, ...second.entries], "completed").map((e) => e.taskId);
    await waitUntil(() => done().length >= 20, "20 completions logged");
    const ran = [...first.entries, ...second.entries].filter((e) => e.message === "task");
    // Twenty job runs in all, each a different job, each completed: none was run twice.
    expect(ran).to.have.length(20);
    expect(new Set(ran.map((e) => e.taskId)).size).to.equal(20);
    expect(ran.every((e) => e.outcome === "completed")).to.equal(true);
  });

  it("survives a lost gateway connection: logs it once, and takes jobs again when the gateway is back", async () => {
    const proxy = await TcpProxy.start(engine.address);
    try {
      const { logs } = start(services, new MemoryTransport(), proxy.through(engine.address));
      const before = await startInstance({ queryParameters: { publicId: "AGR-1" } });
      expect(await engine.settle(before)).to.equal("ended");
      await proxy.cut();
      const during = await startInstance({ queryParameters: { publicId: "AGR-1" } });
      // Three failed probes (0.5, 1 and 2 s apart): the worker keeps trying, the job waits.
      const failedProbes = () => Math.max(0, ...logs.entries.filter((e) => e.message === "zeebe gateway still unreachable").map((e) => Number(e.failedProbes)));
      await waitUntil(() => failedProbes() >= 3, "three failed probes");
      expect(await engine.endEvent(during)).to.equal(undefined);
      expect(logs.entries.filter((e) => e.message === "zeebe gateway unreachable; retrying")).to.have.length(1);
      await proxy.restore();
      expect(await engine.settle(during, 60_000)).to.equal("ended");
      expect(await engine.endEvent(during)).to.equal("EndFound");
      await waitUntil(() => logs.entries.some((e) => e.message === "zeebe gateway reachable again"), "reconnection logged");
      // Probes after 0.5, 1, 2, 4 s …: a handful of failed ones in the 4 s outage, not one every poll interval.
      expect(Number(logs.entries.find((e) => e.message === "zeebe gateway reachable again")?.failedProbes)).to.be.within(2, 6);
    } finally {
      await proxy.cut();
    }
  });

  it("runs alone (npm run worker): on SIGTERM stops activating, completes the job in hand, then exits 0", async () => {
    const port = await freePort();
    const worker = startNode("dist/src/worker.js", { DATABASE_URL: TEST_DATABASE_URL, PORT: String(port), HOST: "127.0.0.1", ZEEBE_ADDRESS: engine.address, TRANSFORM_TIMEOUT_MS: "60000" });
    try {
      await worker.waitFor(/"listening"/);
      // Operations only: readiness reports the engine; the API is not served by the worker.
      const ready = (await (await fetch(`http://127.0.0.1:${port}/ready`)).json()) as { checks: Record<string, { status: string }> };
      expect(ready.checks).to.deep.equal({ database: { status: "up" }, zeebe: { status: "up" } });
      expect((await fetch(`http://127.0.0.1:${port}/api-definitions`)).status).to.equal(404);

      const key = await startInstance({ apiDefinitionExternalId: SLOW_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } });
      await waitUntil(async () => (await engine.records("JOB_BATCH")).some((r) => r.intent === "ACTIVATED" && JSON.stringify(r.value).includes(String(key))), "job activated");
      worker.child.kill("SIGTERM");
      expect(await worker.exited).to.equal(0);
      expect(await engine.settle(key)).to.equal("ended");
      expect(await engine.endEvent(key)).to.equal("EndFound");
      expectCompletedWhileStopping(worker.lines);
    } finally {
      worker.kill();
    }
  });

  /** The records of an instance's jobs: their activations (by worker) and events by intent. */
  const jobsOf = async (processInstanceKey: string) => {
    const keys = new Set((await engine.records("JOB")).filter((r) => String(r.value.processInstanceKey) === processInstanceKey).map((r) => String(r.key)));
    const activatedBy = (await engine.records("JOB_BATCH"))
      .filter((r) => r.intent === "ACTIVATED")
      .flatMap((r) => ((r.value.jobKeys as unknown[]) ?? []).filter((k) => keys.has(String(k))).map(() => String(r.value.worker)));
    const intents = (await engine.records("JOB")).filter((r) => r.recordType === "EVENT" && keys.has(String(r.key))).map((r) => r.intent);
    return { activatedBy, intents };
  };

  for (const streaming of [false, true]) {
    it(`gives a job created while a worker stops (a job in hand, its ${streaming ? "job stream" : "long poll"} open) to another worker at once, not to the stopping one`, async () => {
      // A job timeout of 60 s: a job dropped by the stopping worker would wait that long; the test waits 20 s.
      // Room for the long job to finish on a loaded machine (the default 30 s shutdown was passed once).
      const stopping = await startWorkerProcess({ ZEEBE_ADDRESS: engine.address, WORKER_LOCK_DURATION_MS: "60000", SHUTDOWN_TIMEOUT_MS: "120000", ZEEBE_STREAM_JOBS: String(streaming) });
      try {
        const inHand = await startInstance({ apiDefinitionExternalId: LONG_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } });
        await waitUntil(async () => (await jobsOf(String(inHand))).activatedBy.length > 0, "the long job activated");
        const jobKey = String((await engine.records("JOB")).find((r) => r.intent === "CREATED" && String(r.value.processInstanceKey) === String(inHand))?.key);
        await waitUntil(async () => (await inHandRow(db.knex, { engine: "zeebe", taskKey: jobKey }))?.worker_id === stopping.workerId, "the long job in hand");
        stopping.process.child.kill("SIGTERM");
        await stopping.process.waitFor(/shutting down/);
        // Created while the first worker stops with a job in hand; a second worker starts after it.
        const during = await startInstance({ queryParameters: { publicId: "AGR-1" } });
        const { worker: second } = start(services);
        expect(await engine.settle(String(during), 20_000)).to.equal("ended");
        expect(await engine.endEvent(String(during))).to.equal("EndFound");
        const { activatedBy, intents } = await jobsOf(String(during));
        // A streaming worker may still be pushed the job as its stream is cancelled: it hands it back at once (a FAILED with retries unchanged).
        if (streaming) expect(activatedBy.at(-1)).to.equal(second.workerId);
        else expect(activatedBy).to.deep.equal([second.workerId]);
        expect(intents).to.not.include("TIMED_OUT");
        // The stopping worker still finishes its own job, then exits 0.
        expect(await stopping.process.exited, stopping.process.lines.join("\n")).to.equal(0);
        expect(await engine.settle(String(inHand), 60_000)).to.equal("ended");
        expect((await jobsOf(String(inHand))).activatedBy).to.deep.equal([stopping.workerId]);
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
      const { worker: first, logs } = start(slow, new MemoryTransport(), engine.address, undefined, 3000);
      const key = String(await startInstance({ apiDefinitionExternalId: LONG_DEFINITION.externalId, queryParameters: { publicId: "AGR-1" } }));
      await waitUntil(async () => (await jobsOf(key)).activatedBy.length > 0, "the long job activated");
      const { worker: second } = start(slow, new MemoryTransport(), engine.address, undefined, 3000);
      expect(await engine.settle(key, 60_000)).to.equal("ended");
      expect(await engine.endEvent(key)).to.equal("EndFound");
      const { activatedBy, intents } = await jobsOf(key);
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
    // TLS terminated in front of the engine with a self-signed certificate the worker is told to
    // trust, and a token endpoint that hands out client-credentials tokens.
    const certificate = selfSignedCertificate();
    const proxy = await TcpProxy.start(engine.address, { key: certificate.key, cert: certificate.cert, ALPNProtocols: ["h2"] });
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
      const key = await startInstance({ queryParameters: { publicId: "AGR-1" } });
      expect(await engine.settle(key)).to.equal("ended");
      expect(await engine.endEvent(key)).to.equal("EndFound");
      expect(proxy.accepted).to.be.greaterThan(0);
      expect(tokenRequests.length).to.be.greaterThan(0);
      expect(tokenRequests.every((f) => f.get("client_id") === "worker-client")).to.equal(true);
      // Nothing but JSON lines of ours on the worker's output.
      expect(worker.lines.filter((l) => !l.startsWith("{"))).to.deep.equal([]);
    } finally {
      worker.kill();
      await proxy.cut();
      await new Promise((resolve) => oauth.close(resolve));
    }
  });
});
