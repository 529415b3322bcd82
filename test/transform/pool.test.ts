import { expect } from "chai";
import { ACCESS_POINTS_OUTPUT, compileValid, problemOf } from "../support/transforms.js";
import { ProblemError } from "../../src/errors.js";
import { TransformPool, type TransformPoolOptions } from "../../src/transform/pool.js";
import type { TransformInput } from "../../src/transform/protocol.js";
import { evaluateTransform } from "../../src/transform/transform.js";

const LIMITS = { timeoutMs: 0, maxDepth: 500, maxSequence: 1_000_000 };
const output = ACCESS_POINTS_OUTPUT;

const compile = (text: string) => compileValid(text, LIMITS);


/** The examples that froze or killed the service when transforms ran on its event loop. */
const HOSTILE = {
  evalRecursion: '($f := function($n){ $eval("$f(1)") }; $f(0))',
  backtracking: "$match(${code}, /(a+)+$/)",
  distinct: "$count($distinct([1..300000]))",
  hugePad: '$length($pad("", 100000000))',
};
const BACKTRACKING_INPUT = { code: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!" };

describe("transform pool (child processes)", function () {
  this.timeout(60_000);
  const pools: TransformPool[] = [];
  const pool = (options: Partial<TransformPoolOptions> = {}) => {
    const created = new TransformPool({ processes: 2, timeoutMs: 5000, memoryMb: 96, ...options });
    pools.push(created);
    return created;
  };
  after(() => Promise.all(pools.map((p) => p.close())));

  it("reads a child's answer whose keys hold quotes and backslashes right, after decoys for them (V8's escaped-key defect)", async () => {
    // Objects with these keys before, kept alive, make JSON.parse misread `k"ey` as `k\"e` (docs/decisions/2026-11-23-json-parser-for-escaped-keys.md).
    const decoys = [JSON.parse('{"poolFirst":0,"k\\\\\\"e":0}'), JSON.parse('{"poolFirst":0,"k\\"ey":0,"ke\\\\\\\\y":0}')];
    const transform = compile('{ "poolFirst": 0, "k\\"ey": 1, "ke\\\\y\\"": 2 }');
    expect(await pool().evaluateInChild(transform, { queryOutput: output, params: {} })).to.deep.equal({ poolFirst: 0, 'k"ey': 1, 'ke\\y"': 2 });
    expect(decoys).to.have.length(2);
  });

  it("gives exactly what the same transform gives in-process: result(), ${param}, timelines", async () => {
    const transform = compile('{ "points": result(?ap) { externalId, kind: accessPointType, usage: id }, "for": ${who}, "n": $count(ap) }');
    const input: TransformInput = {
      queryOutput: output,
      params: { who: "u-7" },
      timelines: new Map([["usage", new Map<string, unknown>([["id-1", [{ timestamp: "2024-01-01T00:00:00.000Z", value: 1.5 }]]])]]),
    };
    const inProcess = await evaluateTransform(transform, input);
    expect(await pool().evaluate(transform, input)).to.deep.equal(inProcess);
    expect(inProcess).to.deep.equal({
      points: [
        { externalId: "E1", kind: "GAS", usage: [{ timestamp: "2024-01-01T00:00:00.000Z", value: 1.5 }] },
        { externalId: "E2", kind: null, usage: null },
      ],
      for: "u-7",
      n: 2,
    });
  });

  it("answers undefined for no match and keeps JSONata's error codes and positions", async () => {
    const p = pool();
    expect(await p.evaluate(compile("ap[key = 'none']"), { queryOutput: output, params: {} })).to.equal(undefined);
    const err = await problemOf(p.evaluate(compile('$number("x") + 1'), { queryOutput: output, params: {} }));
    expect(err.code).to.equal("TRANSFORM_FAILED");
    expect(err.errors?.[0]).to.include({ path: "transform", jsonataCode: "D3030", line: 1 });
  });

  it("stops a backtracking regex at TRANSFORM_TIMEOUT_MS, names the limit, and replaces the process", async () => {
    const p = pool({ timeoutMs: 800 });
    await p.evaluate(compile("1"), { queryOutput: {}, params: {} });
    const before = p.processIds();
    const err = await problemOf(p.evaluate(compile(HOSTILE.backtracking), { queryOutput: {}, params: BACKTRACKING_INPUT }));
    expect(err.code).to.equal("TRANSFORM_FAILED");
    expect(err.status).to.equal(422);
    expect(err.message).to.equal("the transform ran longer than 800 ms and was stopped (TRANSFORM_TIMEOUT_MS)");
    expect(err.errors?.[0]).to.include({ limit: "TRANSFORM_TIMEOUT_MS" });
    expect(await p.evaluate(compile("1 + 1"), { queryOutput: {}, params: {} })).to.equal(2);
    const after = p.processIds();
    expect(after).to.have.length(2);
    expect(after.filter((id) => !before.includes(id))).to.have.length(1);
    expect(p.stats().stopped).to.deep.equal({ TRANSFORM_TIMEOUT_MS: 1 });
  });

  it("stops $distinct over 300,000 numbers at the time limit", async () => {
    const err = await problemOf(pool({ timeoutMs: 800 }).evaluate(compile(HOSTILE.distinct), { queryOutput: {}, params: {} }));
    expect(err.errors?.[0]).to.include({ limit: "TRANSFORM_TIMEOUT_MS" });
  });

  it("ends unbounded $eval recursion at the memory ceiling (TRANSFORM_MEMORY_MB), the service unharmed", async () => {
    const p = pool({ memoryMb: 64, timeoutMs: 60_000 });
    const err = await problemOf(p.evaluate(compile(HOSTILE.evalRecursion), { queryOutput: {}, params: {} }));
    expect(err.code).to.equal("TRANSFORM_FAILED");
    expect(err.message).to.equal("the transform's process ended while it ran, most likely at its memory limit of 64 MiB (TRANSFORM_MEMORY_MB)");
    expect(err.errors?.[0]).to.include({ limit: "TRANSFORM_MEMORY_MB" });
    expect(await p.evaluate(compile('"still " & "here"'), { queryOutput: {}, params: {} })).to.equal("still here");
  });

  it("survives one allocation far beyond the ceiling ($pad of 100 million characters), which would end a worker thread's whole process", async () => {
    const p = pool({ memoryMb: 64, timeoutMs: 60_000 });
    const err = await problemOf(p.evaluate(compile(HOSTILE.hugePad), { queryOutput: {}, params: {} }));
    expect(err.errors?.[0]).to.include({ limit: "TRANSFORM_MEMORY_MB" });
    expect(await p.evaluate(compile("3 * 3"), { queryOutput: {}, params: {} })).to.equal(9);
  });

  it("refuses a result larger than TRANSFORM_MAX_RESULT_BYTES, counted in UTF-8 bytes", async () => {
    const p = pool({ maxResultBytes: 10_000 });
    // 4,998 characters of 2 bytes each plus the quotes: 9,998 bytes, just under.
    expect(await p.evaluate(compile('$pad("", 4998, "é")'), { queryOutput: {}, params: {} })).to.have.length(4998);
    const err = await problemOf(p.evaluate(compile('$pad("", 5000, "é")'), { queryOutput: {}, params: {} }));
    expect(err.message).to.equal("the transform's result is larger than 10000 bytes (TRANSFORM_MAX_RESULT_BYTES)");
    expect(err.errors?.[0]).to.include({ limit: "TRANSFORM_MAX_RESULT_BYTES" });
  });

  it("calls $events() in the service and hands its answer to the transform; a refusal keeps its own error", async () => {
    const p = pool();
    const calls: unknown[] = [];
    const events = async (itemId: unknown, options: unknown) => {
      calls.push([itemId, options]);
      if (itemId === "bad") throw new ProblemError("INVALID_REQUEST", "queryOptions.metric is not a metric");
      return [{ timestamp: "2024-01-01T00:00:00.000Z", value: 4 }];
    };
    const transform = compile('$sum($events("item-1", { "queryOptions": { "metric": "SUM" } }).value) * 2');
    expect(await p.evaluate(transform, { queryOutput: {}, params: {}, events })).to.equal(8);
    expect(calls).to.deep.equal([["item-1", { queryOptions: { metric: "SUM" } }]]);
    const err = await problemOf(p.evaluate(compile('$events("bad", {})'), { queryOutput: {}, params: {}, events }));
    expect(err.code).to.equal("INVALID_REQUEST");
    expect(err.message).to.equal("queryOptions.metric is not a metric");
  });

  it("refuses a $events() call whose source throws at once like one that rejects: the problem, kept as it is, no hang", async () => {
    const p = pool({ timeoutMs: 5000 });
    const events = (itemId: unknown): Promise<unknown> => {
      throw new ProblemError("INVALID_REQUEST", `no item ${String(itemId)}`, { errors: [{ path: "$events.itemId", message: "no item" }] });
    };
    const err = await problemOf(p.evaluate(compile('$events("x", {})'), { queryOutput: {}, params: {}, events }));
    expect(err.code).to.equal("INVALID_REQUEST");
    expect(err.errors).to.deep.equal([{ path: "$events.itemId", message: "no item" }]);
  });

  it("starts the clock when a process takes the task: a task queued behind a stopped one still runs", async () => {
    const p = pool({ processes: 1, timeoutMs: 1000 });
    const hostile = problemOf(p.evaluate(compile(HOSTILE.backtracking), { queryOutput: {}, params: BACKTRACKING_INPUT }));
    const queued = p.evaluate(compile('"after " & ${n}'), { queryOutput: {}, params: { n: 1 } });
    expect((await hostile).errors?.[0]).to.include({ limit: "TRANSFORM_TIMEOUT_MS" });
    expect(await queued).to.equal("after 1");
  });

  it("answers 503 when every process is busy and the queue is full", async () => {
    const p = pool({ processes: 1, maxQueue: 1, timeoutMs: 1500 });
    const busy = [1, 2].map(() => p.evaluate(compile(HOSTILE.backtracking), { queryOutput: {}, params: BACKTRACKING_INPUT }).catch((e: unknown) => e));
    const err = await problemOf(p.evaluate(compile("1"), { queryOutput: {}, params: {} }));
    expect(err.code).to.equal("UNAVAILABLE");
    expect(err.status).to.equal(503);
    await Promise.all(busy);
  });

  it("answers 503 once closed", async () => {
    const p = pool();
    await p.close();
    const err = await problemOf(p.evaluate(compile("1"), { queryOutput: {}, params: {} }));
    expect(err.code).to.equal("UNAVAILABLE");
  });
});
