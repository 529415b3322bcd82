import type { Knex } from "knex";
import { expect } from "chai";
import { exampleGraph } from "../../src/demo/seed.js";
import { callerProblem, DATABASE_FAILURE_DETAIL, ProblemError, toProblemError } from "../../src/errors.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { taskOutcome } from "../../src/tasks/outcome.js";
import { compileTransform, evaluateTransform } from "../../src/transform/transform.js";
import { describeEachBackend } from "../support/backends.js";
import { testServer } from "../support/server.js";
import { adminToken, userToken } from "../support/tokens.js";

/** Every agreement with its product: 200 matches, far past a limit of 1 row. */
const QUERY = "Agreement ?a; link:inIndexSet IndexSet:?s; link:hasProduct AgreementProduct:?p.";
const SQL_WORDS = /\b(select|from|where)\b/i;

describeEachBackend("no internals in answers", (ctx) => {
  /** A real error of a failing statement, as the driver throws it (its message quotes the SQL). */
  const failingStatement = () =>
    ctx.db.knex("entities").where({ tenant: ctx.tenant, no_such_column: 1 }).select("id").then(
      () => expect.fail("the statement should fail"),
      (err: unknown) => err as Error,
    );

  it("a query stopped at its limit answers a role-less caller 422 with the fixed sentence; the log keeps the database's message with the request id", async () => {
    // Postgres cancels the statement at QUERY_TIMEOUT_MS (a database error); the embedded database
    // has no time-out and stops at QUERY_MAX_ROWS, found by the service itself (nothing to log).
    const server = await testServer(ctx.db, { QUERY_TIMEOUT_MS: "1", QUERY_MAX_ROWS: "1" });
    try {
      const { entities, links } = exampleGraph(
        ctx.tenant,
        Array.from({ length: 200 }, (_, i) => ({ publicId: `AGR-${i}`, accessPoints: [[`EAN-${i}`, "GAS"]] })) as Parameters<typeof exampleGraph>[1],
      );
      await upsertEntities(ctx.db.knex, ctx.tenant, entities);
      await createLinks(ctx.db.knex, ctx.tenant, links);
      const headers = (token: string) => ({ authorization: `Bearer ${token}`, "x-tenant-id": ctx.tenant });
      const created = await server.app.inject({
        method: "POST",
        url: "/api-definitions",
        headers: headers(await adminToken()),
        payload: { externalId: "all-agreements", active: true, data: { queryParameters: [] }, query: QUERY, transform: "" },
      });
      expect(created.statusCode, created.body).to.equal(201);
      // On PostgreSQL the walk waits on a lock held here, so it always meets its time-out (a walk of
      // this small graph could finish within 1 ms and meet the row limit instead).
      const held = ctx.name === "postgres" ? await holdTableLock(ctx.db.knex, "links") : undefined;
      let res: Awaited<ReturnType<typeof server.app.inject>>;
      try {
        res = await server.app.inject({
          method: "POST",
          url: "/task-backend/tasks/energy/api/request",
          headers: headers(await userToken("no-roles")),
          payload: { apiDefinitionExternalId: "all-agreements", queryParameters: {} },
        });
      } finally {
        await held?.release();
      }
      expect(res.statusCode, res.body).to.equal(422);
      const body = res.json() as { code: string; detail: string };
      expect(body.code).to.equal("TRANSFORM_FAILED");
      expect(body.detail).to.equal(
        ctx.name === "postgres" ? "the graph query ran longer than 1 ms (QUERY_TIMEOUT_MS) and was stopped" : "the graph query matched more than 1 rows (QUERY_MAX_ROWS); narrow it down",
      );
      expect(res.body).not.to.match(SQL_WORDS);
      if (ctx.name === "embedded") return;

      const served = server.logs.entries.find((e) => e.message === "request" && e.path === "/task-backend/tasks/energy/api/request");
      const failed = server.logs.entries.find((e) => e.message === "request failed" && e.requestId === served?.requestId);
      expect(failed, JSON.stringify(server.logs.entries)).not.to.equal(undefined);
      expect(failed?.code).to.equal("TRANSFORM_FAILED");
      const internal = String(failed?.error);
      if (ctx.name === "postgres") expect(internal).to.contain("canceling statement due to statement timeout");
      expect(internal).not.to.equal(body.detail);
      expect(res.body).not.to.contain(internal);
    } finally {
      await server.app.close();
    }
  });

  it("a detail that repeats a failing statement's message is replaced by the fixed sentence, for HTTP and for the engines", async () => {
    const err = await failingStatement();
    expect(err.message).to.match(SQL_WORDS);
    const leaking = new ProblemError("CALCULATION_FAILED", `the calculation failed: ${err.message}`, { cause: err, errors: [{ path: "x", message: err.message }] });
    const body = callerProblem(leaking);
    expect(body).to.deep.equal({ type: "urn:problem:calculation-failed", title: "Calculation failed", status: 422, code: "CALCULATION_FAILED", detail: DATABASE_FAILURE_DETAIL });
    expect(JSON.stringify(body)).not.to.match(SQL_WORDS);
    expect(taskOutcome(leaking)).to.deep.equal({ kind: "bpmnError", code: "CALCULATION_FAILED", message: DATABASE_FAILURE_DETAIL });
    // Not a ProblemError: an internal error, whose sentence never named the statement.
    expect(callerProblem(toProblemError(err)).detail).to.equal("an unexpected error occurred");
  });

  it("a failing $events() statement inside a transform is a fault of the service, not a transform failure quoting it", async () => {
    const err = await failingStatement();
    const { transform } = compileTransform('$events("0b7c4f4e-8a51-4c1e-9d0c-3f1e2d8f7a11", {})', { timeoutMs: 5000, maxDepth: 500, maxSequence: 100_000 });
    const thrown = await evaluateTransform(transform!, { queryOutput: {}, params: {}, events: () => Promise.reject(err) }).then(
      () => expect.fail("the transform should fail"),
      (e: unknown) => e as ProblemError,
    );
    expect(thrown).to.be.instanceOf(ProblemError);
    expect(thrown.code).to.equal("INTERNAL_ERROR");
    expect(thrown.cause).to.equal(err);
    expect(JSON.stringify(callerProblem(thrown))).not.to.match(SQL_WORDS);
  });

  it("keeps a fixed sentence that a database error caused, and any problem without a database cause, as they are", async () => {
    const err = await failingStatement();
    const fixed = new ProblemError("TRANSFORM_FAILED", "the graph query ran longer than 5 ms (QUERY_TIMEOUT_MS) and was stopped", { cause: err });
    expect(callerProblem(fixed).detail).to.equal(fixed.message);
    const own = new ProblemError("INVALID_REQUEST", "select the item from the list where it is", { errors: [{ message: "from where" }] });
    expect(callerProblem(own)).to.deep.equal(own.toProblem());
  });
});

describe("a caller's problem", () => {
  it("leaves out a detail quoting SQL when a database error (known by its severity) caused the problem", () => {
    const cause = Object.assign(new Error('select * from "entities" - column "x" does not exist'), { severity: "ERROR", code: "42703" });
    const problem = new ProblemError("TRANSFORM_FAILED", `failed: ${cause.message}`, { cause });
    expect(callerProblem(problem).detail).to.equal(DATABASE_FAILURE_DETAIL);
  });
});

/** An ACCESS EXCLUSIVE lock on `table`, held by an open transaction until `release()`. */
async function holdTableLock(knex: Knex, table: string): Promise<{ release(): Promise<void> }> {
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  let locked: () => void = () => {};
  const taken = new Promise<void>((resolve) => (locked = resolve));
  const transaction = knex.transaction(async (trx) => {
    await trx.raw(`lock table ?? in access exclusive mode`, [table]);
    locked();
    await gate;
  });
  await Promise.race([taken, transaction]);
  return {
    release: async () => {
      release();
      await transaction;
    },
  };
}
