/**
 * A Zeebe gateway stand-in for the tests: a gRPC server on the gateway protocol that
 * `@camunda8/sdk` ships (`dist/proto/zeebe.proto`, Apache-2.0), holding jobs in memory. It
 * implements the calls the workers make (workers/zeebe/*.ts, through the SDK) with the job
 * semantics Zeebe documents; it has no BPMN engine: a test creates the jobs a process instance
 * would (`createJob`) and reads back what was reported (`records`, `incidents`, `job`). It replaces
 * the vendor's broker distribution, which this project may not use (issue 25).
 *
 * Documentation followed (docs.camunda.io):
 * - [API]  Zeebe API RPCs: https://docs.camunda.io/docs/apis-tools/zeebe-api/gateway-service/
 * - [JOBS] Job workers: https://docs.camunda.io/docs/components/concepts/job-workers/
 * - [ERR]  Technical error handling: https://docs.camunda.io/docs/apis-tools/zeebe-api/technical-error-handling/
 * - [INC]  Incidents: https://docs.camunda.io/docs/components/concepts/incidents/
 * - [MT]   Multi-tenancy: https://docs.camunda.io/docs/components/concepts/multi-tenancy/
 * - [AUTH] Zeebe API authentication: https://docs.camunda.io/docs/apis-tools/zeebe-api/zeebe-api-authentication/
 * - [TLS]  Gateway security (TLS, mTLS): https://docs.camunda.io/docs/self-managed/zeebe-deployment/security/secure-client-communication/
 *
 * | Call / behaviour | What the stand-in does | Source |
 * |---|---|---|
 * | `Topology` | one broker, one partition, `LEADER` / `HEALTHY`; answered by the gateway itself (never back-pressured) | [API] Topology |
 * | `ActivateJobs` | activates up to `maxJobsToActivate` activatable jobs of `type` in `tenantIds` (none: `<default>`) for `timeout` ms, recording `worker`; `INVALID_ARGUMENT` for a blank type or worker, `timeout` < 1, `maxJobsToActivate` < 1, a malformed tenant id | [API] ActivateJobs, [MT] |
 * | `fetchVariable` | only the named variables are sent; none named: all of them | [API] ActivateJobs |
 * | long polling | with no job activatable the call waits `requestTimeout` ms (0: the gateway default, 10 s) for one, then ends empty; `requestTimeout` < 0 answers at once; a poll the client cancelled gets no job | [API] ActivateJobs, [JOBS] Long polling |
 * | `StreamActivatedJobs` | a job that becomes activatable (created, timed out, failed with retries, back-off over, retries updated) is pushed to a ready stream of its type and tenant (round robin); jobs activatable before a stream opened are left to polls | [API] StreamActivatedJobs, [JOBS] Job streaming |
 * | stream flow control | a stream is ready while less than 32 KiB it was written are unflushed (grpc-java's `isReady` threshold, which the Java gateway asks): a client that does not read fills its HTTP/2 window, then that buffer, then gets no job; the job is yielded (`YIELDED`) to another stream or a poll | [JOBS] Job streaming (back-pressure) |
 * | `CompleteJob` | an activated (or activatable) job completes with its variables; a job in an incident: `FAILED_PRECONDITION`; a job no longer there (completed, error thrown) or never: `NOT_FOUND` | [API] CompleteJob |
 * | `FailJob` | an activated job gets `retries`; > 0: activatable again after `retryBackOff` ms (`RECURRED_AFTER_BACKOFF`); ≤ 0: an incident `JOB_NO_RETRIES` with `errorMessage`, never activated again until its retries are updated; not activated: `FAILED_PRECONDITION`; gone: `NOT_FOUND` | [API] FailJob, [INC] |
 * | `ThrowError` | an activated job ends with `errorCode` and `errorMessage` recorded (catching it is the engine's part, not modelled); not activated: `FAILED_PRECONDITION`; gone: `NOT_FOUND` | [API] ThrowError |
 * | `UpdateJobTimeout` | an activated job's deadline becomes now + `timeout`; not activated: `FAILED_PRECONDITION` (the docs' INVALID_STATE); gone: `NOT_FOUND` | [API] UpdateJobTimeout |
 * | `UpdateJobRetries` | sets the retries (`INVALID_ARGUMENT` below 1); a job in an incident is activatable again at once (the stand-in takes the update as Operate's "retry", which also resolves the incident) | [API] UpdateJobRetries, [INC] |
 * | job timeout | an activated job whose deadline passes is `TIMED_OUT` and activatable again | [JOBS] Timeouts |
 * | back-pressure (`backPressure()`) | `RESOURCE_EXHAUSTED` for every call but `CompleteJob`, `FailJob` (always accepted) and `Topology` | [ERR] |
 * | faults (`inject`, `stall`, `stop`/`restart`) | `UNAVAILABLE` or `RESOURCE_EXHAUSTED` for chosen calls; calls left unanswered until released; the gateway gone and back on the same port, jobs kept (the broker keeps its state) | [ERR] |
 * | credentials (`start({ authorization })`) | every call must carry exactly that `authorization` header (`Basic …`, `Bearer …`); a call without it or with another is answered `UNAUTHENTICATED` (recorded, never handled) | [AUTH] |
 * | TLS, mutual TLS (`start({ tls })`) | the gateway serves TLS with the given certificate; with `clientCa` it requires a client certificate signed by it and ends the handshake of a client without one | [TLS] |
 *
 * Not modelled: processes, deployments, variables beyond the job's own, incidents' resolution apart
 * from `UpdateJobRetries`, `ResolveIncident`, partitions, an identity provider (the required
 * header is given as is; every call is recorded with its `authorization` header for a test to check,
 * an empty header read as none, as the SDK's NONE sends one).
 */
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ROOT } from "./process.js";

/** The SDK's copy of the gateway protocol. */
export const ZEEBE_PROTO = join(ROOT, "node_modules/@camunda8/sdk/dist/proto/zeebe.proto");

/** Zeebe's name for "no tenant" (multi-tenancy off). */
export const DEFAULT_TENANT = "<default>";

/** The gateway's default long-polling timeout (`zeebe.gateway.longPolling.timeout`, 10 s). */
const DEFAULT_LONG_POLL_MS = 10_000;

/** grpc-java's default on-ready threshold: a stream with this much unflushed output is not ready. */
const READY_THRESHOLD_BYTES = 32 * 1024;

const TENANT_ID = /^(<default>|[A-Za-z0-9_.-]{1,31})$/;

export type GatewayMethod =
  | "Topology"
  | "ActivateJobs"
  | "StreamActivatedJobs"
  | "CompleteJob"
  | "FailJob"
  | "ThrowError"
  | "UpdateJobTimeout"
  | "UpdateJobRetries";

export type JobState = "activatable" | "activated" | "backingOff" | "incident" | "completed" | "errorThrown";

export type JobIntent =
  | "CREATED"
  | "ACTIVATED"
  | "COMPLETED"
  | "FAILED"
  | "ERROR_THROWN"
  | "TIMED_OUT"
  | "TIMEOUT_UPDATED"
  | "RETRIES_UPDATED"
  | "RECURRED_AFTER_BACKOFF"
  | "YIELDED";

/** A job as a test creates it: what a service task of a process instance would make. */
export interface NewJob {
  type: string;
  variables?: Record<string, unknown>;
  customHeaders?: Record<string, string>;
  /** The task definition's retries; default 3. */
  retries?: number;
  tenantId?: string;
  processInstanceKey?: string;
  bpmnProcessId?: string;
  processDefinitionVersion?: number;
  processDefinitionKey?: string;
  elementId?: string;
  elementInstanceKey?: string;
}

/** One event of a job, as Zeebe's JOB records tell it. */
export interface JobRecord {
  position: number;
  key: string;
  intent: JobIntent;
  /** Epoch ms. */
  at: number;
  type: string;
  processInstanceKey: string;
  elementId: string;
  tenantId: string;
  worker: string;
  retries: number;
  /** FAILED: the back-off asked for. */
  retryBackoff?: number;
  errorMessage?: string;
  errorCode?: string;
  /** COMPLETED, FAILED, ERROR_THROWN: the variables sent. */
  variables?: Record<string, unknown>;
  /** ACTIVATED: how the job left. */
  via?: "poll" | "stream";
}

export interface IncidentRecord {
  key: string;
  jobKey: string;
  processInstanceKey: string;
  elementId: string;
  errorType: "JOB_NO_RETRIES";
  errorMessage: string;
  at: number;
}

/** How a stand-in listens, and what it asks of its clients. */
export interface GatewayOptions {
  /** The port on 127.0.0.1; default a free one. */
  port?: number;
  /** The `authorization` header every call must carry (e.g. `Basic ZGVtbzpkZW1v`); others are answered `UNAUTHENTICATED`. Default: none asked. */
  authorization?: string;
  /** Serve TLS with this key and certificate (PEM); with `clientCa`, require a client certificate it signed (mutual TLS). Default: plaintext. */
  tls?: { key: Buffer; cert: Buffer; clientCa?: Buffer };
}

/** A call the gateway received, with its answer. */
export interface CallRecord {
  method: GatewayMethod;
  at: number;
  /** `OK`, or the gRPC status name it was answered with. */
  status: string;
  authorization: string | undefined;
  /** ActivateJobs, StreamActivatedJobs: the job type asked for. */
  jobType?: string;
}

interface Job extends Required<NewJob> {
  key: string;
  state: JobState;
  worker: string;
  /** Activated: when it times out. */
  deadline: number;
  /** Backing off: when it is activatable again. */
  recurAt: number;
}

/** What an activation asked for (a poll or a stream). */
interface Activation {
  type: string;
  worker: string;
  timeout: number;
  fetchVariable: string[];
  tenantIds: string[];
}

interface WaitingPoll {
  request: Activation;
  max: number;
  call: grpc.ServerWritableStream<Record<string, unknown>, unknown>;
  timer: NodeJS.Timeout;
}

interface JobStream {
  request: Activation;
  call: grpc.ServerWritableStream<Record<string, unknown>, unknown>;
  unflushedBytes: number;
}

interface FaultRule {
  methods: ReadonlySet<GatewayMethod> | undefined;
  except: ReadonlySet<GatewayMethod>;
  code: grpc.status;
  details: string;
  remaining: number;
}

type Unary = (request: Record<string, unknown>) => Record<string, unknown>;

class GatewayError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

let protocol: grpc.GrpcObject | undefined;

/** The gateway protocol, loaded once (as the SDK loads it: keys as written, int64 as text, enums by name). */
export function gatewayProtocol(): grpc.GrpcObject {
  protocol ??= grpc.loadPackageDefinition(protoLoader.loadSync(ZEEBE_PROTO, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true }));
  return protocol;
}

function gatewayService(): grpc.ServiceDefinition {
  const pkg = gatewayProtocol().gateway_protocol as grpc.GrpcObject;
  return (pkg.Gateway as grpc.ServiceClientConstructor).service;
}

export class ZeebeGateway {
  private server: grpc.Server | undefined;
  private readonly jobs = new Map<string, Job>();
  /** The jobs not ended (the ones activations, deadlines and back-offs look at). */
  private readonly live = new Map<string, Job>();
  private readonly log: JobRecord[] = [];
  private readonly incidentLog: IncidentRecord[] = [];
  private readonly callLog: CallRecord[] = [];
  private readonly polls: WaitingPoll[] = [];
  private readonly streams: JobStream[] = [];
  private readonly faults: FaultRule[] = [];
  private readonly stalled = new Map<symbol, { methods: ReadonlySet<GatewayMethod>; waiting: (() => void)[] }>();
  private readonly settleWaiters = new Set<() => void>();
  private nextKey: bigint;
  private nextStream = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(
    readonly port: number,
    private readonly options: GatewayOptions,
  ) {
    // Zeebe's keys carry the partition in their top bits (partition 1: 2^51 + n); a random start
    // keeps the keys of separate stand-ins (and test runs sharing tasks_in_hand) apart.
    this.nextKey = 2n ** 51n + BigInt(Math.floor(Math.random() * 2 ** 40)) * 1000n;
  }

  /** A stand-in on 127.0.0.1 (see {@link GatewayOptions}: port, required credentials, TLS). */
  static async start(options: GatewayOptions = {}): Promise<ZeebeGateway> {
    const bound = await ZeebeGateway.listen(options.port ?? 0, options, undefined);
    const gateway = new ZeebeGateway(bound.port, options);
    gateway.server = bound.server;
    gateway.serve(bound.server);
    return gateway;
  }

  private static listen(port: number, options: GatewayOptions, gateway: ZeebeGateway | undefined): Promise<{ server: grpc.Server; port: number }> {
    const server = new grpc.Server();
    if (gateway !== undefined) gateway.serve(server);
    const { tls } = options;
    const credentials =
      tls === undefined ? grpc.ServerCredentials.createInsecure() : grpc.ServerCredentials.createSsl(tls.clientCa ?? null, [{ private_key: tls.key, cert_chain: tls.cert }], tls.clientCa !== undefined);
    return new Promise((resolve, reject) => server.bindAsync(`127.0.0.1:${port}`, credentials, (err, bound) => (err ? reject(err) : resolve({ server, port: bound }))));
  }

  /** `host:port`, as ZEEBE_ADDRESS takes it (with TLS: `localhost`, the name its certificate is for). */
  get address(): string {
    return `${this.options.tls === undefined ? "127.0.0.1" : "localhost"}:${this.port}`;
  }

  // ---------------------------------------------------------------- the test-facing API

  /** Creates a job, activatable at once (pushed to a ready stream if one takes its type); answers its key. */
  createJob(job: NewJob): string {
    const key = String(this.nextKey++);
    const created: Job = {
      type: job.type,
      variables: job.variables ?? {},
      customHeaders: job.customHeaders ?? {},
      retries: job.retries ?? 3,
      tenantId: job.tenantId ?? DEFAULT_TENANT,
      processInstanceKey: job.processInstanceKey ?? String(this.nextKey++),
      bpmnProcessId: job.bpmnProcessId ?? "process",
      processDefinitionVersion: job.processDefinitionVersion ?? 1,
      processDefinitionKey: job.processDefinitionKey ?? "2251799813685248",
      elementId: job.elementId ?? "Task",
      elementInstanceKey: job.elementInstanceKey ?? String(this.nextKey++),
      key,
      state: "activatable",
      worker: "",
      deadline: -1,
      recurAt: -1,
    };
    this.jobs.set(key, created);
    this.live.set(key, created);
    this.record(created, "CREATED");
    this.becameActivatable([created]);
    return key;
  }

  /** A job's present state, or undefined for a key never created. */
  job(key: string): (Readonly<Omit<Job, "variables" | "customHeaders">> & { variables: Record<string, unknown> }) | undefined {
    const job = this.jobs.get(key);
    return job === undefined ? undefined : { ...job };
  }

  /** The job records, oldest first; filtered by job key, intent or process instance. */
  records(filter: { key?: string; intent?: JobIntent; processInstanceKey?: string } = {}): JobRecord[] {
    return this.log.filter(
      (r) => (filter.key === undefined || r.key === filter.key) && (filter.intent === undefined || r.intent === filter.intent) && (filter.processInstanceKey === undefined || r.processInstanceKey === filter.processInstanceKey),
    );
  }

  /** The incidents raised, oldest first (of one job when given). */
  incidents(jobKey?: string): IncidentRecord[] {
    return this.incidentLog.filter((i) => jobKey === undefined || i.jobKey === jobKey);
  }

  /** The calls received, oldest first (of one method when given). */
  calls(method?: GatewayMethod): CallRecord[] {
    return this.callLog.filter((c) => method === undefined || c.method === method);
  }

  /** The activations open now: long polls waiting for a job, and job streams. */
  openCalls(): { kind: "poll" | "stream"; type: string; worker: string }[] {
    return [
      ...this.polls.filter((p) => !p.call.cancelled).map((p) => ({ kind: "poll" as const, type: p.request.type, worker: p.request.worker })),
      ...this.streams.filter((s) => !s.call.cancelled).map((s) => ({ kind: "stream" as const, type: s.request.type, worker: s.request.worker })),
    ];
  }

  /** Waits until the job has ended (completed, error thrown) or has an incident; answers which. */
  async settle(key: string, timeoutMs = 30_000): Promise<"completed" | "errorThrown" | "incident"> {
    const ended = () => {
      const state = this.jobs.get(key)?.state;
      return state === "completed" || state === "errorThrown" || state === "incident" ? state : undefined;
    };
    const found = ended();
    if (found !== undefined) return found;
    return new Promise((resolve, reject) => {
      const check = () => {
        const state = ended();
        if (state === undefined) return;
        clearTimeout(timer);
        this.settleWaiters.delete(check);
        resolve(state);
      };
      const timer = setTimeout(() => {
        this.settleWaiters.delete(check);
        const history = this.records({ key })
          .map((r) => `${r.intent}${r.worker !== "" ? ` by ${r.worker}` : ""} retries ${r.retries}`)
          .join(", ");
        reject(new Error(`job ${key} did not settle in ${timeoutMs} ms; its records: ${history}`));
      }, timeoutMs);
      this.settleWaiters.add(check);
    });
  }

  /**
   * Answers the next `times` calls of `methods` (every call but those in `except` when none are
   * named) with `status`; `clear()` ends it sooner.
   */
  inject(fault: { status: "UNAVAILABLE" | "RESOURCE_EXHAUSTED"; methods?: GatewayMethod[]; except?: GatewayMethod[]; times?: number; details?: string }): { clear(): void } {
    const rule: FaultRule = {
      methods: fault.methods === undefined ? undefined : new Set(fault.methods),
      except: new Set(fault.except ?? []),
      code: grpc.status[fault.status],
      details: fault.details ?? `injected ${fault.status}`,
      remaining: fault.times ?? Infinity,
    };
    this.faults.push(rule);
    return {
      clear: () => {
        const at = this.faults.indexOf(rule);
        if (at >= 0) this.faults.splice(at, 1);
      },
    };
  }

  /** Zeebe's back-pressure: `RESOURCE_EXHAUSTED` for every call but CompleteJob and FailJob (and Topology, the gateway's own) [ERR]. */
  backPressure(times?: number): { clear(): void } {
    return this.inject({ status: "RESOURCE_EXHAUSTED", except: ["CompleteJob", "FailJob", "Topology"], details: "Expected to handle request, but there was back-pressure", ...(times !== undefined ? { times } : {}) });
  }

  /** Leaves calls of `methods` unanswered (the client's deadline or cancel ends them) until `release()`, which handles them then. */
  stall(methods: GatewayMethod[]): { release(): void } {
    const id = Symbol("stall");
    const entry = { methods: new Set(methods), waiting: [] as (() => void)[] };
    this.stalled.set(id, entry);
    return {
      release: () => {
        this.stalled.delete(id);
        entry.waiting.splice(0).forEach((run) => run());
      },
    };
  }

  /** The gateway goes away: connections cut, open polls and streams gone. Jobs keep their state (the broker keeps it). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const poll of this.polls.splice(0)) clearTimeout(poll.timer);
    this.streams.splice(0);
    // Open calls are cut, as a gateway process that ends cuts them.
    server?.forceShutdown();
    await new Promise((resolve) => setImmediate(resolve));
  }

  /** The gateway back on the same port. */
  async restart(): Promise<void> {
    if (this.server !== undefined) return;
    this.server = (await ZeebeGateway.listen(this.port, this.options, this)).server;
  }

  /** Stops for good: timers cleared, waiters released. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    for (const entry of this.stalled.values()) entry.waiting.splice(0);
    this.stalled.clear();
    const server = this.server;
    this.server = undefined;
    for (const poll of this.polls.splice(0)) clearTimeout(poll.timer);
    this.streams.splice(0);
    server?.forceShutdown();
  }

  // ---------------------------------------------------------------- the gRPC service

  private serve(server: grpc.Server): void {
    const unary = (method: GatewayMethod, handle: Unary): grpc.handleUnaryCall<Record<string, unknown>, Record<string, unknown>> => (call, callback) =>
      this.admit(method, call, (error) => (error ? callback(error) : this.answer(method, () => callback(null, handle(call.request)), (e) => callback(e))));
    const streaming = (method: GatewayMethod, handle: (call: grpc.ServerWritableStream<Record<string, unknown>, unknown>) => void): grpc.handleServerStreamingCall<Record<string, unknown>, unknown> => (call) =>
      this.admit(method, call, (error) => (error ? call.emit("error", error) : this.answer(method, () => handle(call), (e) => call.emit("error", e))));
    server.addService(gatewayService(), {
      Topology: unary("Topology", () => this.topology()),
      ActivateJobs: streaming("ActivateJobs", (call) => this.activateJobs(call)),
      StreamActivatedJobs: streaming("StreamActivatedJobs", (call) => this.streamActivatedJobs(call)),
      CompleteJob: unary("CompleteJob", (r) => this.completeJob(r)),
      FailJob: unary("FailJob", (r) => this.failJob(r)),
      ThrowError: unary("ThrowError", (r) => this.throwError(r)),
      UpdateJobTimeout: unary("UpdateJobTimeout", (r) => this.updateJobTimeout(r)),
      UpdateJobRetries: unary("UpdateJobRetries", (r) => this.updateJobRetries(r)),
    });
  }

  /** Records the call; answers it UNAUTHENTICATED or with an injected fault, holds it while stalled, or lets it through. */
  private admit(method: GatewayMethod, call: { metadata: grpc.Metadata; request: Record<string, unknown> }, next: (error: grpc.ServiceError | null) => void): void {
    const header = call.metadata.get("authorization")[0]?.toString();
    const authorization = header === "" ? undefined : header;
    const jobType = typeof call.request.type === "string" ? { jobType: call.request.type } : {};
    const refuse = (code: grpc.status, details: string) => {
      this.callLog.push({ method, at: Date.now(), status: grpc.status[code], authorization, ...jobType });
      next(Object.assign(new Error(details), { code, details, metadata: new grpc.Metadata() }));
    };
    if (this.options.authorization !== undefined && authorization !== this.options.authorization) {
      refuse(grpc.status.UNAUTHENTICATED, authorization === undefined ? "Expected an authorization header, but none was sent" : "Expected valid credentials, but the authorization header was not accepted");
      return;
    }
    const rule = this.faults.find((f) => f.remaining > 0 && !f.except.has(method) && (f.methods === undefined || f.methods.has(method)));
    if (rule !== undefined) {
      rule.remaining--;
      refuse(rule.code, rule.details);
      return;
    }
    const stall = [...this.stalled.values()].find((s) => s.methods.has(method));
    const proceed = () => {
      this.callLog.push({ method, at: Date.now(), status: "OK", authorization, ...jobType });
      next(null);
    };
    if (stall !== undefined) stall.waiting.push(proceed);
    else proceed();
  }

  /** Runs a handler; a GatewayError becomes its status (the call's record says which). */
  private answer(method: GatewayMethod, run: () => void, fail: (error: grpc.ServiceError) => void): void {
    try {
      run();
    } catch (err) {
      const code = err instanceof GatewayError ? err.code : grpc.status.INTERNAL;
      const last = this.callLog.findLast((c) => c.method === method);
      if (last !== undefined) last.status = grpc.status[code];
      fail(Object.assign(new Error((err as Error).message), { code, details: (err as Error).message, metadata: new grpc.Metadata() }));
    }
  }

  private topology(): Record<string, unknown> {
    return {
      brokers: [{ nodeId: 0, host: "127.0.0.1", port: this.port, version: "stand-in", partitions: [{ partitionId: 1, role: "LEADER", health: "HEALTHY" }] }],
      clusterSize: 1,
      partitionsCount: 1,
      replicationFactor: 1,
      gatewayVersion: "stand-in (test/support/zeebe-gateway.ts)",
    };
  }

  private activation(request: Record<string, unknown>, needsWorker: boolean): Activation {
    const type = String(request.type ?? "");
    const worker = String(request.worker ?? "");
    const timeout = Number(request.timeout ?? 0);
    const tenantIds = (request.tenantIds as string[] | undefined) ?? [];
    if (type.trim() === "") throw new GatewayError(grpc.status.INVALID_ARGUMENT, "Expected to activate jobs of a type, but type was blank");
    if (needsWorker && worker.trim() === "") throw new GatewayError(grpc.status.INVALID_ARGUMENT, "Expected a worker name, but worker was blank");
    if (!(timeout >= 1)) throw new GatewayError(grpc.status.INVALID_ARGUMENT, `Expected timeout to be at least 1, but it was ${timeout}`);
    const bad = tenantIds.find((t) => !TENANT_ID.test(t));
    if (bad !== undefined) throw new GatewayError(grpc.status.INVALID_ARGUMENT, `Expected a valid tenant id, but got '${bad}'`);
    return { type, worker, timeout, fetchVariable: (request.fetchVariable as string[] | undefined) ?? [], tenantIds: tenantIds.length > 0 ? tenantIds : [DEFAULT_TENANT] };
  }

  private activateJobs(call: grpc.ServerWritableStream<Record<string, unknown>, unknown>): void {
    if (call.cancelled) return;
    const request = this.activation(call.request, true);
    const max = Number(call.request.maxJobsToActivate ?? 0);
    if (!(max >= 1)) throw new GatewayError(grpc.status.INVALID_ARGUMENT, `Expected maxJobsToActivate to be at least 1, but it was ${max}`);
    const found = this.activatable(request, max);
    const requestTimeout = Number(call.request.requestTimeout ?? 0);
    if (found.length > 0 || requestTimeout < 0) {
      this.respond(call, request, found);
      return;
    }
    const poll: WaitingPoll = {
      request,
      max,
      call,
      timer: setTimeout(() => this.endPoll(poll, []), requestTimeout === 0 ? DEFAULT_LONG_POLL_MS : requestTimeout),
    };
    // A poll the client gave up gets no job.
    call.on("cancelled", () => this.dropPoll(poll));
    this.polls.push(poll);
  }

  private dropPoll(poll: WaitingPoll): void {
    clearTimeout(poll.timer);
    const at = this.polls.indexOf(poll);
    if (at >= 0) this.polls.splice(at, 1);
  }

  private endPoll(poll: WaitingPoll, jobs: Job[]): void {
    this.dropPoll(poll);
    this.respond(poll.call, poll.request, jobs);
  }

  /** Activates `jobs` for the request and sends them in one response (none: the call ends empty). */
  private respond(call: grpc.ServerWritableStream<Record<string, unknown>, unknown>, request: Activation, jobs: Job[]): void {
    if (call.cancelled) return;
    if (jobs.length > 0) call.write({ jobs: jobs.map((job) => this.activate(job, request, "poll")) });
    call.end();
  }

  private streamActivatedJobs(call: grpc.ServerWritableStream<Record<string, unknown>, unknown>): void {
    const stream: JobStream = { request: this.activation(call.request, false), call, unflushedBytes: 0 };
    const drop = () => {
      const at = this.streams.indexOf(stream);
      if (at >= 0) this.streams.splice(at, 1);
    };
    call.on("cancelled", drop);
    call.on("error", drop);
    this.streams.push(stream);
  }

  private isReady(stream: JobStream): boolean {
    return !stream.call.cancelled && !stream.call.destroyed && stream.unflushedBytes < READY_THRESHOLD_BYTES;
  }

  /** Pushes a job into a stream; a write that fails yields the job back (activatable again, for polls). */
  private push(stream: JobStream, job: Job): void {
    const message = this.activate(job, stream.request, "stream");
    const size = Buffer.byteLength(JSON.stringify(message));
    stream.unflushedBytes += size;
    stream.call.write(message, (err: Error | null | undefined) => {
      stream.unflushedBytes -= size;
      if (err && job.state === "activated" && job.worker === stream.request.worker) this.yieldJob(job);
    });
  }

  private completeJob(request: Record<string, unknown>): Record<string, unknown> {
    const job = this.reported(request.jobKey);
    if (job.state === "incident") throw new GatewayError(grpc.status.FAILED_PRECONDITION, `Expected to complete job with key '${job.key}', but it is in an incident`);
    if (job.state === "backingOff") throw new GatewayError(grpc.status.FAILED_PRECONDITION, `Expected to complete job with key '${job.key}', but it is failed and backing off`);
    const variables = parseVariables(request.variables);
    Object.assign(job.variables, variables);
    this.end(job, "completed");
    this.record(job, "COMPLETED", { variables });
    return {};
  }

  private failJob(request: Record<string, unknown>): Record<string, unknown> {
    const job = this.activated(request.jobKey, "fail");
    const retries = Number(request.retries ?? 0);
    const retryBackoff = Number(request.retryBackOff ?? 0);
    const errorMessage = String(request.errorMessage ?? "");
    job.retries = retries;
    job.deadline = -1;
    this.record(job, "FAILED", { retryBackoff, errorMessage, variables: parseVariables(request.variables) });
    if (retries <= 0) {
      this.end(job, "incident");
      this.incidentLog.push({ key: String(this.nextKey++), jobKey: job.key, processInstanceKey: job.processInstanceKey, elementId: job.elementId, errorType: "JOB_NO_RETRIES", errorMessage, at: Date.now() });
    } else if (retryBackoff > 0) {
      job.state = "backingOff";
      job.recurAt = Date.now() + retryBackoff;
      this.schedule();
    } else {
      job.state = "activatable";
      this.becameActivatable([job]);
    }
    return {};
  }

  private throwError(request: Record<string, unknown>): Record<string, unknown> {
    const job = this.activated(request.jobKey, "throw an error for");
    this.end(job, "errorThrown");
    this.record(job, "ERROR_THROWN", { errorCode: String(request.errorCode ?? ""), errorMessage: String(request.errorMessage ?? ""), variables: parseVariables(request.variables) });
    return {};
  }

  private updateJobTimeout(request: Record<string, unknown>): Record<string, unknown> {
    const job = this.activated(request.jobKey, "update the timeout of");
    job.deadline = Date.now() + Number(request.timeout ?? 0);
    this.record(job, "TIMEOUT_UPDATED");
    this.schedule();
    return {};
  }

  private updateJobRetries(request: Record<string, unknown>): Record<string, unknown> {
    const job = this.reported(request.jobKey);
    const retries = Number(request.retries ?? 0);
    if (retries < 1) throw new GatewayError(grpc.status.INVALID_ARGUMENT, `Expected retries to be greater than zero, but it was ${retries}`);
    job.retries = retries;
    this.record(job, "RETRIES_UPDATED");
    if (job.state === "incident") {
      job.state = "activatable";
      this.live.set(job.key, job);
      this.becameActivatable([job]);
    }
    return {};
  }

  /** A job a report names, still there (not completed nor errored); else NOT_FOUND. */
  private reported(jobKey: unknown): Job {
    const job = this.jobs.get(String(jobKey));
    if (job === undefined || job.state === "completed" || job.state === "errorThrown") {
      throw new GatewayError(grpc.status.NOT_FOUND, `Expected to find a job with key '${String(jobKey)}', but no such job was found`);
    }
    return job;
  }

  private activated(jobKey: unknown, what: string): Job {
    const job = this.reported(jobKey);
    if (job.state !== "activated") throw new GatewayError(grpc.status.FAILED_PRECONDITION, `Expected to ${what} job with key '${job.key}', but it is not activated (${job.state})`);
    return job;
  }

  // ---------------------------------------------------------------- job lifecycle

  private matches(job: Job, request: Activation): boolean {
    return job.state === "activatable" && job.type === request.type && request.tenantIds.includes(job.tenantId);
  }

  private activatable(request: Activation, max: number): Job[] {
    const found: Job[] = [];
    for (const job of this.live.values()) {
      if (found.length >= max) break;
      if (this.matches(job, request)) found.push(job);
    }
    return found;
  }

  /** Marks the job activated for the request; answers the ActivatedJob message. */
  private activate(job: Job, request: Activation, via: "poll" | "stream"): Record<string, unknown> {
    job.state = "activated";
    job.worker = request.worker;
    job.deadline = Date.now() + request.timeout;
    this.record(job, "ACTIVATED", { via });
    this.schedule();
    const variables = request.fetchVariable.length === 0 ? job.variables : Object.fromEntries(request.fetchVariable.filter((n) => n in job.variables).map((n) => [n, job.variables[n]]));
    return {
      key: job.key,
      type: job.type,
      processInstanceKey: job.processInstanceKey,
      bpmnProcessId: job.bpmnProcessId,
      processDefinitionVersion: job.processDefinitionVersion,
      processDefinitionKey: job.processDefinitionKey,
      elementId: job.elementId,
      elementInstanceKey: job.elementInstanceKey,
      customHeaders: JSON.stringify(job.customHeaders),
      worker: job.worker,
      retries: job.retries,
      deadline: String(job.deadline),
      variables: JSON.stringify(variables),
      tenantId: job.tenantId,
    };
  }

  private yieldJob(job: Job): void {
    job.state = "activatable";
    job.worker = "";
    job.deadline = -1;
    this.record(job, "YIELDED");
    this.servePolls();
  }

  /**
   * Jobs that just became activatable: each is pushed to a ready stream of its type and tenant
   * (round robin), else yielded to polls when streams exist but none is ready; then the waiting
   * polls take what is left.
   */
  private becameActivatable(jobs: Job[]): void {
    for (const job of jobs) {
      const candidates = this.streams.filter((s) => this.matches(job, s.request));
      if (candidates.length === 0) continue;
      const ready = candidates.filter((s) => this.isReady(s));
      if (ready.length === 0) {
        this.record(job, "YIELDED");
        continue;
      }
      this.push(ready[this.nextStream++ % ready.length]!, job);
    }
    this.servePolls();
  }

  private servePolls(): void {
    for (const poll of [...this.polls]) {
      const found = this.activatable(poll.request, poll.max);
      if (found.length > 0) this.endPoll(poll, found);
    }
  }

  private end(job: Job, state: "completed" | "errorThrown" | "incident"): void {
    job.state = state;
    job.deadline = -1;
    this.live.delete(job.key);
    for (const check of [...this.settleWaiters]) check();
  }

  /** One timer for the next deadline or end of a back-off. */
  private schedule(): void {
    if (this.closed) return;
    let next = Infinity;
    for (const job of this.live.values()) {
      if (job.state === "activated") next = Math.min(next, job.deadline);
      else if (job.state === "backingOff") next = Math.min(next, job.recurAt);
    }
    clearTimeout(this.timer);
    if (next === Infinity) return;
    this.timer = setTimeout(() => this.tick(), Math.max(0, next - Date.now()));
    this.timer.unref();
  }

  private tick(): void {
    const now = Date.now();
    const due: Job[] = [];
    for (const job of this.live.values()) {
      if (job.state === "activated" && job.deadline <= now) {
        job.state = "activatable";
        job.deadline = -1;
        this.record(job, "TIMED_OUT");
        due.push(job);
      } else if (job.state === "backingOff" && job.recurAt <= now) {
        job.state = "activatable";
        job.recurAt = -1;
        this.record(job, "RECURRED_AFTER_BACKOFF");
        due.push(job);
      }
    }
    this.becameActivatable(due);
    this.schedule();
  }

  private record(job: Job, intent: JobIntent, extra: Partial<JobRecord> = {}): void {
    this.log.push({
      position: this.log.length + 1,
      key: job.key,
      intent,
      at: Date.now(),
      type: job.type,
      processInstanceKey: job.processInstanceKey,
      elementId: job.elementId,
      tenantId: job.tenantId,
      worker: job.worker,
      retries: job.retries,
      ...extra,
    });
  }
}

function parseVariables(text: unknown): Record<string, unknown> {
  if (typeof text !== "string" || text.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new GatewayError(grpc.status.INVALID_ARGUMENT, `Expected the variables to be a JSON document, but got '${text.slice(0, 100)}'`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new GatewayError(grpc.status.INVALID_ARGUMENT, "Expected the variables to be a JSON object");
  return parsed as Record<string, unknown>;
}
