import { request } from "node:http";
import { connect } from "node:net";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { loadConfig } from "../src/config.js";
import { openDatabase } from "../src/db/database.js";
import { demoEnvironment } from "../src/demo/environment.js";
import { TEST_DATABASE_URL } from "./support/backends.js";
import { freePort, ROOT, startNode, type RunningProcess } from "./support/process.js";
import { adminToken, TEST_JWT_SECRET } from "./support/tokens.js";

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

for (const backend of ["embedded", "postgres"] as const) {
  describe(`the server process [${backend}]`, function () {
    this.timeout(150_000);
    let dir: string;
    let server: RunningProcess | undefined;
    let port: number;

    beforeEach(async () => {
      dir = mkdtempSync(join(tmpdir(), "server-"));
      port = await freePort();
      const env: Record<string, string> = { PORT: String(port), DATA_DIR: dir, JWT_SECRET: TEST_JWT_SECRET, HOST: "127.0.0.1" };
      if (backend === "postgres") env.DATABASE_URL = TEST_DATABASE_URL;
      server = startNode("dist/src/main.js", env);
      await server.waitFor(/"message":"listening"/);
    });
    afterEach(() => {
      server?.kill();
      rmSync(dir, { recursive: true, force: true });
    });

    it("answers /health", async () => {
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({ status: "ok", database: { kind: backend, status: "ok" } });
    });

    it("on SIGTERM stops taking connections, finishes the request in flight, closes the database and exits 0", async () => {
      const tenant = `shutdown-${port}`;
      const body = JSON.stringify({ entities: [{ type: "Shutdown", key: "in-flight", attributes: { n: 1 } }] });
      const half = Math.floor(body.length / 2);
      const token = await adminToken();
      let finish: () => void = () => {};
      let taken: () => void = () => {};
      const requestTaken = new Promise<void>((resolve) => (taken = resolve));
      const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(
          {
            host: "127.0.0.1",
            port,
            method: "POST",
            path: "/graph/entities",
            headers: {
              authorization: `Bearer ${token}`,
              "x-tenant-id": tenant,
              "content-type": "application/json",
              "content-length": Buffer.byteLength(body),
              // The server answers 100 Continue as it takes the request (its routing and access
              // checks begin in that same turn): the signal below follows that, not a guessed pause.
              expect: "100-continue",
            },
          },
          (res) => {
            let text = "";
            res.on("data", (c: Buffer) => (text += c.toString()));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
          },
        );
        req.on("error", reject);
        req.on("continue", () => {
          req.write(body.slice(0, half));
          taken();
        });
        req.flushHeaders();
        // The rest follows after the signal (below).
        finish = () => req.end(body.slice(half));
      });
      await requestTaken;
      await new Promise((r) => setTimeout(r, 100));

      server!.child.kill("SIGTERM");
      await server!.waitFor(/shutting down/);
      await new Promise((r) => setTimeout(r, 100));
      expect(await canConnect(port)).to.equal(false);

      finish();
      const answered = await response;
      expect(answered.status, answered.body).to.equal(200);
      expect(await server!.exited).to.equal(0);
      await server!.waitFor(/"message":"stopped"/);

      const db = await openDatabase({ databaseUrl: backend === "postgres" ? TEST_DATABASE_URL : undefined, dataDir: dir, poolSize: 1 });
      try {
        const rows: { key: string }[] = await db.knex("entities").where({ tenant }).select("key");
        expect(rows).to.deep.equal([{ key: "in-flight" }]);
      } finally {
        await db.close();
      }
    });
  });
}

describe("the server process without configuration", function () {
  this.timeout(120_000);
  it("refuses to start with a clear message and exit code 2", async () => {
    const server = startNode("dist/src/main.js", { PORT: "abc" });
    expect(await server.exited).to.equal(2);
    expect(server.lines.join("\n")).to.contain("PORT: PORT must be a whole number");
    expect(server.lines.join("\n")).to.contain("none of JWT_SECRET, JWT_PUBLIC_KEY, JWT_JWKS_URL and OIDC_ISSUER_URL is set");
  });

  it("exits 2 for a configuration problem from every entry point, and 1 for any other start-up failure", async () => {
    const demo = startNode("dist/src/demo.js", { PORT: "abc", AUTH_DISABLED: "true" });
    expect(await demo.exited).to.equal(2);
    expect(demo.lines.join("\n")).to.contain("PORT: PORT must be a whole number");
    const worker = startNode("dist/src/worker.js", {});
    expect(await worker.exited).to.equal(2);
    expect(worker.lines.join("\n")).to.contain("the worker needs an engine");
    // A sound configuration whose embedded database cannot be made: not a configuration problem.
    const server = startNode("dist/src/main.js", { AUTH_DISABLED: "true", DATA_DIR: "/dev/null/data", PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent" });
    expect(await server.exited).to.equal(1);
    expect(server.lines.join("\n")).to.match(/^failed to start: /m);
  });
});

/** The error code of a TCP connection to host:port, or "connected". */
function connectError(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

describe("the demo command", function () {
  this.timeout(150_000);
  it("binds 127.0.0.1 unless HOST says otherwise; the production default stays 0.0.0.0", () => {
    expect(demoEnvironment({}).HOST).to.equal("127.0.0.1");
    expect(demoEnvironment({ HOST: " " }).HOST).to.equal("127.0.0.1");
    expect(demoEnvironment({ HOST: "0.0.0.0", PORT: "1" })).to.deep.equal({ HOST: "0.0.0.0", PORT: "1" });
    expect(loadConfig(demoEnvironment({ AUTH_DISABLED: "true" })).host).to.equal("127.0.0.1");
    expect(loadConfig({ AUTH_DISABLED: "true" }).host).to.equal("0.0.0.0");
  });

  it("keeps its development secret in memory, writing no file, when DATA_DIR is memory://", async () => {
    const stray = join(ROOT, "memory:");
    rmSync(stray, { recursive: true, force: true });
    const demo = startNode("dist/src/demo.js", { DATA_DIR: "memory://", PORT: String(await freePort()) });
    try {
      await demo.waitFor(/export TOKEN=/);
      expect(existsSync(stray), `${stray} written`).to.equal(false);
      demo.child.kill("SIGTERM");
      expect(await demo.exited).to.equal(0);
    } finally {
      demo.kill();
      rmSync(stray, { recursive: true, force: true });
    }
  });

  it("starts on the embedded database with no environment, seeds demo data and prints a request that works", async () => {
    const dir = mkdtempSync(join(tmpdir(), "demo-"));
    const port = await freePort();
    // No HOST: the demo (which prints an admin token) listens on the loopback interface only.
    const demo = startNode("dist/src/demo.js", { DATA_DIR: dir, PORT: String(port) });
    try {
      const listening = await demo.waitFor(/"listening"/);
      expect(listening).to.contain(`http://127.0.0.1:${port}`);
      const outside = Object.values(networkInterfaces())
        .flat()
        .find((i) => i !== undefined && !i.internal && i.family === "IPv4");
      if (outside !== undefined) expect(await connectError(outside.address, port), `${outside.address}:${port}`).to.equal("ECONNREFUSED");
      const tokenLine = await demo.waitFor(/export TOKEN=/);
      const requestLine = await demo.waitFor(/-d '\{"apiDefinitionExternalId"/);
      const browseLine = await demo.waitFor(/curl -s 'http:.*graph\/entities/);
      const token = tokenLine.replace(/.*TOKEN=/, "").trim();
      const headers = { authorization: `Bearer ${token}`, "x-tenant-id": "demo", "content-type": "application/json" };

      const body = /-d '(.*)'/.exec(requestLine)?.[1];
      const requested = await fetch(`http://127.0.0.1:${port}/task-backend/tasks/demo/api/request`, { method: "POST", headers, body });
      expect(requested.status).to.equal(200);
      const answer = (await requested.json()) as { accessPoints: { externalId: string; accessPointType: string }[] };
      expect(answer.accessPoints.map((a) => [a.externalId, a.accessPointType])).to.deep.equal([
        ["541448820000000011", "ELECTRICITY"],
        ["541448820000000028", "GAS"],
      ]);

      const url = /'(http:[^']+)'/.exec(browseLine)?.[1];
      expect(url).to.equal(`http://localhost:${port}/graph/entities?type=AccessPoint`);
      const res = await fetch(url!.replace("localhost", "127.0.0.1"), { headers });
      expect(res.status).to.equal(200);
      const page = (await res.json()) as { entities: { key: string; accessPointType: string }[] };
      expect(page.entities.map((e) => [e.key, e.accessPointType])).to.deep.equal([
        ["541448820000000011", "ELECTRICITY"],
        ["541448820000000028", "GAS"],
        ["541448820000000035", "ELECTRICITY"],
      ]);
      // The printed token names the demo tenant only (contract §9).
      const elsewhere = await fetch(url!.replace("localhost", "127.0.0.1"), { headers: { ...headers, "x-tenant-id": "another" } });
      expect(elsewhere.status).to.equal(403);
      expect(await elsewhere.json()).to.include({ code: "FORBIDDEN" });
      demo.child.kill("SIGTERM");
      expect(await demo.exited).to.equal(0);
    } finally {
      demo.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
