import * as grpc from "@grpc/grpc-js";
import { expect } from "chai";
import { gatewayProtocol, ZeebeGateway } from "../support/zeebe-gateway.js";
import { selfSignedCertificate } from "../support/tls.js";
import { waitUntil } from "../support/workers.js";

type Message = Record<string, unknown>;
interface ActivatedJob {
  key: string;
  type: string;
  worker: string;
  retries: number;
  deadline: string;
  variables: string;
  customHeaders: string;
  tenantId: string;
  elementId: string;
  processInstanceKey: string;
}

/** A raw gRPC client of the gateway protocol: every field as the wire carries it. */
class RawClient {
  private readonly client: grpc.Client & Record<string, (...args: unknown[]) => unknown>;

  constructor(address: string, metadata?: grpc.Metadata, credentials = grpc.credentials.createInsecure()) {
    const Gateway = (gatewayProtocol().gateway_protocol as grpc.GrpcObject).Gateway as grpc.ServiceClientConstructor;
    this.client = new Gateway(address, credentials) as never;
    this.metadata = metadata ?? new grpc.Metadata();
  }

  private readonly metadata: grpc.Metadata;

  call(method: string, request: Message, deadlineMs = 10_000): Promise<Message> {
    return new Promise((resolve, reject) =>
      this.client[method]!(request, this.metadata, { deadline: Date.now() + deadlineMs }, (err: grpc.ServiceError | null, answer: Message) => (err ? reject(err) : resolve(answer))),
    );
  }

  /** Opens ActivateJobs; resolves with the jobs of every response once the call ends. */
  activate(request: Partial<{ type: string; worker: string; timeout: number; maxJobsToActivate: number; fetchVariable: string[]; requestTimeout: number; tenantIds: string[] }>): {
    call: grpc.ClientReadableStream<{ jobs: ActivatedJob[] }>;
    jobs: Promise<ActivatedJob[]>;
  } {
    const call = this.client.ActivateJobs!({ type: "t", worker: "w", timeout: 60_000, maxJobsToActivate: 10, requestTimeout: -1, ...request }, this.metadata) as grpc.ClientReadableStream<{ jobs: ActivatedJob[] }>;
    const jobs = new Promise<ActivatedJob[]>((resolve, reject) => {
      const found: ActivatedJob[] = [];
      call.on("data", (response: { jobs: ActivatedJob[] }) => found.push(...response.jobs));
      call.on("end", () => resolve(found));
      call.on("error", reject);
    });
    return { call, jobs };
  }

  stream(request: Partial<{ type: string; worker: string; timeout: number; fetchVariable: string[]; tenantIds: string[] }>): { call: grpc.ClientReadableStream<ActivatedJob>; received: ActivatedJob[] } {
    const call = this.client.StreamActivatedJobs!({ type: "t", worker: "w", timeout: 60_000, ...request }, this.metadata) as grpc.ClientReadableStream<ActivatedJob>;
    const received: ActivatedJob[] = [];
    call.on("data", (job: ActivatedJob) => received.push(job));
    call.on("error", () => {});
    return { call, received };
  }

  close(): void {
    this.client.close();
  }
}

const codeOf = async (promise: Promise<unknown>) =>
  promise.then(
    () => "OK",
    (err: grpc.ServiceError) => grpc.status[err.code],
  );

describe("Zeebe gateway stand-in (test/support/zeebe-gateway.ts), on its own", function () {
  this.timeout(30_000);
  let gateway: ZeebeGateway;
  let client: RawClient;
  beforeEach(async () => {
    gateway = await ZeebeGateway.start();
    client = new RawClient(gateway.address);
  });
  afterEach(async () => {
    client.close();
    await gateway.close();
  });

  it("Topology: one broker leading one healthy partition", async () => {
    const topology = (await client.call("Topology", {})) as { brokers: { partitions: { role: string; health: string }[] }[]; partitionsCount: number };
    expect(topology.partitionsCount).to.equal(1);
    expect(topology.brokers[0]?.partitions).to.deep.equal([{ partitionId: 1, role: "LEADER", health: "HEALTHY" }]);
  });

  it("ActivateJobs: up to maxJobsToActivate jobs of the type, for the worker and timeout, with the fetched variables and the custom headers", async () => {
    const keys = [1, 2, 3].map((n) =>
      gateway.createJob({ type: "t", variables: { a: n, b: "x" }, customHeaders: { h: "v" }, retries: 5, processInstanceKey: `9${n}`, elementId: "Task" }),
    );
    gateway.createJob({ type: "other" });
    const before = Date.now();
    const jobs = await client.activate({ worker: "worker-1", timeout: 45_000, maxJobsToActivate: 2, fetchVariable: ["a"] }).jobs;
    expect(jobs.map((j) => j.key)).to.deep.equal(keys.slice(0, 2));
    expect(jobs.map((j) => JSON.parse(j.variables) as unknown)).to.deep.equal([{ a: 1 }, { a: 2 }]);
    expect(jobs.map((j) => [j.type, j.worker, j.retries, JSON.parse(j.customHeaders), j.tenantId, j.processInstanceKey, j.elementId])).to.deep.equal([
      ["t", "worker-1", 5, { h: "v" }, "<default>", "91", "Task"],
      ["t", "worker-1", 5, { h: "v" }, "<default>", "92", "Task"],
    ]);
    expect(Number(jobs[0]!.deadline)).to.be.at.least(before + 45_000);
    expect(gateway.records({ intent: "ACTIVATED" }).map((r) => [r.key, r.worker, r.via])).to.deep.equal(keys.slice(0, 2).map((k) => [k, "worker-1", "poll"]));
    // The third is left; all variables when none is named.
    const rest = await client.activate({}).jobs;
    expect(rest.map((j) => [j.key, JSON.parse(j.variables)])).to.deep.equal([[keys[2], { a: 3, b: "x" }]]);
  });

  it("ActivateJobs refuses a blank type or worker, a timeout or maxJobsToActivate below 1, a malformed tenant id (INVALID_ARGUMENT)", async () => {
    const code = (request: Parameters<RawClient["activate"]>[0]) => codeOf(client.activate(request).jobs);
    expect(await code({ type: "" })).to.equal("INVALID_ARGUMENT");
    expect(await code({ worker: " " })).to.equal("INVALID_ARGUMENT");
    expect(await code({ timeout: 0 })).to.equal("INVALID_ARGUMENT");
    expect(await code({ maxJobsToActivate: 0 })).to.equal("INVALID_ARGUMENT");
    expect(await code({ tenantIds: ["no spaces"] })).to.equal("INVALID_ARGUMENT");
    expect(await code({})).to.equal("OK");
  });

  it("tenantIds: a job of a tenant goes only to activations naming it; none named means <default>", async () => {
    const ofTenant = gateway.createJob({ type: "t", tenantId: "tenant-a" });
    const ofDefault = gateway.createJob({ type: "t" });
    expect((await client.activate({ tenantIds: ["tenant-b"] }).jobs).map((j) => j.key)).to.deep.equal([]);
    expect((await client.activate({}).jobs).map((j) => j.key)).to.deep.equal([ofDefault]);
    expect((await client.activate({ tenantIds: ["tenant-b", "tenant-a"] }).jobs).map((j) => [j.key, j.tenantId])).to.deep.equal([[ofTenant, "tenant-a"]]);
  });

  it("long polling: requestTimeout -1 answers at once, a waiting poll gets the job created meanwhile, one that times out ends empty", async () => {
    expect(await client.activate({ requestTimeout: -1 }).jobs).to.deep.equal([]);
    const waiting = client.activate({ requestTimeout: 20_000 });
    await waitUntil(() => gateway.calls("ActivateJobs").length === 2, "the poll at the gateway");
    const key = gateway.createJob({ type: "t" });
    expect((await waiting.jobs).map((j) => j.key)).to.deep.equal([key]);
    // Nothing activatable: the call ends, empty, when its requestTimeout is over.
    expect(await client.activate({ requestTimeout: 300 }).jobs).to.deep.equal([]);
  });

  it("long polling: a poll the client cancelled gets no job; the job stays activatable", async () => {
    const waiting = client.activate({ worker: "gone", requestTimeout: 20_000 });
    await waitUntil(() => gateway.calls("ActivateJobs").length === 1, "the poll at the gateway");
    waiting.call.cancel();
    expect(await codeOf(waiting.jobs)).to.equal("CANCELLED");
    await new Promise((r) => setTimeout(r, 100));
    const key = gateway.createJob({ type: "t" });
    expect(gateway.records({ key, intent: "ACTIVATED" })).to.deep.equal([]);
    expect((await client.activate({ worker: "next" }).jobs).map((j) => [j.key, j.worker])).to.deep.equal([[key, "next"]]);
  });

  it("StreamActivatedJobs: new jobs are pushed into the stream; jobs activatable before it opened are left to polls", async () => {
    const earlier = gateway.createJob({ type: "t" });
    const stream = client.stream({ worker: "streamer", fetchVariable: ["a"] });
    await waitUntil(() => gateway.calls("StreamActivatedJobs").length === 1, "the stream at the gateway");
    await new Promise((r) => setTimeout(r, 50));
    const pushed = [gateway.createJob({ type: "t", variables: { a: 1, b: 2 } }), gateway.createJob({ type: "t", variables: { a: 2 } })];
    await waitUntil(() => stream.received.length === 2, "two jobs pushed");
    expect(stream.received.map((j) => [j.key, j.worker, JSON.parse(j.variables)])).to.deep.equal([
      [pushed[0], "streamer", { a: 1 }],
      [pushed[1], "streamer", { a: 2 }],
    ]);
    expect(gateway.records({ intent: "ACTIVATED" }).map((r) => r.via)).to.deep.equal(["stream", "stream"]);
    expect((await client.activate({}).jobs).map((j) => j.key)).to.deep.equal([earlier]);
    stream.call.cancel();
  });

  it("stream flow control: a stream that is not read fills its buffers and gets no more jobs; they go to another stream or a poll", async () => {
    const unread = client.stream({ worker: "unread" });
    await waitUntil(() => gateway.calls("StreamActivatedJobs").length === 1, "the stream at the gateway");
    unread.call.pause();
    // Jobs of 40 KB: the client's HTTP/2 window (64 KiB) and the 32 KiB the gateway lets wait are soon full.
    const big = { blob: "x".repeat(40_000) };
    const created: string[] = [];
    while (gateway.records({ intent: "YIELDED" }).length === 0 && created.length < 20) {
      created.push(gateway.createJob({ type: "t", variables: big }));
      await new Promise((r) => setTimeout(r, 50));
    }
    const [yielded] = gateway.records({ intent: "YIELDED" });
    expect(yielded, "a job yielded").to.not.equal(undefined);
    const pushedToUnread = gateway.records({ intent: "ACTIVATED" }).filter((r) => r.worker === "unread").length;
    expect(pushedToUnread).to.equal(created.length - 1);
    // The yielded job goes to a poll; the next job to a stream that reads.
    expect((await client.activate({ worker: "poller" }).jobs).map((j) => j.key)).to.deep.equal([yielded!.key]);
    const reading = client.stream({ worker: "reading" });
    await waitUntil(() => gateway.calls("StreamActivatedJobs").length === 2, "the second stream at the gateway");
    const next = gateway.createJob({ type: "t", variables: big });
    await waitUntil(() => reading.received.length === 1, "the next job pushed to the reading stream");
    expect(reading.received[0]?.key).to.equal(next);
    expect(gateway.records({ intent: "ACTIVATED" }).filter((r) => r.worker === "unread")).to.have.length(pushedToUnread);
    unread.call.cancel();
    reading.call.cancel();
  });

  it("CompleteJob records the variables; a report on a job no longer active, or never there, answers NOT_FOUND", async () => {
    const key = gateway.createJob({ type: "t" });
    await client.activate({}).jobs;
    await client.call("CompleteJob", { jobKey: key, variables: JSON.stringify({ result: { n: 1 } }) });
    expect(gateway.job(key)?.state).to.equal("completed");
    expect(gateway.records({ key, intent: "COMPLETED" }).map((r) => r.variables)).to.deep.equal([{ result: { n: 1 } }]);
    expect(await codeOf(client.call("CompleteJob", { jobKey: key, variables: "{}" }))).to.equal("NOT_FOUND");
    expect(await codeOf(client.call("FailJob", { jobKey: key, retries: 1 }))).to.equal("NOT_FOUND");
    expect(await codeOf(client.call("ThrowError", { jobKey: key, errorCode: "E" }))).to.equal("NOT_FOUND");
    expect(await codeOf(client.call("UpdateJobTimeout", { jobKey: key, timeout: 1000 }))).to.equal("NOT_FOUND");
    expect(await codeOf(client.call("CompleteJob", { jobKey: "2251799813685249", variables: "{}" }))).to.equal("NOT_FOUND");
  });

  it("FailJob with retries and a back-off: not activatable until the back-off ends, then activatable with those retries", async () => {
    const key = gateway.createJob({ type: "t", retries: 3 });
    await client.activate({}).jobs;
    await client.call("FailJob", { jobKey: key, retries: 2, errorMessage: "passing", retryBackOff: 1500 });
    expect(gateway.job(key)?.state).to.equal("backingOff");
    expect(await client.activate({ requestTimeout: -1 }).jobs).to.deep.equal([]);
    const [again] = await client.activate({ requestTimeout: 20_000 }).jobs;
    expect([again?.key, again?.retries]).to.deep.equal([key, 2]);
    expect(gateway.records({ key }).map((r) => r.intent)).to.deep.equal(["CREATED", "ACTIVATED", "FAILED", "RECURRED_AFTER_BACKOFF", "ACTIVATED"]);
    expect(gateway.records({ key, intent: "FAILED" }).map((r) => [r.retries, r.retryBackoff, r.errorMessage])).to.deep.equal([[2, 1500, "passing"]]);
    // The back-off ran its course on the stand-in's clock.
    const [failed, recurred] = [gateway.records({ key, intent: "FAILED" })[0]!, gateway.records({ key, intent: "RECURRED_AFTER_BACKOFF" })[0]!];
    expect(recurred.at - failed.at).to.be.at.least(1500);
  });

  it("FailJob with retries 0 raises an incident: recorded, never activated again until its retries are updated", async () => {
    const key = gateway.createJob({ type: "t", retries: 1, processInstanceKey: "77", elementId: "RequestAccessPoints" });
    await client.activate({}).jobs;
    await client.call("FailJob", { jobKey: key, retries: 0, errorMessage: "the database is not reachable", retryBackOff: 0 });
    expect(gateway.incidents(key).map((i) => [i.errorType, i.errorMessage, i.processInstanceKey, i.elementId])).to.deep.equal([["JOB_NO_RETRIES", "the database is not reachable", "77", "RequestAccessPoints"]]);
    expect(await gateway.settle(key)).to.equal("incident");
    expect(await client.activate({ requestTimeout: 500 }).jobs).to.deep.equal([]);
    expect(await codeOf(client.call("CompleteJob", { jobKey: key, variables: "{}" }))).to.equal("FAILED_PRECONDITION");
    expect(await codeOf(client.call("UpdateJobRetries", { jobKey: key, retries: 0 }))).to.equal("INVALID_ARGUMENT");
    await client.call("UpdateJobRetries", { jobKey: key, retries: 2 });
    const [again] = await client.activate({}).jobs;
    expect([again?.key, again?.retries]).to.deep.equal([key, 2]);
    expect(gateway.records({ key }).map((r) => r.intent)).to.deep.equal(["CREATED", "ACTIVATED", "FAILED", "RETRIES_UPDATED", "ACTIVATED"]);
  });

  it("ThrowError is recorded with its code and message; the job has ended", async () => {
    const key = gateway.createJob({ type: "t" });
    await client.activate({}).jobs;
    await client.call("ThrowError", { jobKey: key, errorCode: "API_DEFINITION_NOT_FOUND", errorMessage: "no such definition" });
    expect(await gateway.settle(key)).to.equal("errorThrown");
    expect(gateway.records({ key, intent: "ERROR_THROWN" }).map((r) => [r.errorCode, r.errorMessage])).to.deep.equal([["API_DEFINITION_NOT_FOUND", "no such definition"]]);
    expect(await codeOf(client.call("CompleteJob", { jobKey: key, variables: "{}" }))).to.equal("NOT_FOUND");
  });

  it("FailJob, ThrowError and UpdateJobTimeout need an activated job (FAILED_PRECONDITION)", async () => {
    const key = gateway.createJob({ type: "t" });
    expect(await codeOf(client.call("FailJob", { jobKey: key, retries: 1 }))).to.equal("FAILED_PRECONDITION");
    expect(await codeOf(client.call("ThrowError", { jobKey: key, errorCode: "E" }))).to.equal("FAILED_PRECONDITION");
    expect(await codeOf(client.call("UpdateJobTimeout", { jobKey: key, timeout: 1000 }))).to.equal("FAILED_PRECONDITION");
  });

  it("a job whose timeout passes is activatable again; UpdateJobTimeout moves the deadline", async () => {
    const lapsing = gateway.createJob({ type: "t" });
    await client.activate({ worker: "first", timeout: 300 }).jobs;
    const [again] = await client.activate({ worker: "second", requestTimeout: 20_000 }).jobs;
    expect([again?.key, again?.worker]).to.deep.equal([lapsing, "second"]);
    expect(gateway.records({ key: lapsing }).map((r) => [r.intent, r.worker])).to.deep.equal([
      ["CREATED", ""],
      ["ACTIVATED", "first"],
      ["TIMED_OUT", "first"],
      ["ACTIVATED", "second"],
    ]);

    const extended = gateway.createJob({ type: "u" });
    await client.activate({ type: "u", worker: "first", timeout: 300 }).jobs;
    await client.call("UpdateJobTimeout", { jobKey: extended, timeout: 60_000 });
    expect(await client.activate({ type: "u", worker: "second", requestTimeout: 1000 }).jobs).to.deep.equal([]);
    expect(gateway.records({ key: extended }).map((r) => r.intent)).to.deep.equal(["CREATED", "ACTIVATED", "TIMEOUT_UPDATED"]);
    expect(gateway.job(extended)?.deadline).to.be.greaterThan(Date.now() + 50_000);
  });

  it("faults: UNAVAILABLE and RESOURCE_EXHAUSTED as injected (back-pressure spares CompleteJob and FailJob), a stalled call, a stop and a restart on the same port", async () => {
    const once = gateway.inject({ status: "UNAVAILABLE", methods: ["Topology"], times: 1 });
    expect(await codeOf(client.call("Topology", {}))).to.equal("UNAVAILABLE");
    expect(await codeOf(client.call("Topology", {}))).to.equal("OK");
    once.clear();

    const key = gateway.createJob({ type: "t" });
    await client.activate({}).jobs;
    const pressure = gateway.backPressure();
    expect(await codeOf(client.activate({}).jobs)).to.equal("RESOURCE_EXHAUSTED");
    expect(await codeOf(client.call("UpdateJobTimeout", { jobKey: key, timeout: 1000 }))).to.equal("RESOURCE_EXHAUSTED");
    expect(await codeOf(client.call("CompleteJob", { jobKey: key, variables: "{}" }))).to.equal("OK");
    pressure.clear();
    expect(await codeOf(client.activate({}).jobs)).to.equal("OK");
    expect(gateway.calls("ActivateJobs").map((c) => c.status)).to.deep.equal(["OK", "RESOURCE_EXHAUSTED", "OK"]);

    const stall = gateway.stall(["Topology"]);
    expect(await codeOf(client.call("Topology", {}, 500))).to.equal("DEADLINE_EXCEEDED");
    const held = client.call("Topology", {}, 10_000);
    await waitUntil(() => gateway.calls("Topology").length >= 2, "the stalled call waiting");
    stall.release();
    expect(await codeOf(held)).to.equal("OK");

    const kept = gateway.createJob({ type: "t" });
    await client.activate({ worker: "before-stop" }).jobs;
    await gateway.stop();
    // The gateway is gone: the call fails (how depends on when the client notices: UNAVAILABLE, CANCELLED …).
    expect(await codeOf(client.call("Topology", {}, 2000))).to.not.equal("OK");
    await gateway.restart();
    await waitUntil(async () => (await codeOf(client.call("Topology", {}, 2000))) === "OK", "the gateway back on its port");
    // The job activated before the stop is still activated, and can be completed.
    expect(gateway.job(kept)?.worker).to.equal("before-stop");
    await client.call("CompleteJob", { jobKey: kept, variables: "{}" });
    expect(await gateway.settle(kept)).to.equal("completed");
  });

  it("records each call's authorization header, for tests of credentials", async () => {
    const metadata = new grpc.Metadata();
    metadata.set("authorization", "Bearer token-1");
    const withToken = new RawClient(gateway.address, metadata);
    try {
      await withToken.call("Topology", {});
      await client.call("Topology", {});
      expect(gateway.calls("Topology").map((c) => c.authorization)).to.deep.equal(["Bearer token-1", undefined]);
    } finally {
      withToken.close();
    }
  });

  it("with credentials required, answers UNAUTHENTICATED to a call without them or with others, and hands such a call no job", async () => {
    const guarded = await ZeebeGateway.start({ authorization: "Bearer right" });
    const withHeader = (value: string) => {
      const metadata = new grpc.Metadata();
      metadata.set("authorization", value);
      return new RawClient(guarded.address, metadata);
    };
    const [right, wrong, none] = [withHeader("Bearer right"), withHeader("Bearer wrong"), new RawClient(guarded.address)];
    try {
      const key = guarded.createJob({ type: "t" });
      expect(await codeOf(none.call("Topology", {}))).to.equal("UNAUTHENTICATED");
      expect(await codeOf(wrong.activate({ type: "t" }).jobs)).to.equal("UNAUTHENTICATED");
      expect(guarded.job(key)?.state).to.equal("activatable");
      expect((await right.activate({ type: "t" }).jobs).map((j) => j.key)).to.deep.equal([key]);
      expect(guarded.calls().map((c) => `${c.method} ${c.status} ${c.authorization ?? "(none)"}`)).to.deep.equal([
        "Topology UNAUTHENTICATED (none)",
        "ActivateJobs UNAUTHENTICATED Bearer wrong",
        "ActivateJobs OK Bearer right",
      ]);
    } finally {
      [right, wrong, none].forEach((c) => c.close());
      await guarded.close();
    }
  });

  it("serves TLS, and with a client CA requires a client certificate it signed (mutual TLS), also after a restart", async () => {
    const server = selfSignedCertificate();
    const client = selfSignedCertificate();
    const secured = await ZeebeGateway.start({ tls: { key: server.key, cert: server.cert, clientCa: client.cert } });
    const withCertificate = new RawClient(secured.address, undefined, grpc.credentials.createSsl(server.cert, client.key, client.cert));
    const withoutCertificate = new RawClient(secured.address, undefined, grpc.credentials.createSsl(server.cert));
    const plaintext = new RawClient(secured.address);
    try {
      expect(secured.address).to.equal(`localhost:${secured.port}`);
      expect(await codeOf(withCertificate.call("Topology", {}))).to.equal("OK");
      expect(await codeOf(withoutCertificate.call("Topology", {}, 3000))).to.equal("UNAVAILABLE");
      expect(await codeOf(plaintext.call("Topology", {}, 3000))).to.equal("UNAVAILABLE");
      await secured.stop();
      await secured.restart();
      await waitUntil(async () => (await codeOf(withCertificate.call("Topology", {}, 2000))) === "OK", "the TLS gateway back on its port");
      // Only the calls of the client with a certificate reached the gateway.
      expect(secured.calls().every((c) => c.status === "OK")).to.equal(true);
    } finally {
      [withCertificate, withoutCertificate, plaintext].forEach((c) => c.close());
      await secured.close();
    }
  });
});
