import { expect } from "chai";
import { createLogger } from "../../src/logger.js";
import { camunda7Settings, zeebeSettings } from "../../src/config.js";
import { createServices } from "../../src/services.js";
import { startCamunda7Worker } from "../../workers/camunda7/worker.js";
import { startZeebeWorker } from "../../workers/zeebe/worker.js";
import { backend } from "../support/backends.js";
import { testServer } from "../support/server.js";

describe("operations endpoints", function () {
  this.timeout(30_000);

  it("serves Prometheus metrics counting REST requests by route and status", async () => {
    const server = await testServer(await backend("embedded"));
    try {
      await server.app.inject({ method: "GET", url: "/health" });
      await server.app.inject({ method: "GET", url: "/nowhere" });
      const res = await server.app.inject({ method: "GET", url: "/metrics" });
      expect(res.statusCode).to.equal(200);
      expect(res.headers["content-type"]).to.match(/^text\/plain/);
      expect(res.body).to.contain('http_requests_total{method="GET",route="/health",status="200"} 1');
      expect(res.body).to.contain('http_requests_total{method="GET",route="unmatched",status="404"} 1');
      expect(res.body).to.match(/http_request_duration_seconds_count\{method="GET",route="\/health",status="2xx"\} 1/);
      expect(res.body).to.contain("process_cpu_user_seconds_total");
    } finally {
      await server.app.close();
    }
  });

  it("answers /ready with every check, and 503 naming the engine connections that are down", async () => {
    const db = await backend("embedded");
    const ready = await testServer(db);
    try {
      const res = await ready.app.inject({ method: "GET", url: "/ready" });
      expect(res.statusCode).to.equal(200);
      expect(res.json()).to.deep.equal({ status: "ready", checks: { database: { status: "up" } } });
    } finally {
      await ready.app.close();
    }

    // Real workers, pointed at engines that are not there.
    const silent = createLogger("silent");
    const services = createServices(ready.config, db);
    const workers = [
      startCamunda7Worker(services, camunda7Settings("http://127.0.0.1:1/engine-rest", { asyncResponseTimeoutMs: 500 }), { database: db.knex, logger: silent }),
      startZeebeWorker(services, zeebeSettings("127.0.0.1:1"), { database: db.knex, logger: silent }),
    ];
    const down = await testServer(db, {}, workers);
    try {
      const res = await down.app.inject({ method: "GET", url: "/ready" });
      expect(res.statusCode).to.equal(503);
      const body = res.json() as { code: string; detail: string; errors: { path: string }[] };
      expect(body.code).to.equal("UNAVAILABLE");
      expect(body.detail).to.equal("not ready: camunda7, zeebe down");
      expect(body.errors.map((e) => e.path)).to.deep.equal(["camunda7", "zeebe"]);
    } finally {
      await down.app.close();
      await Promise.all(workers.map((w) => w.stop()));
    }
  });
});
