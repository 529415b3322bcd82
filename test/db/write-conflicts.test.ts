import { expect } from "chai";
import { retryWriteConflicts, writeTransaction } from "../../src/db/write-retry.js";
import { ProblemError, toProblemError, WRITE_CONFLICT_DETAIL } from "../../src/errors.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { ingestEvents } from "../../src/timeseries/ingest.js";
import { describeEachBackend } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken } from "../support/tokens.js";

/** An error as the PostgreSQL driver throws it. */
function sqlError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** A random permutation (Fisher–Yates). */
function shuffled<T>(items: T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

describe("retrying write conflicts", () => {
  const noWait = { sleep: async () => undefined, random: () => 0.5 };

  for (const [code, name] of [
    ["40P01", "a deadlock"],
    ["40001", "a serialization failure"],
  ] as const) {
    it(`re-runs the whole work after ${name} (${code}) and answers its result`, async () => {
      let runs = 0;
      const result = await retryWriteConflicts(async () => {
        runs++;
        if (runs < 3) throw sqlError(code, "deadlock detected");
        return "stored";
      }, noWait);
      expect(result).to.equal("stored");
      expect(runs).to.equal(3);
    });
  }

  it("stops after the given number of runs and the conflict becomes 503 UNAVAILABLE with a true message", async () => {
    let runs = 0;
    const delays: number[] = [];
    const failure = await retryWriteConflicts(
      async () => {
        runs++;
        throw sqlError("40P01", "insert into entities ... - deadlock detected");
      },
      { attempts: 4, baseDelayMs: 10, random: () => 0.5, sleep: async (ms) => void delays.push(ms) },
    ).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(runs).to.equal(4);
    // Doubling back-off, jittered by random() (0.5 → factor 1).
    expect(delays).to.deep.equal([10, 20, 40]);
    const problem = toProblemError(failure);
    expect(problem.status).to.equal(503);
    expect(problem.code).to.equal("UNAVAILABLE");
    expect(problem.message).to.equal(WRITE_CONFLICT_DETAIL);
    expect(problem.toProblem().detail).to.equal("the database detected a conflict between concurrent writes; retry");
    expect(problem.message).not.to.match(/not reachable/);
  });

  it("keeps the back-off jittered between half and one and a half times the step", async () => {
    const delays: number[] = [];
    let random = 0;
    await retryWriteConflicts(
      async () => {
        throw sqlError("40001", "could not serialize access");
      },
      { attempts: 3, baseDelayMs: 100, random: () => [0, 0.999][random++]!, sleep: async (ms) => void delays.push(ms) },
    ).catch(() => undefined);
    expect(delays[0]).to.equal(50);
    expect(delays[1]).to.be.closeTo(299.8, 0.01);
  });

  it("does not retry any other error", async () => {
    for (const err of [sqlError("23505", "duplicate key"), sqlError("57014", "canceling statement"), sqlError("ECONNREFUSED", "refused"), new Error("bug")]) {
      let runs = 0;
      const thrown = await retryWriteConflicts(async () => {
        runs++;
        throw err;
      }, noWait).catch((e: unknown) => e);
      expect(thrown).to.equal(err);
      expect(runs).to.equal(1);
    }
  });

  it("still calls an unreachable database 'not reachable'", () => {
    expect(toProblemError(sqlError("57P01", "terminating connection")).message).to.match(/not reachable/);
  });
});

describeEachBackend("concurrent bulk writes", (ctx) => {
  let server: TestServer;
  let token: string;
  before(async () => {
    server = await testServer(ctx.db);
    token = await adminToken();
  });
  after(() => server.app.close());

  const post = (url: string, payload: object | string, contentType = "application/json") =>
    server.app.inject({
      method: "POST",
      url,
      payload,
      headers: { authorization: `Bearer ${token}`, "x-tenant-id": ctx.tenant, "content-type": contentType },
    });

  it("20 concurrent upserts of the same 50 entities in random orders all succeed and leave exactly those 50 rows", async () => {
    const entities = Array.from({ length: 50 }, (_, i) => ({ type: i % 2 === 0 ? "Meter" : "Site", key: `K-${i}`, attributes: { n: i } }));
    const answers = await Promise.all(Array.from({ length: 20 }, () => post("/graph/entities", { entities: shuffled(entities) })));
    expect(answers.map((a) => a.statusCode)).to.deep.equal(Array(20).fill(200), answers.find((a) => a.statusCode !== 200)?.body);
    // Every answer names the same id for the same entity, in the order it was asked.
    const ids = new Map<string, string>();
    for (const answer of answers) {
      for (const e of (answer.json() as { entities: { id: string; type: string; key: string }[] }).entities) {
        const key = `${e.type}:${e.key}`;
        expect(ids.get(key) ?? e.id).to.equal(e.id);
        ids.set(key, e.id);
      }
    }
    const rows = (await ctx.db.knex("entities").where({ tenant: ctx.tenant }).select("id", "type", "key", "attributes")) as {
      id: string;
      type: string;
      key: string;
      attributes: Record<string, unknown>;
    }[];
    expect(rows.map((r) => ({ type: r.type, key: r.key, attributes: r.attributes })).sort((a, b) => (a.attributes.n as number) - (b.attributes.n as number))).to.deep.equal(
      entities,
    );
    expect(new Map(rows.map((r) => [`${r.type}:${r.key}`, r.id]))).to.deep.equal(ids);
  });

  it("answers entities in the order of the request, not the order they were written in", async () => {
    const entities = ["z", "a", "m"].map((key) => ({ type: "Site", key }));
    const answer = await post("/graph/entities", { entities });
    expect((answer.json() as { entities: { key: string }[] }).entities.map((e) => e.key)).to.deep.equal(["z", "a", "m"]);
  });

  it("20 concurrent link requests of the same links in random orders all succeed and store each link once", async () => {
    const entities = Array.from({ length: 20 }, (_, i) => ({ type: "Node", key: `N-${i}` }));
    expect((await post("/graph/entities", { entities })).statusCode).to.equal(200);
    const links = entities.flatMap((from, i) => [1, 2].map((step) => ({ from, relation: "next", to: entities[(i + step) % entities.length]! })));
    const answers = await Promise.all(Array.from({ length: 20 }, () => post("/graph/links", { links: shuffled(links) })));
    expect(answers.map((a) => a.statusCode)).to.deep.equal(Array(20).fill(200), answers.find((a) => a.statusCode !== 200)?.body);
    const stored = await ctx.db.knex("links").where({ tenant: ctx.tenant }).count<{ count: string | number }[]>({ count: "*" });
    expect(Number(stored[0]?.count)).to.equal(40);
  });

  it("20 concurrent ingests of the same 60 keys in random orders (JSON and NDJSON) all succeed; nothing is duplicated or lost", async () => {
    const items = (
      (await post("/graph/entities", { entities: Array.from({ length: 3 }, (_, i) => ({ type: "Item", key: `I-${i}`, attributes: { itemAction: "INGEST" } })) })).json() as {
        entities: { id: string }[];
      }
    ).entities.map((e) => e.id);
    const events = items.flatMap((itemId, i) =>
      Array.from({ length: 20 }, (_, k) => ({ itemId, timestamp: new Date(Date.UTC(2026, 0, 1, k)).toISOString(), sourceId: k % 2 === 0 ? "a" : "b", value: i * 100 + k })),
    );
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        n % 2 === 0
          ? post("/events", { events: shuffled(events) })
          : post("/events", shuffled(events).map((e) => JSON.stringify(e)).join("\n"), "application/x-ndjson"),
      ),
    );
    expect(answers.map((a) => a.statusCode)).to.deep.equal(Array(20).fill(200), answers.find((a) => a.statusCode !== 200)?.body);
    expect(answers.map((a) => (a.json() as { stored: number }).stored)).to.deep.equal(Array(20).fill(60));
    const rows = (await ctx.db.knex("events").where({ tenant: ctx.tenant }).select("item_id", "ts", "source_id", "value")) as {
      item_id: string;
      ts: Date;
      source_id: string;
      value: number;
    }[];
    const stored = rows
      .map((r) => ({ itemId: r.item_id, timestamp: new Date(r.ts).toISOString(), sourceId: r.source_id, value: Number(r.value) }))
      .sort((a, b) => a.value - b.value);
    expect(stored).to.deep.equal(events);
  });

  // The embedded database has one connection: two transactions cannot hold locks at once, so a
  // real deadlock exists on PostgreSQL only.
  if (ctx.name === "postgres") {
    it("re-runs the whole transaction a real deadlock broke, and both writers succeed", async function () {
      await upsertEntities(ctx.db.knex, ctx.tenant, [
        { type: "Site", key: "A" },
        { type: "Site", key: "B" },
      ]);
      let arrived = 0;
      let release!: () => void;
      const bothHoldOneRow = new Promise<void>((resolve) => (release = resolve));
      const runs = [0, 0];
      const writer = (n: 0 | 1, first: string, second: string) =>
        writeTransaction(
          ctx.db.knex,
          async (trx) => {
            runs[n]!++;
            const set = (key: string) => trx("entities").where({ tenant: ctx.tenant, type: "Site", key }).update({ attributes: JSON.stringify({ by: n }) });
            await set(first);
            if (runs[n] === 1) {
              if (++arrived === 2) release();
              await bothHoldOneRow;
            }
            await set(second);
          },
          { baseDelayMs: 1 },
        );
      const committed: number[] = [];
      await Promise.all([writer(0, "A", "B").then(() => committed.push(0)), writer(1, "B", "A").then(() => committed.push(1))]);
      // PostgreSQL rolled one of them back (at least once: the re-run can take a row the waiting
      // writer was about to get, and meet it again); it ran again, and one committed after the other.
      expect(runs[0]! + runs[1]!).to.be.at.least(3);
      const rows = (await ctx.db.knex("entities").where({ tenant: ctx.tenant }).orderBy("key").select("attributes")) as { attributes: { by: number } }[];
      const last = committed[1]!;
      expect(rows.map((r) => r.attributes.by)).to.deep.equal([last, last]);
    });

    it("an appending upload that meets the same event written concurrently replaces it instead of failing", async () => {
      const [item] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "raced", attributes: { itemAction: "INGEST" } }]);
      const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString();
      const other = await ctx.db.knex.transaction();
      try {
        // Another writer holds an uncommitted event at minute 1: the upload, seeing no stored event, appends plainly.
        await other("events").insert({ tenant: ctx.tenant, item_id: item!.id, ts: at(1), source_id: "", value: -1 });
        const upload = ingestEvents(ctx.db.knex, ctx.tenant, [0, 1, 2].map((m) => ({ itemId: item!.id, timestamp: at(m), value: m })));
        // The upload waits on the other writer's key until it commits, then meets a unique violation.
        for (let i = 0; i < 100; i++) {
          const { rows } = (await ctx.db.knex.raw("select count(*)::int as n from pg_locks where not granted and locktype = 'transactionid'")) as { rows: { n: number }[] };
          if (rows[0]!.n > 0) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        await other.commit();
        expect(await upload).to.deep.equal({ stored: 3, streamed: 0, rejected: [], rejectedTotal: 0 });
      } finally {
        if (!other.isCompleted()) await other.rollback();
      }
      const rows = (await ctx.db.knex("events").where({ tenant: ctx.tenant, item_id: item!.id }).orderBy("ts").select("value")) as { value: number }[];
      expect(rows.map((r) => r.value)).to.deep.equal([0, 1, 2]);
    });
    it("an appending upload of several batches COPYed into events that meets a concurrent event mid-batch replaces it, every batch stored once", async () => {
      const [item] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "raced-copy", attributes: { itemAction: "INGEST" } }]);
      const count = 12_000; // three batches, each COPYed straight into events when it appends
      const at = (k: number) => new Date(Date.UTC(2026, 0, 1) + k * 1000).toISOString();
      const other = await ctx.db.knex.transaction();
      try {
        // Early in the second batch: that COPY waits on the key, its first rows sent, then meets a unique violation mid-stream.
        await other("events").insert({ tenant: ctx.tenant, item_id: item!.id, ts: at(5_010), source_id: "", value: -1 });
        const upload = ingestEvents(ctx.db.knex, ctx.tenant, Array.from({ length: count }, (_, k) => ({ itemId: item!.id, timestamp: at(k), value: k })));
        for (let i = 0; i < 200; i++) {
          const { rows } = (await ctx.db.knex.raw("select count(*)::int as n from pg_locks where not granted and locktype = 'transactionid'")) as { rows: { n: number }[] };
          if (rows[0]!.n > 0) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        await other.commit();
        expect(await upload).to.deep.equal({ stored: count, streamed: 0, rejected: [], rejectedTotal: 0 });
      } finally {
        if (!other.isCompleted()) await other.rollback();
      }
      const [summary] = (await ctx.db.knex("events").where({ tenant: ctx.tenant, item_id: item!.id }).select(ctx.db.knex.raw("count(*)::int as n, sum(value)::float8 as total"))) as {
        n: number;
        total: number;
      }[];
      expect(summary).to.deep.equal({ n: count, total: (count * (count - 1)) / 2 });
    });
  }

  it("re-sending an upload of several batches, some events changed, gives the same rows as sending the changed one once", async () => {
    const [item] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "resent", attributes: { itemAction: "INGEST" } }]);
    const count = 11_000;
    const at = (k: number) => new Date(Date.UTC(2026, 0, 1) + k * 1000).toISOString();
    const upload = (value: (k: number) => number) => Array.from({ length: count }, (_, k) => ({ itemId: item!.id, timestamp: at(k), value: value(k), sourceId: "s" }));
    expect(await ingestEvents(ctx.db.knex, ctx.tenant, upload((k) => k))).to.deep.include({ stored: count });
    // The same events again, every third changed, plus a duplicate key inside a batch (the later row wins).
    const again = upload((k) => (k % 3 === 0 ? k + 0.5 : k));
    again.splice(8, 0, { itemId: item!.id, timestamp: at(7), value: 777, sourceId: "s" });
    expect(await ingestEvents(ctx.db.knex, ctx.tenant, again)).to.deep.include({ stored: count });
    const rows = (await ctx.db.knex("events").where({ tenant: ctx.tenant, item_id: item!.id }).orderBy("ts").select("value")) as { value: number }[];
    expect(rows.length).to.equal(count);
    expect(rows.map((r) => r.value)).to.deep.equal(Array.from({ length: count }, (_, k) => (k === 7 ? 777 : k % 3 === 0 ? k + 0.5 : k)));
  });

  it("lists the first 100 bad rows by position when more are bad, refused items and unreadable rows mixed, and stores nothing", async () => {
    const [item] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "many-bad", attributes: { itemAction: "INGEST" } }]);
    const unknownItem = "00000000-0000-4000-8000-000000000001";
    const rows = Array.from({ length: 12_000 }, (_, k) => ({
      // Refusals are known only when a batch is written, after the next batch's bad timestamps were found.
      itemId: k % 40 === 0 ? unknownItem : item!.id,
      timestamp: k % 37 === 0 ? "not a time" : new Date(Date.UTC(2026, 0, 1) + k * 1000).toISOString(),
      value: k,
    }));
    const err = await ingestEvents(ctx.db.knex, ctx.tenant, rows).then(
      () => undefined,
      (e: unknown) => e,
    );
    const bad = Array.from({ length: 12_000 }, (_, k) => k).filter((k) => k % 40 === 0 || k % 37 === 0);
    expect(err).to.be.instanceOf(ProblemError);
    const problem = err as ProblemError;
    expect(problem.message).to.equal(`${bad.length} of 12000 events are not valid (the first 100 listed); nothing was stored`);
    expect(problem.options.errors!.map((e) => e.row)).to.deep.equal(bad.slice(0, 100));
    const { rows: stored } = (await ctx.db.knex.raw("select count(*)::int as n from events where tenant = ?", [ctx.tenant])) as { rows: { n: number }[] };
    expect(stored[0]!.n).to.equal(0);
  });

  it("stores a streamed upload longer than one batch whole, reading it once", async () => {
    const [item] = await upsertEntities(ctx.db.knex, ctx.tenant, [{ type: "Item", key: "long", attributes: { itemAction: "INGEST" } }]);
    const count = 12_000;
    async function* rows(): AsyncGenerator<unknown> {
      for (let k = count - 1; k >= 0; k--) yield { itemId: item!.id, timestamp: new Date(Date.UTC(2026, 0, 1) + k * 60_000).toISOString(), value: k };
    }
    const result = await ingestEvents(ctx.db.knex, ctx.tenant, rows());
    expect(result).to.deep.equal({ stored: count, streamed: 0, rejected: [], rejectedTotal: 0 });
    const [summary] = (await ctx.db.knex("events").where({ tenant: ctx.tenant }).select(ctx.db.knex.raw("count(*)::int as n, sum(value)::float8 as total"))) as { n: number; total: number }[];
    expect(summary).to.deep.equal({ n: count, total: (count * (count - 1)) / 2 });
  });
});
