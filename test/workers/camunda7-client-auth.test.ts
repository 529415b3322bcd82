import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { loadConfig, type ClientCredentials } from "../../src/config.js";
import { createLogger } from "../../src/logger.js";
import { Secret } from "../../src/secrets.js";
import { createServices, type Services } from "../../src/services.js";
import type { RunningWorker } from "../../src/tasks/runner.js";
import { ClientCredentialsToken } from "../../workers/camunda7/auth.js";
import { startCamunda7Worker } from "../../workers/camunda7/worker.js";
import { backend } from "../support/backends.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";
import { waitUntil } from "../support/workers.js";

/** A request as a test server received it. */
interface Received {
  method: string;
  path: string;
  authorization: string | undefined;
  body: string;
}

/** An HTTP server on 127.0.0.1 that records every request and answers it with `answer`. */
async function recordingServer(answer: (req: Received) => { status: number; body?: unknown; delayMs?: number }): Promise<{ url: string; received: Received[]; close: () => Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      const seen = { method: req.method ?? "", path: req.url ?? "", authorization: req.headers.authorization, body };
      received.push(seen);
      const { status, body: out, delayMs = 0 } = answer(seen);
      setTimeout(() => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(out === undefined ? "" : JSON.stringify(out));
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** The one external task the stand-in engine hands out (no variables: the worker reports a BPMN error for it). */
const TASK = { id: "task-1", topicName: "api-request", workerId: "w", variables: {}, retries: null, processInstanceId: "p-1", tenantId: null, activityId: "a", executionId: "e" };

/**
 * A stand-in of the Camunda 7 REST API (the fetch-and-lock long poll, the reports, /engine) that
 * answers only a request carrying `expected` as its Authorization header, and 401 otherwise.
 */
async function engineRequiring(expected: () => string | undefined) {
  let handedOut = false;
  return recordingServer((req) => {
    if (req.authorization !== expected()) return { status: 401, body: { type: "AuthenticationException", message: "unauthorized" } };
    if (req.path.endsWith("/external-task/fetchAndLock")) {
      const tasks = handedOut ? [] : [TASK];
      handedOut = true;
      // An empty answer after a while, as a long poll that found nothing.
      return { status: 200, body: tasks, delayMs: tasks.length === 0 ? 200 : 0 };
    }
    if (req.path.endsWith("/engine")) return { status: 200, body: [{ name: "default" }] };
    return { status: 204 };
  });
}

describe("Camunda 7 worker authentication (CAMUNDA_AUTH), against an engine stand-in that checks the Authorization header", function () {
  this.timeout(30_000);
  let services: Services;
  let db: Awaited<ReturnType<typeof backend>>;
  const closers: (() => Promise<unknown>)[] = [];
  const workers: RunningWorker[] = [];

  before(async () => {
    db = await backend("embedded");
    services = createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }), db);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await Promise.all(closers.splice(0).map((close) => close()));
  });

  /** Starts the worker configured from `env` (CAMUNDA_URL set to the engine), as the service does. */
  const startWorker = (env: Record<string, string>) => {
    const settings = loadConfig({ JWT_SECRET: TEST_JWT_SECRET, CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: "200", ...env }).camunda7!;
    const worker = startCamunda7Worker(services, settings, { database: db.knex, logger: createLogger("silent") });
    workers.push(worker);
    return worker;
  };

  /** Waits for the task's report, then checks every request the engine saw carried the header. */
  const expectAuthenticated = async (engine: Awaited<ReturnType<typeof engineRequiring>>, header: string | undefined) => {
    await waitUntil(() => engine.received.some((r) => r.path.includes(`/external-task/${TASK.id}/`)), "the task's report");
    const paths = engine.received.map((r) => r.path.replace(/^.*\/engine-rest/, ""));
    expect(paths).to.include("/external-task/fetchAndLock");
    expect(paths.some((p) => p.startsWith(`/external-task/${TASK.id}/`))).to.equal(true);
    expect([...new Set(engine.received.map((r) => r.authorization))]).to.deep.equal([header]);
  };

  it("none (the default): no Authorization header", async () => {
    const engine = await engineRequiring(() => undefined);
    closers.push(engine.close);
    const worker = startWorker({ CAMUNDA_URL: `${engine.url}/engine-rest` });
    await expectAuthenticated(engine, undefined);
    await worker.check();
  });

  it("basic: the userinfo of CAMUNDA_URL is sent as an Authorization header on every request (the library's BasicAuthInterceptor), and the readiness check sends it too", async () => {
    const header = `Basic ${Buffer.from("demo:pa ss@1").toString("base64")}`;
    const engine = await engineRequiring(() => header);
    closers.push(engine.close);
    const worker = startWorker({ CAMUNDA_URL: `${engine.url.replace("//", "//demo:pa%20ss%401@")}/engine-rest` });
    await expectAuthenticated(engine, header);
    await worker.check();
  });

  it("basic: CAMUNDA_USERNAME and CAMUNDA_PASSWORD", async () => {
    const header = `Basic ${Buffer.from("worker:s3cret").toString("base64")}`;
    const engine = await engineRequiring(() => header);
    closers.push(engine.close);
    startWorker({ CAMUNDA_URL: `${engine.url}/engine-rest`, CAMUNDA_AUTH: "basic", CAMUNDA_USERNAME: "worker", CAMUNDA_PASSWORD: "s3cret" });
    await expectAuthenticated(engine, header);
  });

  it("bearer: a static token (CAMUNDA_TOKEN)", async () => {
    const engine = await engineRequiring(() => "Bearer static-token-1");
    closers.push(engine.close);
    const worker = startWorker({ CAMUNDA_URL: `${engine.url}/engine-rest`, CAMUNDA_AUTH: "bearer", CAMUNDA_TOKEN: "static-token-1" });
    await expectAuthenticated(engine, "Bearer static-token-1");
    await worker.check();
  });

  it("oauth: a token fetched with client credentials (scope and audience sent) is the bearer token of every request; the engine refusing it gets a fresh one", async () => {
    let issued = 0;
    const tokens = await recordingServer(() => ({ status: 200, body: { access_token: `issued-${++issued}`, token_type: "Bearer", expires_in: 300 } }));
    closers.push(tokens.close);
    // The engine takes the first token until it is revoked (below), then only the second.
    let accepted = "Bearer issued-1";
    const engine = await engineRequiring(() => accepted);
    closers.push(engine.close);
    const worker = startWorker({
      CAMUNDA_URL: `${engine.url}/engine-rest`,
      CAMUNDA_AUTH: "oauth",
      CAMUNDA_TOKEN_URL: `${tokens.url}/oauth/token`,
      CAMUNDA_CLIENT_ID: "task-worker",
      CAMUNDA_CLIENT_SECRET: "client secret&1",
      CAMUNDA_CLIENT_SCOPE: "engine-rest",
      CAMUNDA_CLIENT_AUDIENCE: "camunda",
    });
    await expectAuthenticated(engine, "Bearer issued-1");
    // Many engine requests, one token request: the token is kept.
    expect(tokens.received).to.have.length(1);
    const asked = tokens.received[0]!;
    expect(asked.method).to.equal("POST");
    expect(asked.path).to.equal("/oauth/token");
    expect(Object.fromEntries(new URLSearchParams(asked.body))).to.deep.equal({
      grant_type: "client_credentials",
      client_id: "task-worker",
      client_secret: "client secret&1",
      audience: "camunda",
      scope: "engine-rest",
    });

    accepted = "Bearer issued-2";
    const before = engine.received.length;
    await waitUntil(() => engine.received.slice(before).some((r) => r.authorization === "Bearer issued-2"), "a request with the fresh token");
    expect(tokens.received).to.have.length(2);
    await worker.check();
  });

  it("oauth: the readiness check is bounded, a token endpoint that does not answer included", async () => {
    const silent = await recordingServer(() => ({ status: 200, body: { access_token: "late", expires_in: 300 }, delayMs: 30_000 }));
    closers.push(silent.close);
    const worker = startWorker({ CAMUNDA_URL: "http://127.0.0.1:1/engine-rest", CAMUNDA_TOKEN_URL: `${silent.url}/token`, CAMUNDA_CLIENT_ID: "c", CAMUNDA_CLIENT_SECRET: "s" });
    const failure = await worker.check().then(
      () => "ready",
      (err: Error) => err.message,
    );
    expect(failure).to.equal("Camunda 7 (or its token endpoint) did not answer in 2 s");
  });

  describe("the client-credentials token", () => {
    const credentials = (url: string): ClientCredentials => ({ url, clientId: "c", clientSecret: new Secret("cs-value") });

    it("is kept until a quarter of its lifetime (at most a minute) is left, then asked for again; callers at once share one request", async () => {
      let issued = 0;
      const server = await recordingServer(() => ({ status: 200, body: { access_token: `t${++issued}`, expires_in: 100 } }));
      closers.push(server.close);
      let now = 1_000_000;
      const token = new ClientCredentialsToken(credentials(server.url), () => now);
      expect(await Promise.all([token.get(), token.get(), token.get()])).to.deep.equal(["t1", "t1", "t1"]);
      expect(server.received).to.have.length(1);
      // 100 s of life: renewed when 25 s are left.
      now += 74_999;
      expect(await token.get()).to.equal("t1");
      now += 1;
      expect(await token.get()).to.equal("t2");
      expect(server.received).to.have.length(2);
      // A long-lived token is renewed a minute before it expires.
      const long = await recordingServer(() => ({ status: 200, body: { access_token: `l${++issued}`, expires_in: 3600 } }));
      closers.push(long.close);
      const hourly = new ClientCredentialsToken(credentials(long.url), () => now);
      const first = await hourly.get();
      now += 3_539_999;
      expect(await hourly.get()).to.equal(first);
      now += 1;
      expect(await hourly.get()).not.to.equal(first);
    });

    it("fails with the endpoint (its password redacted) and the status, never the answer's body nor the secret", async () => {
      const server = await recordingServer(() => ({ status: 401, body: { error: "invalid_client", echo: "cs-value" } }));
      closers.push(server.close);
      const failure = await new ClientCredentialsToken(credentials(server.url)).get().then(
        () => expect.fail("a token was answered"),
        (err: Error) => err.message,
      );
      expect(failure).to.equal(`the token endpoint ${server.url}/ answered 401`);
      // fetch refuses a URL with userinfo, quoting it: the password is not.
      const unreachable = await new ClientCredentialsToken(credentials(server.url.replace("//", "//user:url-pw@"))).get().catch((err: Error) => err.message);
      expect(unreachable).to.match(new RegExp(`^the token endpoint http://user:\\*\\*\\*@127\\.0\\.0\\.1:\\d+/ could not be reached: `));
      expect(unreachable).not.to.contain("url-pw");
      const noToken = await recordingServer(() => ({ status: 200, body: { token_type: "Bearer" } }));
      closers.push(noToken.close);
      const refused = await new ClientCredentialsToken(credentials(noToken.url)).get().catch((err: Error) => err.message);
      expect(refused).to.equal(`the token endpoint ${noToken.url}/ answered no access_token`);
    });
  });
});
