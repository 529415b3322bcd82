import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { TEST_DATABASE_URL } from "./support/backends.js";
import { freePort, startNode, type RunningProcess } from "./support/process.js";
import { hsToken, unsignedToken } from "./support/tokens.js";

/**
 * Issue 24 item 2: no password, token, client secret or key in any log line. The service and the
 * workers run as real processes at LOG_LEVEL=debug with a distinct, recognisable value in every
 * secret setting (URLs included), are exercised, and every line they write (stdout and stderr) is
 * searched for each value in clear, base64, base64url and URL-encoded.
 */

/** Each secret setting's value: recognisable, and each distinct. */
const SECRET = {
  jwt: "JWT-secret-value-0123456789-abcdefghij",
  database: "dbPass-6f1c-secret",
  camundaUrlPassword: "c7UrlPass-91b2",
  camundaToken: "c7StaticToken-77a1",
  camundaClientSecret: "c7ClientSecret-4d0e",
  zeebeClientSecret: "zbClientSecret-8c3f",
  zeebeBasicPassword: "zbBasicPass-2a9d",
  zeebeBearerToken: "zbBearerToken-5e6b",
  // Fetched at run time: tokens no setting names.
  camundaAccessToken: "c7AccessToken-3b8c",
} as const;

/** Every form in which `secret` could reach a line. */
function formsOf(secret: string): string[] {
  const bytes = Buffer.from(secret);
  return [...new Set([secret, encodeURIComponent(secret), bytes.toString("base64"), bytes.toString("base64").replace(/=+$/, ""), bytes.toString("base64url")])];
}

/** The lines of `lines` that hold any form of any of `secrets`, each with what it holds. */
function leaks(lines: string[], secrets: string[]): string[] {
  return lines.flatMap((line) => secrets.flatMap((secret) => formsOf(secret).filter((form) => line.includes(form)).map((form) => `${form} (of ${secret}) in: ${line}`)));
}

const DATABASE_URL = (() => {
  const url = new URL(TEST_DATABASE_URL);
  // The test database trusts local connections: the password is sent and ignored.
  url.password = SECRET.database;
  return url.toString();
})();

interface Recording {
  url: string;
  requests: { path: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 answering each request with `answer`, recording it. */
async function serve(answer: (path: string, authorization: string | undefined, n: number) => { status: number; body: unknown; delayMs?: number }): Promise<Recording> {
  const requests: Recording["requests"] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      requests.push({ path: req.url ?? "", authorization: req.headers.authorization });
      const { status, body, delayMs = 0 } = answer(req.url ?? "", req.headers.authorization, requests.length);
      setTimeout(() => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/**
 * A Camunda 7 stand-in: its first three fetches are refused with a body that echoes the
 * Authorization header it was sent (an engine or proxy that quotes the request: the worker logs
 * the engine's answer), then each fetch is an empty long poll.
 */
const camunda7StandIn = () =>
  serve((path, authorization, n) => {
    if (path.endsWith("/external-task/fetchAndLock") && n <= 3) return { status: 401, body: { type: "AuthenticationException", message: `refused the credentials ${authorization ?? "(none)"}` } };
    if (path.endsWith("/external-task/fetchAndLock")) return { status: 200, body: [], delayMs: 200 };
    return { status: 200, body: [{ name: "default" }] };
  });

/** A token endpoint handing out `token` (a JWT for the Zeebe SDK, which reads its expiry). */
const tokenEndpoint = (token: string) => serve(() => ({ status: 200, body: { access_token: token, token_type: "Bearer", expires_in: 600 } }));

/** Runs `script` until `exercised` resolves, then stops it with SIGTERM; answers every line it wrote. */
async function runUntil(script: string, env: Record<string, string>, exercised: (process: RunningProcess) => Promise<void>): Promise<string[]> {
  const child = startNode(script, { LOG_LEVEL: "debug", HOST: "127.0.0.1", SHUTDOWN_TIMEOUT_MS: "15000", ...env });
  try {
    await exercised(child);
    child.child.kill("SIGTERM");
    await child.exited;
    return child.lines;
  } finally {
    child.kill();
  }
}

/** Waits until the Camunda 7 stand-in has refused the worker and then served it again (outage logged, then recovery). */
async function camunda7Exercised(child: RunningProcess, engine: Recording): Promise<void> {
  await child.waitFor(/camunda 7 worker started/);
  await child.waitFor(/camunda 7 unreachable; retrying/);
  await child.waitFor(/camunda 7 reachable again/, 30_000);
  expect(engine.requests.length).to.be.greaterThan(3);
}

describe("no secret in any log line (the service and both workers as processes, every secret setting set)", function () {
  this.timeout(120_000);
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()));
  });
  const recording = async (made: Promise<Recording>) => {
    const server = await made;
    closers.push(server.close);
    return server;
  };

  it("the service with both workers: CAMUNDA_URL with userinfo, Zeebe OAuth, JWT_SECRET, DATABASE_URL with a password; requests with a token, good and bad", async () => {
    const engine = await recording(camunda7StandIn());
    const zeebeToken = unsignedToken({ sub: "zeebe-worker", exp: Math.floor(Date.now() / 1000) + 600 });
    const tokens = await recording(tokenEndpoint(zeebeToken));
    const port = await freePort();
    const token = await hsToken({ roles: ["admin"] }, SECRET.jwt);
    const lines = await runUntil(
      "dist/src/main.js",
      {
        PORT: String(port),
        JWT_SECRET: SECRET.jwt,
        DATABASE_URL,
        CAMUNDA_URL: `${engine.url.replace("//", `//c7user:${SECRET.camundaUrlPassword}@`)}/engine-rest`,
        ZEEBE_ADDRESS: `127.0.0.1:${await freePort()}`,
        ZEEBE_CLIENT_ID: "zeebe-worker",
        ZEEBE_CLIENT_SECRET: SECRET.zeebeClientSecret,
        ZEEBE_OAUTH_URL: `${tokens.url}/oauth/token`,
      },
      async (child) => {
        await child.waitFor(/"message":"listening"/);
        const base = `http://127.0.0.1:${port}`;
        expect((await fetch(`${base}/health`)).status).to.equal(200);
        const headers = { authorization: `Bearer ${token}`, "x-tenant-id": `secrets-${port}` };
        expect((await fetch(`${base}/api-definitions/nowhere?token=${token}`, { headers })).status).to.equal(404);
        expect((await fetch(`${base}/api-definitions`, { headers: { ...headers, authorization: `Bearer ${token}x` } })).status).to.equal(401);
        expect((await fetch(`${base}/ready`)).status).to.equal(503);
        await camunda7Exercised(child, engine);
        await child.waitFor(/zeebe gateway unreachable; retrying/);
      },
    );
    expect(leaks(lines, [SECRET.jwt, SECRET.database, SECRET.camundaUrlPassword, `c7user:${SECRET.camundaUrlPassword}`, SECRET.zeebeClientSecret, token, zeebeToken])).to.deep.equal([]);
    // The lines still say where the engine and the database are.
    expect(lines.find((l) => l.includes("camunda 7 worker started"))).to.contain(`"baseUrl":"${engine.url}/engine-rest"`);
    expect(lines.find((l) => l.includes("database ready"))).to.contain(":***@");
  });

  it("the workers alone: Camunda 7 with a static bearer token (CAMUNDA_TOKEN), Zeebe with basic credentials (CAMUNDA_AUTH_STRATEGY=BASIC)", async () => {
    const engine = await recording(camunda7StandIn());
    const lines = await runUntil(
      "dist/src/worker.js",
      {
        PORT: String(await freePort()),
        DATABASE_URL,
        CAMUNDA_URL: `${engine.url}/engine-rest`,
        CAMUNDA_AUTH: "bearer",
        CAMUNDA_TOKEN: SECRET.camundaToken,
        ZEEBE_ADDRESS: `127.0.0.1:${await freePort()}`,
        CAMUNDA_AUTH_STRATEGY: "BASIC",
        CAMUNDA_BASIC_AUTH_USERNAME: "zeebe-user",
        CAMUNDA_BASIC_AUTH_PASSWORD: SECRET.zeebeBasicPassword,
      },
      async (child) => {
        await camunda7Exercised(child, engine);
        await child.waitFor(/zeebe gateway unreachable; retrying/);
      },
    );
    expect(engine.requests.map((r) => r.authorization)).to.include(`Bearer ${SECRET.camundaToken}`);
    expect(leaks(lines, [SECRET.database, SECRET.camundaToken, SECRET.zeebeBasicPassword, `zeebe-user:${SECRET.zeebeBasicPassword}`])).to.deep.equal([]);
  });

  it("the workers alone: Camunda 7 with OAuth client credentials (CAMUNDA_AUTH=oauth), Zeebe with a bearer token (CAMUNDA_AUTH_STRATEGY=BEARER)", async () => {
    const engine = await recording(camunda7StandIn());
    const tokens = await recording(tokenEndpoint(SECRET.camundaAccessToken));
    const lines = await runUntil(
      "dist/src/worker.js",
      {
        PORT: String(await freePort()),
        DATABASE_URL,
        CAMUNDA_URL: `${engine.url}/engine-rest`,
        CAMUNDA_AUTH: "oauth",
        CAMUNDA_TOKEN_URL: `${tokens.url}/token`,
        CAMUNDA_CLIENT_ID: "c7-worker",
        CAMUNDA_CLIENT_SECRET: SECRET.camundaClientSecret,
        ZEEBE_GRPC_ADDRESS: `grpc://127.0.0.1:${await freePort()}`,
        CAMUNDA_AUTH_STRATEGY: "BEARER",
        CAMUNDA_OAUTH_TOKEN: SECRET.zeebeBearerToken,
      },
      async (child) => {
        await camunda7Exercised(child, engine);
        await child.waitFor(/zeebe gateway unreachable; retrying/);
      },
    );
    expect(engine.requests.map((r) => r.authorization)).to.include(`Bearer ${SECRET.camundaAccessToken}`);
    expect(leaks(lines, [SECRET.database, SECRET.camundaClientSecret, SECRET.camundaAccessToken, SECRET.zeebeBearerToken])).to.deep.equal([]);
  });

  it("start-up failures on stderr: a database that cannot be reached, and settings that disagree", async () => {
    const closed = await freePort();
    const unreachable = startNode("dist/src/worker.js", {
      DATABASE_URL: `postgres://postgres:${SECRET.database}@127.0.0.1:${closed}/test?sslpassword=${SECRET.camundaToken}`,
      DATABASE_STARTUP_TIMEOUT_MS: "0",
      CAMUNDA_URL: `http://c7user:${SECRET.camundaUrlPassword}@127.0.0.1:${closed}/engine-rest`,
      LOG_LEVEL: "debug",
    });
    expect(await unreachable.exited).to.equal(1);
    expect(unreachable.lines.join("\n")).to.match(/failed to start: the database postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/test\?sslpassword=\*\*\* /);
    const disagreeing = startNode("dist/src/worker.js", {
      CAMUNDA_URL: `http://c7user:${SECRET.camundaUrlPassword}@127.0.0.1:${closed}/engine-rest`,
      CAMUNDA_PASSWORD: SECRET.camundaToken,
      ZEEBE_ADDRESS: `127.0.0.1:${closed}`,
      ZEEBE_CLIENT_SECRET: SECRET.zeebeClientSecret,
    });
    expect(await disagreeing.exited).to.equal(2);
    expect(disagreeing.lines.join("\n")).to.contain("CAMUNDA_PASSWORD and the password in CAMUNDA_URL disagree");
    const lines = [...unreachable.lines, ...disagreeing.lines];
    expect(leaks(lines, [SECRET.database, SECRET.camundaUrlPassword, SECRET.camundaToken, SECRET.zeebeClientSecret])).to.deep.equal([]);
  });
});
