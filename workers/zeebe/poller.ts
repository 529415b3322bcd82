import type { ClientReadableStream, ServiceError } from "@grpc/grpc-js";
import type { ZeebeSettings } from "../../src/config.js";
import { GrpcStatus, readJob, type ActivatedJobMessage, type GatewayClient, type ReceivedJob } from "./gateway-client.js";

/** How long the gateway holds an activation open while it has no job (the SDK's default long poll, under SaaS's 60 s limit). */
export const LONG_POLL_MS = 50_000;

/** Beyond the long poll, how long an activation the gateway never ends is waited for before it is asked again. */
const CLIENT_MARGIN_MS = 10_000;

export interface JobPollerOptions {
  taskType: string;
  workerId: string;
  settings: Pick<ZeebeSettings, "maxTasks" | "lockDurationMs" | "tenantIds">;
  client: Pick<GatewayClient, "activateJobs">;
  /**
   * Runs an activated job; resolves once it is done with (reported, or it could not be, and its
   * row in tasks_in_hand settled). Never rejects. `reported` is called as its report is sent: the
   * job's work is done and its slot is free from then on (the next activation travels with the
   * report); neither the gateway's answer nor the row's settling is waited for.
   */
  run: (job: ReceivedJob, reported: () => void) => Promise<unknown>;
  /** A job was activated (the gateway takes activations again). */
  activated: () => void;
  /** An activation failed (back-pressure, the gateway lost …): the poller has halted; the caller decides when it starts again. */
  failed: (err: ServiceError) => void;
  /** A job whose variables could not be read: to fail, one retry fewer (as the SDK's job workers do). */
  unreadable: (message: ActivatedJobMessage, err: unknown) => void;
}

/**
 * The jobs of one job type, long polled (`ActivateJobs`): one activation at a time, asking for the
 * free slots (`maxTasks` less the jobs in hand), held by the gateway until it has jobs. The next
 * activation follows as soon as one ends with a slot free, or, with none free, as soon as a job
 * ends: the slots freed in one turn of the event loop (jobs ending together) are asked for by one
 * activation. (The SDK's job workers ask only once 70 % of their slots are free, and then at their
 * next poll tick.) A failed activation halts the poller and is handed to `failed`; {@link start}
 * resumes it, its jobs in hand still counted. {@link halt} cancels the open activation: the gateway
 * gives new jobs to the workers still polling, not to this one.
 */
export class JobPoller {
  private inHand = 0;
  private call: ClientReadableStream<unknown> | undefined;
  private opening = false;
  private running = false;
  private due = false;
  private idle: Promise<void> = Promise.resolve();
  private settled: () => void = () => {};

  constructor(private readonly options: JobPollerOptions) {}

  /** Jobs of this job type in hand. */
  get jobsInHand(): number {
    return this.inHand;
  }

  /** Starts (or resumes) activating jobs. */
  start(): void {
    this.running = true;
    this.activate();
  }

  /** No new activation; the open one is cancelled. Resolves once no activation is under way (the jobs it brought are running). */
  halt(): Promise<void> {
    this.running = false;
    this.call?.cancel();
    return this.idle;
  }

  /** The next activation, on the next turn of the event loop (slots freed together are asked for together). */
  private soon(): void {
    if (this.due) return;
    this.due = true;
    setImmediate(() => {
      this.due = false;
      this.activate();
    });
  }

  private activate(): void {
    const free = this.options.settings.maxTasks - this.inHand;
    if (!this.running || this.call !== undefined || this.opening || free <= 0) return;
    const { taskType, workerId, settings, client } = this.options;
    this.opening = true;
    this.idle = new Promise((resolve) => (this.settled = resolve));
    const request = {
      type: taskType,
      worker: workerId,
      timeout: settings.lockDurationMs,
      maxJobsToActivate: free,
      requestTimeout: LONG_POLL_MS,
      fetchVariable: [],
      tenantIds: settings.tenantIds ?? [],
    };
    client.activateJobs(request, new Date(Date.now() + LONG_POLL_MS + CLIENT_MARGIN_MS)).then(
      (call) => {
        this.opening = false;
        this.call = call;
        if (!this.running) call.cancel();
        call.on("data", (response) => {
          for (const message of (response as { jobs: ActivatedJobMessage[] }).jobs) this.receive(message);
        });
        call.on("end", () => this.ended(call, undefined));
        call.on("error", (err: ServiceError) => this.ended(call, err));
      },
      (err: unknown) => {
        // The call's credentials could not be had (the token endpoint failed).
        this.opening = false;
        this.ended(undefined, err as ServiceError);
      },
    );
  }

  private ended(call: ClientReadableStream<unknown> | undefined, err: ServiceError | undefined): void {
    if (call !== undefined && this.call !== call) return;
    this.call = undefined;
    this.settled();
    // Cancelled by halt(); a call the gateway never ended is asked again.
    if (err === undefined || err.code === GrpcStatus.CANCELLED || err.code === GrpcStatus.DEADLINE_EXCEEDED) {
      this.activate();
      return;
    }
    this.running = false;
    this.options.failed(err);
  }

  private receive(message: ActivatedJobMessage): void {
    let job: ReceivedJob;
    try {
      job = readJob(message);
    } catch (err) {
      this.options.unreadable(message, err);
      return;
    }
    this.inHand++;
    this.options.activated();
    let free = true;
    const freeSlot = () => {
      if (!free) return;
      free = false;
      this.inHand--;
      this.soon();
    };
    void this.options.run(job, freeSlot).finally(freeSlot);
  }
}
