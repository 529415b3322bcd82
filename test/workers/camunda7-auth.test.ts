import { connect } from "node:net";
import { expect } from "chai";
import { EXAMPLE_DEFINITION } from "../../src/demo/seed.js";
import { CAMUNDA7_ENGINES, Camunda7Engine, type BasicAuth } from "../support/camunda7.js";
import { ENGINE_START_TIMEOUT_MS, type RunningProcess } from "../support/process.js";
import { camunda7WorkerSetup, processTaskLines, startWorkerProcess, waitUntil } from "../support/workers.js";

/** Answers whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** The test engines with HTTP basic authentication on their REST API (ENGINE_BASIC_AUTH_USER / _PASSWORD). */
for (const kind of CAMUNDA7_ENGINES) {
  describe(`${kind.name} test engine with basic authentication on its REST API`, function () {
    this.timeout(120_000);
    const credentials: BasicAuth = { user: "worker", password: "s3cret:with@signs" };
    let engine: Camunda7Engine;
    let tenant: string;
    const processes: RunningProcess[] = [];

    before(async function () {
      this.timeout(ENGINE_START_TIMEOUT_MS + 60_000);
      ({ engine, tenant } = await camunda7WorkerSetup(kind, { basicAuth: credentials }));
    });
    afterEach(() => processes.splice(0).forEach((p) => p.kill()));
    after(async () => {
      await engine?.stop();
    });

    it("answers 401 to a request without credentials or with a user it does not know", async () => {
      const url = `${engine.baseUrl}/process-definition/key/api-request-example`;
      expect((await fetch(url)).status).to.equal(401);
      // Not the worker's user with a wrong password: the engine would then refuse that user for a
      // few seconds (its login delay), whatever the password, and the other tests with it.
      const unknown = Buffer.from(`intruder:${credentials.password}`).toString("base64");
      expect((await fetch(url, { headers: { authorization: `Basic ${unknown}` } })).status).to.equal(401);
      expect((await engine.call<{ key: string }>("GET", "/process-definition/key/api-request-example")).key).to.equal("api-request-example");
    });

    it("listens on 127.0.0.1 only, by its own configuration", async () => {
      const port = Number(new URL(engine.baseUrl).port);
      expect(await accepts("127.0.0.1", port)).to.equal(true);
      // Another loopback address reaches a server bound to every interface, not one bound to 127.0.0.1.
      expect(await accepts("127.0.0.2", port)).to.equal(false);
    });

    const credentialForms: [string, () => Record<string, string>][] = [
      ["CAMUNDA_URL carries the user and password", () => {
        const url = new URL(engine.baseUrl);
        url.username = encodeURIComponent(credentials.user);
        url.password = encodeURIComponent(credentials.password);
        return { CAMUNDA_URL: url.toString() };
      }],
      ["CAMUNDA_AUTH=basic names the user and password", () => ({ CAMUNDA_URL: engine.baseUrl, CAMUNDA_AUTH: "basic", CAMUNDA_USERNAME: credentials.user, CAMUNDA_PASSWORD: credentials.password })],
    ];
    for (const [form, env] of credentialForms) {
      it(`runs a task for a worker process whose ${form}, and logs no password`, async () => {
        const worker = await startWorkerProcess({ ...env(), CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: "1000" });
        processes.push(worker.process);
        const id = await engine.startInstance("api-request-example", { apiDefinitionExternalId: EXAMPLE_DEFINITION.externalId, tenantId: tenant, queryParameters: { publicId: "AGR-1" } });
        expect(await engine.settle(id)).to.equal("ended");
        expect(await engine.endEvent(id)).to.equal("EndFound");
        await waitUntil(() => processTaskLines(worker.process.lines).length > 0, "task logged");
        expect(processTaskLines(worker.process.lines).map((l) => l.outcome)).to.deep.equal(["completed"]);
        expect(worker.process.lines.filter((line) => line.includes(credentials.password))).to.deep.equal([]);
      });
    }
  });
}
