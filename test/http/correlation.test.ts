import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { loadConfig } from "../../src/config.js";
import { ProblemError } from "../../src/errors.js";
import { createAuthenticator, type Authenticator } from "../../src/http/auth.js";
import { buildServer } from "../../src/http/server.js";
import { createLogger } from "../../src/logger.js";
import { Metrics } from "../../src/metrics.js";
import { createServices } from "../../src/services.js";
import { TaskRunner, type TaskReporter } from "../../src/tasks/runner.js";
import { backend, randomTenant } from "../support/backends.js";
import { MemoryTransport, testServer, type TestServer } from "../support/server.js";
import { adminToken, TEST_JWT_SECRET } from "../support/tokens.js";

/**
 * Correlation (docs/reference/observability.md#logs, contract §12): X-Request-Id honoured when
 * valid, else generated, on every answer and in every problem+json; every log line of a request
 * or task carries its requestId and traceId, a task's also its engine keys.
 */

const MESSAGE = Symbol.for("message") as unknown as string;
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const lines = (transport: MemoryTransport) => transport.entries.map((e) => JSON.parse(e[MESSAGE] as string) as Record<string, unknown>);

describe("correlation: request ids and trace ids", function () {
  this.timeout(180_000);
  let server: TestServer;
  let token: string;
  const tenant = randomTenant();
  before(async () => {
    server = await testServer(await backend("embedded"));
    token = await adminToken();
  });
  after(() => server.app.close());
  const get = (url: string, headers: Record<string, string> = {}) =>
    server.app.inject({ method: "GET", url, headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenant, ...headers } });

  it("answers with the caller's X-Request-Id when it is valid, on a success and on a problem, and logs it with the request", async () => {
    const ok = await get("/graph/entities?limit=1", { "x-request-id": "order-42:retry.1_A-b" });
    expect(ok.statusCode).to.equal(200);
    expect(ok.headers["x-request-id"]).to.equal("order-42:retry.1_A-b");
    const refused = await get("/graph/entities?limit=0", { "x-request-id": "caller-id-7" });
    expect(refused.statusCode).to.equal(400);
    expect(refused.headers["x-request-id"]).to.equal("caller-id-7");
    expect(refused.json()).to.include({ code: "INVALID_REQUEST", requestId: "caller-id-7" });
    const logged = lines(server.logs).filter((l) => l.message === "request");
    expect(logged.map((l) => l.requestId)).to.include.members(["order-42:retry.1_A-b", "caller-id-7"]);
  });

  it("generates a uuid for a missing, too long or ill-formed X-Request-Id", async () => {
    for (const header of [undefined, "x".repeat(129), "has space", "semi;colon", "ünïcode", ""]) {
      const res = await get("/nowhere", header === undefined ? {} : { "x-request-id": header });
      expect(res.statusCode).to.equal(404);
      const id = res.headers["x-request-id"];
      expect(id, String(header)).to.match(/^[0-9a-f-]{36}$/);
      expect(res.json().requestId).to.equal(id);
    }
    const longest = "a".repeat(128);
    expect((await get("/nowhere", { "x-request-id": longest })).headers["x-request-id"]).to.equal(longest);
  });

  it("carries the id on public routes and refusals before any handler (401, unknown route)", async () => {
    const health = await server.app.inject({ method: "GET", url: "/health", headers: { "x-request-id": "probe-1" } });
    expect(health.headers["x-request-id"]).to.equal("probe-1");
    const unauthenticated = await server.app.inject({ method: "GET", url: "/graph/entities", headers: { "x-tenant-id": tenant, "x-request-id": "no-token" } });
    expect(unauthenticated.statusCode).to.equal(401);
    expect(unauthenticated.json()).to.include({ code: "UNAUTHENTICATED", requestId: "no-token" });
  });

  it("logs the trace id of the caller's traceparent on every line of the request (tracing off), and a fresh one without", async () => {
    await get("/graph/entities?limit=1", { "x-request-id": "traced-1", traceparent: TRACEPARENT });
    await get("/graph/entities?limit=1", { "x-request-id": "untraced-1" });
    await get("/graph/entities?limit=1", { "x-request-id": "bad-traceparent", traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01" });
    const byId = (id: string) => lines(server.logs).filter((l) => l.requestId === id);
    expect(byId("traced-1").map((l) => l.traceId)).to.deep.equal([TRACE_ID]);
    const fresh = byId("untraced-1")[0]!.traceId as string;
    expect(fresh).to.match(/^[0-9a-f]{32}$/).and.not.equal(TRACE_ID);
    expect(byId("bad-traceparent")[0]!.traceId).to.match(/^[0-9a-f]{32}$/).and.not.equal("0".repeat(32));
  });

  it("puts requestId and traceId on a line written deep inside the request, and on no line outside one", async () => {
    // The authenticator runs in a later hook than the one that sets the request's ids; its line passes no id.
    const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: "info" });
    const logs = new MemoryTransport();
    const logger = createLogger("info", [logs]);
    const verify = createAuthenticator(config.auth);
    const authenticate: Authenticator = async (header) => {
      logger.info("checking a token");
      return verify(header);
    };
    const db = await backend("embedded");
    const services = createServices(config, db);
    const app = await buildServer({ config, db, logger, authenticate, services, metrics: new Metrics(), workers: () => [] });
    try {
      const headers = { authorization: `Bearer ${token}`, "x-tenant-id": tenant };
      await app.inject({ method: "GET", url: "/graph/entities", headers: { ...headers, "x-request-id": "deep-1", traceparent: TRACEPARENT } });
      await app.inject({ method: "GET", url: "/graph/entities", headers: { ...headers, "x-request-id": "deep-2" } });
      logger.info("a line outside any request");
      const written = lines(logs);
      const checks = written.filter((l) => l.message === "checking a token");
      expect(checks.map((l) => l.requestId)).to.deep.equal(["deep-1", "deep-2"]);
      expect(checks[0]!.traceId).to.equal(TRACE_ID);
      expect(checks[1]!.traceId).to.equal(written.find((l) => l.message === "request" && l.requestId === "deep-2")!.traceId);
      expect(written.find((l) => l.message === "a line outside any request")).not.to.have.property("requestId");
    } finally {
      await app.close();
      await services.transforms.close();
    }
  });
});

describe("correlation: task log lines", function () {
  this.timeout(180_000);

  it("carry requestId, traceId (from the traceparent variable), taskId, processInstanceKey and bpmnProcessId, on the handler's lines too", async () => {
    const db = await backend("embedded");
    const logs = new MemoryTransport();
    const logger = createLogger("info", [logs]);
    const services = createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }), db);
    const runner = new TaskRunner({ engine: "zeebe", services, database: db.knex, workerId: undefined, defaultRetries: 3, logger, unreportedMessage: "unreported" });
    const reporter: TaskReporter = { complete: async () => undefined, bpmnError: async () => undefined, fail: async () => undefined };
    const key = randomUUID();
    await runner.run(
      { key, topic: "api-request", retries: 3, variables: { traceparent: TRACEPARENT }, tenant: "acme", processInstanceKey: "2251799813685251", bpmnProcessId: "order-process" },
      async () => {
        logger.warn("inside the handler");
        throw new ProblemError("INVALID_REQUEST", "a bad variable");
      },
      reporter,
    );
    const mine = lines(logs).filter((l) => l.taskId === key);
    expect(mine.map((l) => l.message)).to.include.members(["inside the handler", "task"]);
    for (const line of mine) {
      expect(line, String(line.message)).to.include({ traceId: TRACE_ID, processInstanceKey: "2251799813685251", bpmnProcessId: "order-process" });
      expect(line.requestId).to.match(/^[0-9a-f-]{36}$/);
    }
    expect(new Set(mine.map((l) => l.requestId)).size).to.equal(1);
    await services.transforms.close();
  });
});
