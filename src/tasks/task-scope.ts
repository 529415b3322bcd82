import { randomUUID } from "node:crypto";
import type { Span } from "@opentelemetry/api";
import { traceIdFor, withCorrelation } from "../observe/correlation.js";
import { beginSpan, context, contextFrom, failSpan, SpanKind, trace } from "../observe/tracing.js";

/** What a task's span and log lines name of it (docs/reference/observability.md). */
export interface TaskIdentity {
  engine: string;
  topic: string;
  /** Camunda 7 external task id, Zeebe job key. */
  key: string;
  /** Camunda 7 process instance id, Zeebe process instance key. */
  processInstanceKey?: string | undefined;
  /** The BPMN process id (Camunda 7: the process definition key). */
  bpmnProcessId?: string | undefined;
  variables: Record<string, unknown>;
}

/**
 * The process variable a process may send a W3C trace context in (`00-<trace id>-<span id>-<flags>`):
 * the task's span then continues that trace. `tracestate` is read beside it when present.
 */
export const TRACEPARENT_VARIABLE = "traceparent";

/**
 * Runs a task in its own scope: a consumer span `task <topic>` (the child of the process's
 * `traceparent` variable when it sends one) and a request id, so every log line of the task carries
 * `requestId`, `traceId`, `taskId`, `processInstanceKey` and `bpmnProcessId`.
 */
export function inTaskScope<T>(task: TaskIdentity, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = contextFrom({ traceparent: task.variables[TRACEPARENT_VARIABLE], tracestate: task.variables.tracestate });
  const keys = {
    taskId: task.key,
    ...(task.processInstanceKey !== undefined && task.processInstanceKey !== "" ? { processInstanceKey: task.processInstanceKey } : {}),
    ...(task.bpmnProcessId !== undefined && task.bpmnProcessId !== "" ? { bpmnProcessId: task.bpmnProcessId } : {}),
  };
  const span = beginSpan(`task ${task.topic}`, parent, {
    "task.engine": task.engine,
    "task.topic": task.topic,
    "task.key": keys.taskId,
    ...(keys.processInstanceKey !== undefined ? { "process.instance.key": keys.processInstanceKey } : {}),
    ...(keys.bpmnProcessId !== undefined ? { "bpmn.process.id": keys.bpmnProcessId } : {}),
  }, SpanKind.CONSUMER);
  const active = trace.setSpan(parent, span);
  const correlation = { requestId: randomUUID(), traceId: traceIdFor(active, task.variables[TRACEPARENT_VARIABLE]), fields: keys };
  return context.with(active, () =>
    withCorrelation(correlation, async () => {
      try {
        return await fn(span);
      } catch (err) {
        failSpan(span, err);
        throw err;
      } finally {
        span.end();
      }
    }),
  );
}
