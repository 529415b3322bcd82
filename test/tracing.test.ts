import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { context, propagation, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/logger.js";
import { inSpan, tracesExporters } from "../src/observe/tracing.js";
import { createServices } from "../src/services.js";
import { TaskRunner } from "../src/tasks/runner.js";
import { backend } from "./support/backends.js";
import { freePort, startNode, type RunningProcess } from "./support/process.js";
import { adminToken, TEST_JWT_SECRET } from "./support/tokens.js";

/**
 * OpenTelemetry traces (docs/reference/observability.md#traces): the service run as a process with
 * the standard OTEL_* variables exports its spans as OTLP/HTTP to a receiver in this test; the
 * spans continue the caller's traceparent, nest as documented and carry their attributes.
 */

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: OtlpValue }[];
}
interface Received {
  service: string | undefined;
  span: OtlpSpan;
}

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const SERVER_KIND = 2;

function attribute(span: OtlpSpan, key: string): string | number | boolean | undefined {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  if (value === undefined) return undefined;
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.boolValue ?? value.doubleValue;
}

/** An OTLP/HTTP receiver (JSON): every span of every export, with its resource's service.name. */
class Receiver {
  readonly spans: Received[] = [];
  readonly contentTypes = new Set<string>();
  private server: Server | undefined;

  async start(port: number): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.contentTypes.add(`${req.method} ${req.url} ${req.headers["content-type"]}`);
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
          resourceSpans: { resource: { attributes: { key: string; value: OtlpValue }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
        };
        for (const resourceSpans of body.resourceSpans) {
          const service = resourceSpans.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue;
          for (const scope of resourceSpans.scopeSpans) for (const span of scope.spans) this.spans.push({ service, span });
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, "127.0.0.1", resolve));
  }

  /** The spans named `name` (with `filter`), once at least one has arrived. */
  async waitFor(name: string, filter: (s: OtlpSpan) => boolean = () => true, timeoutMs = 30_000): Promise<OtlpSpan[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.spans.map((r) => r.span).filter((s) => s.name === name && filter(s));
      if (found.length > 0) return found;
      if (Date.now() > deadline) throw new Error(`no span ${name} within ${timeoutMs} ms; received: ${this.spans.map((r) => r.span.name).join(", ")}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server === undefined ? resolve() : this.server.close(() => resolve())));
  }
}

describe("traces exported over OTLP/HTTP", function () {
  this.timeout(240_000);
  const receiver = new Receiver();
  let service: RunningProcess;
  let base: string;
  let dir: string;
  let headers: Record<string, string>;
  const tenant = "traced-tenant";

  before(async () => {
    const receiverPort = await freePort();
    await receiver.start(receiverPort);
    const port = await freePort();
    dir = mkdtempSync(join(tmpdir(), "traced-"));
    service = startNode("dist/src/main.js", {
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dir,
      JWT_SECRET: TEST_JWT_SECRET,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiverPort}`,
      OTEL_SERVICE_NAME: "traced-backend",
      OTEL_BSP_SCHEDULE_DELAY: "100",
    });
    await service.waitFor(/"message":"listening"/, 180_000);
    base = `http://127.0.0.1:${port}`;
    headers = { authorization: `Bearer ${await adminToken()}`, "x-tenant-id": tenant, "content-type": "application/json" };
  });
  after(async () => {
    service?.kill();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = async (path: string, body: unknown, extra: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, { method: "POST", headers: { ...headers, ...extra }, body: JSON.stringify(body) });
    const text = await res.text();
    expect(res.status, `${path}: ${text}`).to.be.oneOf([200, 201]);
    return { json: JSON.parse(text) as Record<string, unknown>, requestId: res.headers.get("x-request-id") };
  };

  it("continues the caller's traceparent: the request's server span, its graph walk (SQL, no values), its transform and the process hop", async () => {
    await post("/graph/entities", { entities: [{ type: "Item", key: "traced-a" }, { type: "Item", key: "traced-b" }] });
    await post("/api-definitions", { externalId: "traced", query: "Item ?i.", transform: "{ \"items\": $count(i) }" });
    const { json, requestId } = await post(
      "/task-backend/tasks/demo/api/request",
      { apiDefinitionExternalId: "traced", queryParameters: {} },
      { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`, "x-request-id": "traced-request-1" },
    );
    expect(json).to.deep.equal({ items: 2 });
    expect(requestId).to.equal("traced-request-1");

    const [server] = await receiver.waitFor("POST /task-backend/tasks/:segment/api/request");
    expect(server).to.include({ traceId: TRACE_ID, parentSpanId: CALLER_SPAN, kind: SERVER_KIND });
    expect(attribute(server!, "http.request.method")).to.equal("POST");
    expect(attribute(server!, "http.route")).to.equal("/task-backend/tasks/:segment/api/request");
    expect(attribute(server!, "http.response.status_code")).to.equal(200);
    expect(attribute(server!, "request.id")).to.equal("traced-request-1");
    expect(attribute(server!, "tenant")).to.equal(tenant);

    const [walk] = await receiver.waitFor("graph walk", (s) => s.traceId === TRACE_ID);
    expect(walk!.parentSpanId).to.equal(server!.spanId);
    const sql = String(attribute(walk!, "db.query.text"));
    expect(sql).to.match(/\bselect\b/i);
    expect(sql).not.to.contain(tenant);
    expect(attribute(walk!, "db.system.name")).to.equal("postgresql");

    const [transform] = await receiver.waitFor("transform", (s) => s.traceId === TRACE_ID);
    expect(transform!.parentSpanId).to.equal(server!.spanId);
    const [hop] = await receiver.waitFor("transform child process", (s) => s.traceId === TRACE_ID);
    expect(hop!.parentSpanId).to.equal(transform!.spanId);
    expect(attribute(hop!, "transform.process")).to.equal("child");
    expect(receiver.spans.find((r) => r.span.spanId === server!.spanId)?.service).to.equal("traced-backend");
    expect([...receiver.contentTypes].some((c) => c.startsWith("POST /v1/traces application/json"))).to.equal(true);
  });

  it("starts a trace of its own without a traceparent, with an ingest batch span under the upload's span", async () => {
    const { json } = await post("/graph/entities", { entities: [{ type: "Item", key: "traced-events" }] });
    const itemId = (json.entities as { id: string }[])[0]!.id;
    const events = [0, 1, 2].map((i) => ({ timestamp: `2026-01-01T0${i}:00:00Z`, value: i }));
    await post(`/items/${itemId}/events`, { events }, { "x-request-id": "traced-upload" });
    const [upload] = await receiver.waitFor("POST /items/:itemId/events", (s) => attribute(s, "request.id") === "traced-upload");
    expect(upload!.parentSpanId ?? "").to.equal("");
    expect(upload!.traceId).to.match(/^[0-9a-f]{32}$/).and.not.equal(TRACE_ID);
    const [batch] = await receiver.waitFor("ingest batch", (s) => s.traceId === upload!.traceId);
    expect(batch!.parentSpanId).to.equal(upload!.spanId);
    expect(attribute(batch!, "ingest.rows")).to.equal(3);
    expect(attribute(batch!, "ingest.stored")).to.equal(3);
  });

  it("puts a calculation's span under its request's", async () => {
    const calculation = { externalId: "traced-calc", calculationType: "EXPRESSION", data: { calculation: { expression: "a + 1", expressionType: "VALUE", scope: { a: { type: "VALUE", value: 1 } } } } };
    await post("/calculation-definitions", calculation);
    const traceparent = `00-${"a".repeat(32)}-${"b".repeat(16)}-01`;
    await post("/calculation-definitions/traced-calc/calculate", {}, { traceparent });
    const [request] = await receiver.waitFor("POST /calculation-definitions/:externalId/calculate");
    expect(request!.traceId).to.equal("a".repeat(32));
    const [span] = await receiver.waitFor("calculation", (s) => s.traceId === "a".repeat(32));
    expect(span!.parentSpanId).to.equal(request!.spanId);
    expect(attribute(span!, "calculation.external_id")).to.equal("traced-calc");
  });

  it("logs the span's trace id on the request's lines", () => {
    const line = service.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.message === "request" && l.requestId === "traced-request-1");
    expect(line?.traceId).to.equal(TRACE_ID);
  });
});

describe("traces are off unless an OTEL_* variable asks", () => {
  it("reads OTEL_TRACES_EXPORTER, the OTLP endpoints and OTEL_SDK_DISABLED", () => {
    expect(tracesExporters({})).to.deep.equal([]);
    expect(tracesExporters({ OTEL_SERVICE_NAME: "x" })).to.deep.equal([]);
    expect(tracesExporters({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).to.deep.equal(["otlp"]);
    expect(tracesExporters({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).to.deep.equal(["otlp"]);
    expect(tracesExporters({ OTEL_TRACES_EXPORTER: "otlp,console" })).to.deep.equal(["otlp", "console"]);
    expect(tracesExporters({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).to.deep.equal([]);
    expect(tracesExporters({ OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).to.deep.equal([]);
  });
});

describe("a task's span", function () {
  this.timeout(180_000);
  it("continues the traceparent process variable, carries the engine's keys, and parents the spans of the work", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.register();
    const db = await backend("embedded");
    const services = createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }), db);
    try {
      const runner = new TaskRunner({ engine: "zeebe", services, database: db.knex, workerId: undefined, defaultRetries: 3, logger: createLogger("silent"), unreportedMessage: "unreported" });
      const key = randomUUID();
      const variables = { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` };
      const reporter = { complete: async () => undefined, bpmnError: async () => undefined, fail: async () => undefined };
      const task = { key, topic: "calculate-series", retries: 3, variables, tenant: "acme", processInstanceKey: "2251799813685251", bpmnProcessId: "billing" };
      await runner.run(task, () => inSpan("calculation", {}, async () => ({ result: 1 })), reporter);
      await provider.forceFlush();
      const spans = exporter.getFinishedSpans();
      const taskSpan = spans.find((s) => s.name === "task calculate-series")!;
      expect(taskSpan.spanContext().traceId).to.equal(TRACE_ID);
      expect(taskSpan.parentSpanContext?.spanId).to.equal(CALLER_SPAN);
      expect(taskSpan.attributes).to.include({
        "task.engine": "zeebe",
        "task.topic": "calculate-series",
        "task.key": key,
        "process.instance.key": "2251799813685251",
        "bpmn.process.id": "billing",
        "task.outcome": "completed",
      });
      const child = spans.find((s) => s.name === "calculation")!;
      expect(child.parentSpanContext?.spanId).to.equal(taskSpan.spanContext().spanId);
    } finally {
      await services.transforms.close();
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    }
  });
});
