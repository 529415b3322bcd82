import { readFileSync } from "node:fs";
import { credentials, loadPackageDefinition, Metadata, status, type ClientReadableStream, type ClientUnaryCall, type ServiceError } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import type { ZeebeSettings } from "../../src/config.js";
import { authProvider, parseJobPayload, ZEEBE_PROTO_PATH, type HeadersProvider } from "./sdk-adapter.js";

/** What a gRPC client of the gateway is made from: the address, TLS, the CA and client certificate, the authentication. */
export type ZeebeConnection = Pick<ZeebeSettings, "address"> & Partial<Pick<ZeebeSettings, "tls" | "auth" | "rootCertPath" | "mtls">>;

/** A job as the gateway sends it: variables and custom headers as JSON text. */
export interface ActivatedJobMessage {
  key: string;
  retries: number;
  /** When the job times out (epoch ms, as int64 text). */
  deadline: string | number;
  /** The process instance's key and the process's BPMN id (int64 as text). */
  processInstanceKey?: string;
  bpmnProcessId?: string;
  variables: string;
  customHeaders: string;
  tenantId: string;
}

/** A job as the worker runs it. */
export interface ReceivedJob {
  key: string;
  retries: number;
  variables: Record<string, unknown>;
  /** The task's headers (`zeebe:taskHeaders`), e.g. `retryBackoff`. */
  customHeaders: Record<string, unknown>;
  tenantId: string;
  processInstanceKey?: string | undefined;
  bpmnProcessId?: string | undefined;
}

/** The job of a message, its variables and headers parsed; throws when they cannot be (not JSON, or an int64 a number cannot hold). */
export function readJob(message: ActivatedJobMessage): ReceivedJob {
  const { variables, customHeaders } = parseJobPayload(message);
  return {
    key: message.key,
    retries: message.retries,
    variables,
    customHeaders,
    tenantId: message.tenantId,
    processInstanceKey: message.processInstanceKey,
    bpmnProcessId: message.bpmnProcessId,
  };
}

/** What ActivateJobs and StreamActivatedJobs are asked: the job type, the worker's name, the job timeout, the variables and tenants. */
export interface ActivationRequest {
  type: string;
  worker: string;
  timeout: number;
  fetchVariable: string[];
  tenantIds: string[];
}

/** The gRPC status codes the worker tells apart. */
export const GrpcStatus = status;

/** The answer of a unary call (the protocol's response message). */
type Answer = Record<string, unknown>;
type Unary = (request: object, metadata: Metadata, callback: (err: ServiceError | null, answer: Answer) => void) => ClientUnaryCall;
type Streaming = (request: object, metadata: Metadata) => ClientReadableStream<unknown>;

/** The protocol, loaded once (keys as written, int64 as text, enums by name: as the SDK loads it). */
let Gateway: (new (address: string, creds: ReturnType<typeof credentials.createInsecure>, options: object) => Record<string, unknown> & { close(): void }) | undefined;
function gatewayConstructor() {
  Gateway ??= (loadPackageDefinition(loadSync(ZEEBE_PROTO_PATH, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true })).gateway_protocol as Record<string, unknown>)
    .Gateway as typeof Gateway;
  return Gateway!;
}

/** Transient answers a command is asked again after: the gateway unreachable, back-pressure, a timeout between gateway and broker (as the SDK retries). */
const TRANSIENT = new Set<number>([status.UNAVAILABLE, status.RESOURCE_EXHAUSTED, status.DEADLINE_EXCEEDED]);

/** Options of one command. */
export interface CommandOptions {
  /**
   * How long a transient failure is asked again for (ms; 0: asked once). A job's report is asked
   * again for its job timeout at most: after it, the job is the engine's to hand out again.
   */
  retryForMs?: number;
}

/**
 * The worker's gRPC client of a Zeebe gateway, made from the gateway protocol the SDK ships, with
 * the SDK's credentials providers (OAuth client credentials with its token cache, basic, bearer)
 * and TLS as configured. The SDK's own client is not used for the worker's calls: it compresses
 * every message with gzip (hard-coded on its channel), which took a fifth of the worker's CPU per
 * job (measured); this channel sends messages uncompressed. One channel (one HTTP/2 connection)
 * carries the activations, the job streams and the job commands.
 */
export class GatewayClient {
  private readonly grpc: Record<string, unknown> & { close(): void };
  private readonly auth: HeadersProvider | undefined;
  private closing = false;

  constructor(connection: ZeebeConnection, sdkConfig: Record<string, string | boolean>) {
    const channelCredentials =
      connection.tls === true
        ? credentials.createSsl(
            connection.rootCertPath !== undefined ? readFileSync(connection.rootCertPath) : null,
            connection.mtls !== undefined ? readFileSync(connection.mtls.privateKeyPath) : null,
            connection.mtls !== undefined ? readFileSync(connection.mtls.certChainPath) : null,
          )
        : credentials.createInsecure();
    this.grpc = new (gatewayConstructor())(connection.address, channelCredentials, {
      // No compression of the messages sent (grpc-js's default; the SDK's channel sets gzip).
      "grpc.default_compression_algorithm": 0,
      // As the SDK's channel: a lost gateway is tried again after 1 s, then at most every 10 s; keepalive pings every 6 min.
      "grpc.initial_reconnect_backoff_ms": 1000,
      "grpc.min_reconnect_backoff_ms": 1000,
      "grpc.max_reconnect_backoff_ms": 10_000,
      "grpc.keepalive_time_ms": 360_000,
      "grpc.keepalive_timeout_ms": 120_000,
    });
    this.auth = authProvider(connection.auth?.strategy ?? "NONE", sdkConfig);
  }

  /** The call's credentials (none without authentication: no promise to wait for). */
  private metadata(): Metadata | Promise<Metadata> {
    if (this.auth === undefined) return new Metadata();
    return this.auth.getHeaders("ZEEBE").then((headers) => {
      const metadata = new Metadata();
      for (const [key, value] of Object.entries(headers)) metadata.add(key, value);
      return metadata;
    });
  }

  private once(method: string, request: object): Promise<Answer> {
    const call = this.grpc[method] as Unary;
    const send = (metadata: Metadata) =>
      new Promise<Answer>((resolve, reject) => {
        call.call(this.grpc, request, metadata, (err, answer) => (err !== null ? reject(err) : resolve(answer)));
      });
    const metadata = this.metadata();
    return metadata instanceof Metadata ? send(metadata) : metadata.then(send);
  }

  /**
   * A unary call; with `retryForMs`, a transient failure is asked again after 0.5, 1, 2 … 10 s
   * while that time lasts and the client is open, and a refused token once (it may have just
   * expired), as the SDK's client does.
   */
  async command(method: string, request: object, options: CommandOptions = {}): Promise<Answer> {
    const until = Date.now() + (options.retryForMs ?? 0);
    let refusedToken = false;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(method, request);
      } catch (err) {
        const code = (err as ServiceError).code;
        const again = code === status.UNAUTHENTICATED ? !refusedToken : TRANSIENT.has(code);
        if (code === status.UNAUTHENTICATED) refusedToken = true;
        const pauseMs = Math.min(10_000, 500 * 2 ** Math.min(attempt, 5));
        if (!again || this.closing || Date.now() + pauseMs > until) throw err;
        await new Promise((resolve) => setTimeout(resolve, pauseMs));
      }
    }
  }

  completeJob(request: { jobKey: string; variables: Record<string, unknown> }, options?: CommandOptions) {
    return this.command("completeJob", { jobKey: request.jobKey, variables: JSON.stringify(request.variables) }, options);
  }

  failJob(request: { jobKey: string; errorMessage: string; retries: number; retryBackOff: number }, options?: CommandOptions) {
    return this.command("failJob", { ...request, variables: "{}" }, options);
  }

  throwError(request: { jobKey: string; errorCode: string; errorMessage: string }, options?: CommandOptions) {
    return this.command("throwError", { ...request, variables: "{}" }, options);
  }

  updateJobTimeout(request: { jobKey: string; timeout: number }, options?: CommandOptions) {
    return this.command("updateJobTimeout", request, options);
  }

  topology(options?: CommandOptions) {
    return this.command("topology", {}, options);
  }

  /** ActivateJobs: a server stream of responses, each `{ jobs }`, ending when the gateway has answered (`requestTimeout`: its long poll, −1 none). */
  async activateJobs(request: ActivationRequest & { maxJobsToActivate: number; requestTimeout: number }, deadline?: Date): Promise<ClientReadableStream<unknown>> {
    const metadata = await this.metadata();
    return (this.grpc.activateJobs as (r: object, m: Metadata, o: object) => ClientReadableStream<unknown>).call(this.grpc, request, metadata, deadline !== undefined ? { deadline } : {});
  }

  /** StreamActivatedJobs: a long-lived server stream of jobs pushed by the gateway. */
  async streamActivatedJobs(request: ActivationRequest): Promise<ClientReadableStream<unknown>> {
    const metadata = await this.metadata();
    return (this.grpc.streamActivatedJobs as Streaming).call(this.grpc, request, metadata);
  }

  /** Closes the channel: calls under way are cancelled, commands waiting to be asked again give up. */
  close(): Promise<void> {
    this.closing = true;
    this.grpc.close();
    return Promise.resolve();
  }
}
