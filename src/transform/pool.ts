/**
 * JSONata runs in a pool of child processes (tinypool), never in the service's process (a pure
 * projection, projection.ts, is not JSONata run but data copied, and stays in the service). JSONata's
 * built-ins run synchronously (a backtracking regex, `$distinct` of a long array), so no check
 * between evaluation steps can stop them; and one allocation larger than a worker thread's heap
 * limit aborts the whole process (`$pad("", 100000000)` did, with 64 MiB threads: Node gives a
 * thread 16 MiB of leeway past its limit, then V8 ends the process). A child process that runs past
 * the time limit is killed; one that dies, whatever the cause, is replaced; the service stays up.
 */
import { availableParallelism } from "node:os";
import { Tinypool, type TinypoolChannel } from "tinypool";
import { errorText, ProblemError, toProblemError } from "../errors.js";
import type { EvaluationAnswer, EvaluationProblem, EvaluationTask, EvaluatorNotice, EventsCall, EventsReply, TransformInput } from "./protocol.js";
import { DECLINED } from "./projection.js";
import { resultSizeProblem, type CompiledTransform } from "./transform.js";
import { parseJson } from "../json.js";
import type { Span } from "@opentelemetry/api";
import { inSpan } from "../observe/tracing.js";

export interface TransformPoolOptions {
  /** Processes evaluating transforms at once (TRANSFORM_PROCESSES). Default: the number of cores, at least 2. */
  processes?: number;
  /** Longest one evaluation may run, awaited `$events()` calls included (TRANSFORM_TIMEOUT_MS). */
  timeoutMs: number;
  /** Heap ceiling of one process, MiB (TRANSFORM_MEMORY_MB). Default 256. */
  memoryMb?: number;
  /** Longest result, bytes of its JSON text (TRANSFORM_MAX_RESULT_BYTES). Default 10 MiB. */
  maxResultBytes?: number;
  /** Evaluations waiting for a process before new ones are refused with 503 (TRANSFORM_MAX_QUEUE). Default 1000. */
  maxQueue?: number;
}

/** What the pool has done, for /metrics and the tests. */
export interface TransformPoolStats {
  processes: number;
  /** Evaluations running or waiting for a process. */
  inFlight: number;
  /** Evaluations stopped by a limit, by the limit's setting. */
  stopped: Record<string, number>;
}

interface InFlight {
  input: TransformInput;
  abort: AbortController;
  timer?: NodeJS.Timeout;
  /** Why the process was stopped, when the pool stopped it. */
  stoppedFor?: ProblemError;
  /** The original error of a refused `$events()` call, thrown as it is. */
  eventsError?: ProblemError;
}

const EVALUATOR = new URL("./evaluator.js", import.meta.url).href;

export class TransformPool {
  private pool: Tinypool | undefined;
  private closed = false;
  private readonly processes: number;
  private readonly timeoutMs: number;
  private readonly memoryMb: number;
  private readonly maxResultBytes: number;
  private readonly maxQueue: number;
  private readonly inFlight = new Map<number, InFlight>();
  private readonly stopped: Record<string, number> = {};
  private nextTaskId = 0;

  constructor(options: TransformPoolOptions) {
    this.processes = options.processes ?? Math.max(2, availableParallelism());
    this.timeoutMs = options.timeoutMs;
    this.memoryMb = options.memoryMb ?? 256;
    this.maxResultBytes = options.maxResultBytes ?? 10 * 1024 * 1024;
    this.maxQueue = options.maxQueue ?? 1000;
  }

  /** The processes start with the first transform: a service that never runs one never has them. */
  private get tinypool(): Tinypool {
    this.pool ??= new Tinypool({
      filename: EVALUATOR,
      runtime: "child_process",
      minThreads: this.processes,
      maxThreads: this.processes,
      maxQueue: this.maxQueue,
      concurrentTasksPerWorker: 1,
      // Structured clone instead of JSON: the timelines' maps cross, the result text is not escaped twice.
      serialization: "advanced",
      execArgv: [`--max-old-space-size=${this.memoryMb}`],
      // Nothing of the service's environment (keys, connection strings) reaches user-written code;
      // only the service's time zone, which JSONata's date functions read like any JavaScript code.
      env: { TZ: Intl.DateTimeFormat().resolvedOptions().timeZone },
    });
    return this.pool;
  }

  /** Starts the processes now rather than with the first transform (a server about to take requests). */
  warm(): void {
    if (!this.closed) void this.tinypool;
  }

  /**
   * Evaluates a compiled transform: a pure projection here, anything else in a child process. Any
   * limit reached is a 422 TRANSFORM_FAILED naming the limit's setting; a full queue is a 503 (retry later).
   */
  evaluate(transform: CompiledTransform, input: TransformInput): Promise<unknown> {
    return inSpan("transform", { "transform.length": transform.text.length }, (span) => this.evaluateHere(transform, input, span));
  }

  private async evaluateHere(transform: CompiledTransform, input: TransformInput, span: Span): Promise<unknown> {
    if (this.closed) throw shuttingDown();
    // A pure projection (projection.ts) is evaluated here: no user code runs, its work is linear in
    // the query output. It declines what it does not handle exactly as JSONata does.
    if (transform.projection !== undefined && input.bindings === undefined) {
      const value = transform.projection(input);
      if (value !== DECLINED) {
        span.setAttribute("transform.process", "in-process");
        let json: string | undefined;
        try {
          json = JSON.stringify(value);
        } catch {
          // Not JSON (the processes' own JSON.stringify fails alike): they report it as they always have.
          return this.evaluateInChild(transform, input);
        }
        const tooLarge = resultSizeProblem(json, this.maxResultBytes);
        if (tooLarge !== undefined) throw problemError(tooLarge);
        return value;
      }
    }
    return this.evaluateInChild(transform, input);
  }

  /** Evaluates a transform as JSONata in a child process, a pure projection too (the tests compare the two). */
  async evaluateInChild(transform: CompiledTransform, input: TransformInput): Promise<unknown> {
    const json = await this.evaluateInChildAsJson(transform, input);
    return json === undefined ? undefined : parseJson(json);
  }

  /** The JSON text of the child's result, as the child wrote it; undefined for JSONata's `undefined`. */
  async evaluateInChildAsJson(transform: CompiledTransform, input: TransformInput): Promise<string | undefined> {
    if (this.closed) throw shuttingDown();
    const taskId = ++this.nextTaskId;
    const task: EvaluationTask = {
      taskId,
      text: transform.text,
      limits: { maxDepth: transform.limits.maxDepth, maxSequence: transform.limits.maxSequence },
      maxResultBytes: this.maxResultBytes,
      queryOutput: input.queryOutput,
      params: input.params,
      timelines: input.timelines ?? new Map(),
      bindings: input.bindings ?? {},
      events: input.events !== undefined,
    };
    const state: InFlight = { input, abort: new AbortController() };
    this.inFlight.set(taskId, state);
    let answer: EvaluationAnswer;
    try {
      // The process hop: its own span (the child process runs no tracer; its time is this span's).
      answer = await inSpan("transform child process", { "transform.process": "child" }, async () =>
        (await this.tinypool.run(task, { signal: state.abort.signal, channel: this.channel(state) })) as EvaluationAnswer,
      );
    } catch (err) {
      throw state.stoppedFor ?? this.processFailure(err);
    } finally {
      clearTimeout(state.timer);
      this.inFlight.delete(taskId);
    }
    if ("problem" in answer) throw (answer.problem.fromEvents === true ? state.eventsError : undefined) ?? problemError(answer.problem);
    return answer.json;
  }

  stats(): TransformPoolStats {
    return { processes: this.pool?.threads.length ?? 0, inFlight: this.inFlight.size, stopped: { ...this.stopped } };
  }

  /** The process ids, for tests that prove a stopped process was replaced. */
  processIds(): number[] {
    return (this.pool?.threads ?? []).map((t) => t.threadId);
  }

  /** Stops the processes; evaluations still queued or running fail with 503. */
  async close(): Promise<void> {
    this.closed = true;
    for (const state of this.inFlight.values()) clearTimeout(state.timer);
    await this.pool?.destroy();
  }

  /** The task's line to its process: the start of its clock, and its `$events()` calls. */
  private channel(state: InFlight): TinypoolChannel {
    let send: ((message: EventsReply) => void) | undefined;
    return {
      onMessage: (callback) => {
        send = callback as (message: EventsReply) => void;
      },
      postMessage: (notice: EvaluatorNotice) => {
        if (notice.kind === "started") this.startClock(state);
        else if (notice.kind === "events" && send !== undefined) this.answerEvents(state, notice, send);
      },
    };
  }

  /** The clock starts when a process takes the task, not when it is queued: waiting for a process is not the transform's time. */
  private startClock(state: InFlight): void {
    clearTimeout(state.timer);
    state.timer = setTimeout(() => {
      state.stoppedFor = this.limitReached("TRANSFORM_TIMEOUT_MS", `the transform ran longer than ${this.timeoutMs} ms and was stopped (TRANSFORM_TIMEOUT_MS)`);
      state.abort.abort();
    }, this.timeoutMs);
  }

  private answerEvents(state: InFlight, call: EventsCall, send: (message: EventsReply) => void): void {
    const reply = (message: EventsReply) => {
      try {
        send(message);
      } catch {
        // The process was stopped meanwhile: nobody waits for the answer.
      }
    };
    if (state.input.events === undefined) {
      reply({ kind: "eventsReply", callId: call.callId, problem: { code: "TRANSFORM_FAILED", message: "$events() is not available here" } });
      return;
    }
    const events = state.input.events;
    // Through a promise: a source that throws at once is refused like one that rejects, never thrown
    // into the channel's handler (where nothing would answer the waiting process).
    Promise.resolve().then(() => events(call.itemId, call.options)).then(
      (value) => reply({ kind: "eventsReply", callId: call.callId, value }),
      (err: unknown) => {
        const problem = toProblemError(err);
        state.eventsError = problem;
        reply({ kind: "eventsReply", callId: call.callId, problem: { code: problem.code, message: problem.message, ...(problem.errors !== undefined ? { errors: problem.errors } : {}) } });
      },
    );
  }

  private processFailure(err: unknown): ProblemError {
    if (this.closed) return shuttingDown(err);
    const message = errorText(err);
    if (/queue is at limit|no task queue available/i.test(message)) {
      return new ProblemError("UNAVAILABLE", "every transform process is busy and the queue is full; retry later", { cause: err });
    }
    // One task per process: the process that ended was running this transform and nothing else.
    // Out of memory is by far the likeliest cause (V8 ends the process at its heap ceiling).
    return this.limitReached(
      "TRANSFORM_MEMORY_MB",
      `the transform's process ended while it ran, most likely at its memory limit of ${this.memoryMb} MiB (TRANSFORM_MEMORY_MB)`,
    );
  }

  private limitReached(setting: string, message: string): ProblemError {
    this.stopped[setting] = (this.stopped[setting] ?? 0) + 1;
    return new ProblemError("TRANSFORM_FAILED", message, { errors: [{ path: "transform", message, limit: setting }] });
  }
}

function problemError(problem: EvaluationProblem): ProblemError {
  return new ProblemError(problem.code, problem.message, problem.errors !== undefined ? { errors: problem.errors } : {});
}

function shuttingDown(cause?: unknown): ProblemError {
  return new ProblemError("UNAVAILABLE", "the service is shutting down; retry on another instance", cause !== undefined ? { cause } : {});
}
