import { expect } from "chai";
import { backend, randomTenant } from "../support/backends.js";
import { documentedMetrics } from "../support/metrics-doc.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken } from "../support/tokens.js";

/**
 * GET /metrics parsed as Prometheus text: every metric's type agrees with its name (a counter ends
 * in `_total`, a gauge or histogram does not, a histogram names its unit), and the service's own
 * metrics are exactly those of docs/reference/observability.md, with its types and labels.
 */

interface Family {
  type: string;
  samples: { name: string; labels: Record<string, string> }[];
}

/** The exposition text's families by name: their TYPE and samples (a histogram's _bucket, _sum, _count under it). */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  for (const line of text.split("\n")) {
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type !== null) {
      families.set(type[1]!, { type: type[2]!, samples: [] });
      continue;
    }
    if (line === "" || line.startsWith("#")) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    expect(sample, `not a sample line: ${line}`).not.to.equal(null);
    const name = sample![1]!;
    const family = families.get(name) ?? families.get(name.replace(/_(bucket|sum|count)$/, ""));
    expect(family, `a sample without its TYPE: ${line}`).not.to.equal(undefined);
    const labels = Object.fromEntries([...(sample![2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]));
    family!.samples.push({ name, labels });
  }
  return families;
}

/** prom-client's default gauges whose names end in _total (documented as kept). */
const NODE_GAUGES_NAMED_TOTAL = ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"];

describe("GET /metrics", function () {
  this.timeout(180_000);
  let server: TestServer;
  let families: Map<string, Family>;
  before(async () => {
    server = await testServer(await backend("embedded"));
    const headers = { authorization: `Bearer ${await adminToken()}`, "x-tenant-id": randomTenant() };
    await server.app.inject({ method: "GET", url: "/graph/entities?limit=1", headers });
    await server.app.inject({ method: "GET", url: "/graph/entities?limit=0", headers });
    await server.app.inject({ method: "GET", url: "/nowhere", headers });
    server.metrics.fetched("zeebe", "api-request");
    server.metrics.finished("zeebe", "api-request", "bpmnError", "INVALID_REQUEST", 0.01);
    server.metrics.finished("zeebe", "api-request", "failure", "UNAVAILABLE", 0.01);
    server.metrics.finished("zeebe", "api-request", "completed", undefined, 0.01);
    server.metrics.finished("zeebe", "api-request", "unreported", undefined, 0.01);
    const res = await server.app.inject({ method: "GET", url: "/metrics" });
    expect(res.statusCode).to.equal(200);
    expect(res.headers["content-type"]).to.match(/^text\/plain/);
    families = parseExposition(res.body);
  });
  after(() => server.app.close());

  it("names every metric by Prometheus conventions: counters end in _total, nothing else does, histograms name their unit", () => {
    expect(families.size).to.be.greaterThan(20);
    for (const [name, family] of families) {
      if (family.type === "counter") expect(name, `counter ${name}`).to.match(/_total$/);
      else if (!NODE_GAUGES_NAMED_TOTAL.includes(name)) expect(name, `${family.type} ${name}`).not.to.match(/_total$/);
      if (family.type === "histogram") expect(name, `histogram ${name}`).to.match(/_(seconds|bytes)$/);
    }
    expect(families.get("transform_stopped_total")?.type).to.equal("counter");
  });

  it("exposes exactly the metrics of the observability reference, with its types and labels", () => {
    const { table, quoted } = documentedMetrics();
    const ours = [...families.keys()].filter((name) => !/^(process|nodejs)_/.test(name));
    expect(ours.toSorted()).to.deep.equal(table.map((m) => m.name).toSorted());
    for (const documented of table) {
      const family = families.get(documented.name)!;
      expect(family.type, documented.name).to.equal(documented.type);
      for (const sample of family.samples) {
        const labels = Object.keys(sample.labels).filter((l) => !(family.type === "histogram" && l === "le"));
        expect(labels.toSorted(), `${sample.name} labels`).to.deep.equal(documented.labels.toSorted());
      }
    }
    for (const name of quoted) expect(families.has(name), `${name} is quoted in the reference`).to.equal(true);
  });

  it("labels the latency histogram with the status class and the request counter with the status", () => {
    const duration = families.get("http_request_duration_seconds")!.samples.filter((s) => s.name.endsWith("_count"));
    expect(duration.map((s) => s.labels.status)).to.include.members(["2xx", "4xx"]);
    for (const sample of duration) expect(sample.labels.status).to.match(/^[1-5]xx$/);
    const requests = families.get("http_requests_total")!.samples;
    expect(requests.map((s) => s.labels.status)).to.include.members(["200", "400", "404"]);
    expect(requests.find((s) => s.labels.status === "404")!.labels.route).to.equal("unmatched");
  });
});
