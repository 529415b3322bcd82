import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { TransformPoolStats } from "./transform/pool.js";

/** What a worker reports of each task it handles. */
export interface TaskMetrics {
  fetched(engine: string, topic: string): void;
  finished(engine: string, topic: string, outcome: TaskOutcomeKind, code: string | undefined, seconds: number): void;
}

/** How a task ended: completed, a BPMN error, a failure (retried), or no report reached the engine. */
export type TaskOutcomeKind = "completed" | "bpmnError" | "failure" | "unreported";

/**
 * The service's Prometheus metrics, in a registry of its own (one per service, so several servers
 * in one process, as in the tests, never collide): tasks per topic and engine, REST requests, and
 * Node's process metrics.
 */
export class Metrics implements TaskMetrics {
  readonly registry = new Registry();
  private readonly tasksFetched = new Counter({ name: "tasks_fetched_total", help: "Tasks fetched (Camunda 7) or jobs activated (Zeebe)", labelNames: ["engine", "topic"], registers: [this.registry] });
  private readonly tasksCompleted = new Counter({ name: "tasks_completed_total", help: "Tasks completed", labelNames: ["engine", "topic"], registers: [this.registry] });
  private readonly tasksBpmnErrors = new Counter({ name: "tasks_bpmn_errors_total", help: "Tasks ended with a BPMN error", labelNames: ["engine", "topic", "code"], registers: [this.registry] });
  private readonly tasksFailed = new Counter({ name: "tasks_failures_total", help: "Tasks reported as failures (retried)", labelNames: ["engine", "topic", "code"], registers: [this.registry] });
  private readonly tasksUnreported = new Counter({ name: "tasks_unreported_total", help: "Tasks whose outcome could not be reported to the engine (handed out again after the lock or timeout)", labelNames: ["engine", "topic"], registers: [this.registry] });
  private readonly taskDuration = new Histogram({
    name: "task_duration_seconds",
    help: "Time from taking a task to reporting its outcome",
    labelNames: ["engine", "topic", "outcome"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  private readonly httpRequests = new Counter({ name: "http_requests_total", help: "REST requests answered", labelNames: ["method", "route", "status"], registers: [this.registry] });
  private readonly httpDuration = new Histogram({
    name: "http_request_duration_seconds",
    help: "REST request latency, by the answer's status class (2xx, 4xx, …)",
    labelNames: ["method", "route", "status"],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  fetched(engine: string, topic: string): void {
    this.tasksFetched.inc({ engine, topic });
  }

  finished(engine: string, topic: string, outcome: TaskOutcomeKind, code: string | undefined, seconds: number): void {
    if (outcome === "completed") this.tasksCompleted.inc({ engine, topic });
    else if (outcome === "bpmnError") this.tasksBpmnErrors.inc({ engine, topic, code: code ?? "" });
    else if (outcome === "failure") this.tasksFailed.inc({ engine, topic, code: code ?? "" });
    else this.tasksUnreported.inc({ engine, topic });
    this.taskDuration.observe({ engine, topic, outcome }, seconds);
  }

  /** Reads the transform pool's figures at each scrape. */
  observeTransforms(stats: () => TransformPoolStats): void {
    const registers = [this.registry];
    new Gauge({ name: "transform_processes", help: "Child processes evaluating transforms", registers, collect() { this.set(stats().processes); } });
    new Gauge({ name: "transform_in_flight", help: "Transforms running or waiting for a process", registers, collect() { this.set(stats().inFlight); } });
    // A counter: the pool counts each stop once; a scrape adds what it counted since the last.
    const counted = new Map<string, number>();
    new Counter({
      name: "transform_stopped_total",
      help: "Transforms stopped by a limit, by the limit's setting",
      labelNames: ["limit"],
      registers,
      collect() {
        for (const [limit, count] of Object.entries(stats().stopped)) {
          const more = count - (counted.get(limit) ?? 0);
          if (more > 0) this.inc({ limit }, more);
          counted.set(limit, count);
        }
      },
    });
  }

  request(method: string, route: string, status: number, seconds: number): void {
    this.httpRequests.inc({ method, route, status: String(status) });
    this.httpDuration.observe({ method, route, status: `${Math.floor(status / 100)}xx` }, seconds);
  }
}
