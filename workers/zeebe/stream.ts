import type { ClientReadableStream } from "@grpc/grpc-js";
import type { ZeebeSettings } from "../../src/config.js";
import type { Logger } from "../../src/logger.js";
import { reconnectDelayMs } from "../../src/tasks/outcome.js";
import type { WorkerState } from "../../src/tasks/worker-state.js";
import { readJob, type ActivatedJobMessage, type GatewayClient, type ReceivedJob } from "./gateway-client.js";
import { errorText } from "../../src/errors.js";

export type JobVia = "stream" | "poll";

/** The job action a job stream makes of the client: handing a job back. */
export interface StreamingClient {
  failJob(request: { jobKey: string; errorMessage: string; retries: number; retryBackOff: number }): Promise<unknown>;
}

export interface JobStreamOptions {
  taskType: string;
  workerId: string;
  settings: Pick<ZeebeSettings, "maxTasks" | "lockDurationMs" | "tenantIds" | "streamPollIntervalMs" | "address">;
  /** The gateway's client: the stream and the polls. */
  grpc: Pick<GatewayClient, "streamActivatedJobs" | "activateJobs">;
  client: StreamingClient;
  state: WorkerState;
  logger: Logger;
  /** Resolves when the gateway answers (a probe that asks once). */
  answers: () => Promise<unknown>;
  /**
   * Runs a job taken within the cap; resolves once it is done with (reported, or it could not be,
   * and its row in tasks_in_hand settled). Never rejects. `reported` is called as its report is
   * sent: the job's work is done and its slot is free from then on (the stream is read again);
   * neither the gateway's answer nor the row's settling is waited for.
   */
  run: (job: ReceivedJob, via: JobVia, reported: () => void) => Promise<unknown>;
}

/**
 * The jobs of one job type with streaming on (`ZEEBE_STREAM_JOBS`): a job stream
 * (`StreamActivatedJobs`) the gateway pushes new jobs into, and polls beside it for the jobs the
 * stream cannot have — those activatable before it opened, or yielded back by the broker when no
 * stream could take them — each at once after the stream opens, then every
 * `streamPollIntervalMs` while they find none (as Camunda's Java client does: streaming with
 * polling in the background at a reduced rate).
 *
 * The cap (`maxTasks` jobs in hand) is the worker's own. At the cap the stream is paused: not read,
 * gRPC flow control fills its buffers and the gateway, finding the stream not ready, pushes no more
 * (Zeebe 8.6 yields such a job back to the broker, for another stream or a poll); reading resumes
 * as soon as a job ends. The stream is not cancelled at the cap: a cancel loses the jobs already on
 * their way (activated for this worker, they wait for their job timeout: measured, 2 of 8 jobs in
 * a test). A job's slot frees as its report is sent (its work is done), not when the gateway
 * answers or its row in tasks_in_hand is settled. A job read past its deadline (it waited in the buffers longer than its job timeout) is
 * not run: the broker has timed it out and hands it out again. A job beyond the cap (a poll's and a
 * push at once) is handed back at once: failed with its retries unchanged and no back-off, so it is
 * activatable again instead of waiting for its job timeout. A stream error (a gateway restarted or
 * unreachable) is logged once; the gateway is probed after 0.5, 1, 2 … 30 s and the stream opened
 * again once it answers. Closing cancels the stream first (a job pushed into a cancelled stream is
 * yielded back by the broker, not activated), then waits for a poll under way.
 */
export class JobStream {
  private inHand = 0;
  /** The open job stream; paused, it is not read: gRPC flow control holds what follows and the gateway stops pushing once its buffers are full. */
  private stream: ClientReadableStream<unknown> | undefined;
  private opening: Promise<void> | undefined;
  private polling: Promise<void> | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private outage: Promise<void> | undefined;
  private paused = false;
  /** A poll was due while every slot was taken: it is made when a job ends. */
  private pollWhenFree = false;
  private closed = false;

  constructor(private readonly options: JobStreamOptions) {}

  /** Jobs of this job type in hand. */
  get jobsInHand(): number {
    return this.inHand;
  }

  start(): void {
    this.openStream();
  }

  /** Cancels the stream and the polls to come; resolves once no poll or opening is under way (the jobs they brought are running). */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.pollTimer);
    this.cancelStream();
    await Promise.all([this.opening, this.polling, this.outage]);
  }

  private get cap(): number {
    return this.options.settings.maxTasks;
  }

  private get fields() {
    const { taskType, settings } = this.options;
    return { engine: "zeebe", taskType, address: settings.address };
  }

  /** What both the stream and a poll ask for: the same worker name, timeout, variables and tenants. */
  private request() {
    const { taskType, workerId, settings } = this.options;
    return { type: taskType, worker: workerId, timeout: settings.lockDurationMs, fetchVariable: [], tenantIds: settings.tenantIds ?? [] };
  }

  private openStream(): void {
    if (this.closed || this.stream !== undefined || this.opening !== undefined || this.outage !== undefined) return;
    this.opening = this.options.grpc
      .streamActivatedJobs(this.request())
      .then((call) => {
        // Listeners first: whatever the call delivers is taken or handed back, even if cancelled below.
        call.on("data", (message) => this.receive(message as ActivatedJobMessage, "stream"));
        call.on("error", (err) => this.ended(call, err));
        call.on("end", () => this.ended(call, new Error("the gateway ended the job stream")));
        this.stream = call;
        this.paused = false;
        this.options.logger.debug("zeebe job stream open", { ...this.fields, jobsInHand: this.inHand });
        if (this.closed) this.cancelStream();
        else if (this.inHand >= this.cap) this.pause();
        // Jobs activatable before the stream opened are not pushed: a poll takes them.
        else this.pollNow();
      })
      .catch((err: unknown) => this.lost(err))
      .finally(() => (this.opening = undefined));
  }

  /** At the cap: the stream is not read until a job ends. */
  private pause(): void {
    if (this.stream === undefined || this.paused) return;
    this.paused = true;
    this.stream.pause();
    this.options.logger.debug("zeebe job stream paused: the worker has its cap of jobs in hand", { ...this.fields, jobsInHand: this.inHand, maxTasks: this.cap });
  }

  private resume(): void {
    if (this.stream === undefined || !this.paused || this.closed || this.inHand >= this.cap) return;
    this.paused = false;
    this.stream.resume();
    this.options.logger.debug("zeebe job stream resumed", { ...this.fields, jobsInHand: this.inHand });
  }

  private cancelStream(): void {
    const call = this.stream;
    if (call === undefined) return;
    this.stream = undefined;
    call.cancel();
    this.options.logger.debug("zeebe job stream cancelled", { ...this.fields, jobsInHand: this.inHand, closing: this.closed });
  }

  /** The call ended; unless it was cancelled here, the stream is lost. */
  private ended(call: ClientReadableStream<unknown>, err: unknown): void {
    if (this.stream !== call) return;
    this.stream = undefined;
    this.lost(err);
  }

  private receive(message: ActivatedJobMessage, via: JobVia): void {
    let job: ReceivedJob;
    try {
      job = readJob(message);
    } catch (err) {
      // As the SDK's job workers do: a job whose variables are not JSON fails, one retry fewer.
      this.fail(message.key, message.retries, `the job's variables could not be parsed: ${errorText(err)}`, Math.max(0, message.retries - 1));
      return;
    }
    if (via === "stream" && Number(message.deadline) <= Date.now()) {
      this.options.logger.warn("zeebe job read from the stream after its job timeout; not run, the broker hands it out again", { ...this.fields, taskId: job.key });
      return;
    }
    if (this.closed || this.inHand >= this.cap) {
      this.handBack(job, via);
      return;
    }
    this.inHand++;
    // At the cap the gateway must push no more: the stream is not read until a job ends.
    if (this.inHand >= this.cap) this.pause();
    let free = true;
    const freeSlot = () => {
      if (!free) return;
      free = false;
      this.inHand--;
      this.resume();
      if (this.pollWhenFree) this.pollNow();
    };
    void this.options.run(job, via, freeSlot).finally(freeSlot);
  }

  /** A job beyond the cap (or arriving as the worker closes): activatable again at once, its retries untouched. */
  private handBack(job: ReceivedJob, via: JobVia): void {
    this.options.logger.debug("zeebe job handed back: the worker has its cap of jobs in hand", { ...this.fields, taskId: job.key, via, jobsInHand: this.inHand, maxTasks: this.cap });
    this.fail(job.key, job.retries, `handed back unrun: worker ${this.options.workerId} had its cap of ${this.cap} jobs in hand`, job.retries);
  }

  private fail(jobKey: string, current: number, errorMessage: string, retries: number): void {
    this.options.client.failJob({ jobKey, errorMessage, retries, retryBackOff: 0 }).catch((err: unknown) =>
      this.options.logger.warn("could not hand a zeebe job back; it is activated again after its job timeout", { ...this.fields, taskId: jobKey, retries: current, error: errorText(err) }),
    );
  }

  /** Polls for the free slots now (unless a poll is under way; with none free, as soon as a job ends). */
  private pollNow(): void {
    clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
    const free = this.cap - this.inHand;
    if (this.closed || this.polling !== undefined || this.outage !== undefined) return;
    this.pollWhenFree = free <= 0;
    if (this.pollWhenFree) return;
    this.polling = this.poll(free)
      .then(
        (found) => found,
        (err: unknown) => {
          this.options.logger.debug("zeebe fallback poll failed", { ...this.fields, error: errorText(err) });
          return 0;
        },
      )
      .then((found) => {
        this.polling = undefined;
        this.options.logger.debug("zeebe fallback poll", { ...this.fields, found });
        // A poll that found jobs may have left more behind: the next follows at once.
        this.schedulePoll(found > 0 ? 0 : this.options.settings.streamPollIntervalMs);
      });
  }

  private schedulePoll(ms: number): void {
    if (this.closed || this.outage !== undefined) return;
    clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(() => this.pollNow(), ms);
    this.pollTimer.unref();
  }

  /** One activation that does not wait for jobs (the stream brings new ones); answers how many it brought. */
  private async poll(max: number): Promise<number> {
    const answer = await this.options.grpc.activateJobs({ ...this.request(), maxJobsToActivate: max, requestTimeout: -1 });
    let found = 0;
    await new Promise<void>((resolve, reject) => {
      answer.on("data", (response) => {
        for (const message of (response as { jobs: ActivatedJobMessage[] }).jobs) {
          found++;
          this.receive(message, "poll");
        }
      });
      answer.on("end", resolve);
      answer.on("error", reject);
    });
    return found;
  }

  /** The stream failed: logged once, the gateway probed with a growing pause, the stream opened again when it answers. */
  private lost(err: unknown): void {
    if (this.closed || this.outage !== undefined) return;
    const { logger, state } = this.options;
    logger.warn("zeebe job stream lost; reopening when the gateway answers", { ...this.fields, error: errorText(err) });
    clearTimeout(this.pollTimer);
    const since = Date.now();
    this.outage = (async () => {
      for (let failed = 0; ; failed++) {
        await state.pause(reconnectDelayMs(failed));
        if (this.closed) return;
        try {
          await this.options.answers();
          logger.info("zeebe job stream reopened", { ...this.fields, outageMs: Date.now() - since, failedProbes: failed });
          return;
        } catch {
          logger.debug("zeebe gateway still unreachable", { ...this.fields, failedProbes: failed + 1 });
        }
      }
    })().finally(() => {
      this.outage = undefined;
      this.openStream();
    });
  }
}

