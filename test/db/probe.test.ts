import type { PGlite } from "@electric-sql/pglite";
import { expect } from "chai";
import { openDatabase, type Database } from "../../src/db/database.js";
import { DatabaseTimeoutError } from "../../src/db/timeouts.js";
import { isPassingFault, toProblemError } from "../../src/errors.js";
import { databaseFaultReason } from "../../src/http/routes/health.js";

describe("the database probe of /health and /ready (embedded database)", function () {
  this.timeout(60_000);
  let db: Database;
  before(async () => {
    db = await openDatabase({ databaseUrl: undefined, dataDir: "memory://", poolSize: 1, timeouts: { probeMs: 200 } });
  });
  after(() => db.close());

  it("answers while a transaction holds knex's one connection: the probe asks PGlite itself, between two statements", async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held = db.knex.transaction(async (trx) => {
      await trx.raw("select 1");
      await gate;
    });
    try {
      await db.ping();
    } finally {
      release();
      await held;
    }
  });

  it("gives up after the probe time-out while PGlite is held, shares one probe among callers, and answers again once it is free", async () => {
    // PGlite's one session, held by a transaction of its own (not knex's): the probe waits for it.
    const pglite = (await db.knex.client.acquireConnection()) as PGlite;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered: () => void = () => {};
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const held = pglite.transaction(async (tx) => {
      await tx.query("select 1");
      entered();
      await gate;
    });
    try {
      await inside;
      const [first, second] = [db.ping(), db.ping()];
      expect(first).to.equal(second);
      const err = await first.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(DatabaseTimeoutError);
      expect((err as Error).message).to.equal("the database did not answer within 200 ms");
      expect(databaseFaultReason(err)).to.equal("it did not answer in time");
    } finally {
      release();
      await held;
      await db.knex.client.releaseConnection(pglite);
    }
    await db.ping();
  });

  it("counts a transaction that has failed as an answer", async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let failed: () => void = () => {};
    const aborted = new Promise<void>((resolve) => (failed = resolve));
    const held = db.knex.transaction(async (trx) => {
      await trx.raw("select 1/0").catch(() => failed());
      await gate;
    });
    try {
      await aborted;
      await db.ping();
    } finally {
      release();
      await held.catch(() => undefined);
    }
  });
});

describe("database time-outs as a caller sees them", () => {
  it("are 503 UNAVAILABLE, retried by the workers as passing faults", () => {
    const dropped = new DatabaseTimeoutError("the database sent no answer within the statement time-out; the connection was dropped");
    const canceled = Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014", severity: "ERROR" });
    for (const err of [dropped, canceled]) {
      const problem = toProblemError(err);
      expect([problem.status, problem.code, problem.message]).to.deep.equal([503, "UNAVAILABLE", "the database did not answer in time; retry later"]);
      expect(isPassingFault(err)).to.equal(true);
    }
    expect(databaseFaultReason(Object.assign(new Error(""), { code: "ECONNREFUSED" }))).to.equal("it refused the connection");
    expect(databaseFaultReason(new Error("Connection terminated unexpectedly"))).to.equal("the connection to it was lost");
  });
});
