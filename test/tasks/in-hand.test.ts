import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { forgetInHand, releaseAllInHand, releaseInHand, removeStaleInHand, takeInHand, type InHandKey } from "../../src/tasks/in-hand.js";
import { describeEachBackend } from "../support/backends.js";
import { inHandRow as rowOf } from "../support/workers.js";

describeEachBackend("tasks in hand (storage)", (ctx) => {
  const keys: string[] = [];
  const key = (): InHandKey => {
    keys.push(randomUUID());
    return { engine: "camunda7", taskKey: keys.at(-1)! };
  };
  after(() => ctx.db.knex("tasks_in_hand").whereIn("task_key", keys.splice(0)).del());

  it("records a first take as attempt 1 of its worker", async () => {
    const task = key();
    const row = await takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w1" });
    expect({ workerId: row.workerId, attempts: row.attempts }).to.deep.equal({ workerId: "w1", attempts: 1 });
    expect(row.startedAt).to.be.instanceOf(Date);
    expect(await rowOf(ctx.db.knex, task)).to.deep.equal({ worker_id: "w1", topic: "api-request", attempts: 1 });
  });

  it("keeps the worker that had the task in hand when another takes it, counting the attempts on", async () => {
    const task = key();
    const first = await takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w1" });
    const second = await takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w2" });
    const third = await takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w3" });
    expect([second.workerId, second.attempts, third.workerId, third.attempts]).to.deep.equal(["w1", 2, "w1", 3]);
    expect(third.startedAt.getTime()).to.equal(first.startedAt.getTime());
  });

  it("renews the row when the same worker takes the task again", async () => {
    const task = key();
    await takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w1" });
    const again = await takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w1" });
    expect([again.workerId, again.attempts]).to.deep.equal(["w1", 2]);
  });

  it("keeps one engine's task apart from the other engine's task of the same key", async () => {
    const { taskKey } = key();
    await takeInHand(ctx.db.knex, { engine: "camunda7", taskKey, topic: "api-request", workerId: "w1" });
    const zeebe = await takeInHand(ctx.db.knex, { engine: "zeebe", taskKey, topic: "api-request", workerId: "w2" });
    expect([zeebe.workerId, zeebe.attempts]).to.deep.equal(["w2", 1]);
  });

  it("releases a row only for the worker that holds it; forgets it for anyone", async () => {
    const task = key();
    await takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w1" });
    expect(await releaseInHand(ctx.db.knex, { ...task, workerId: "w2" })).to.equal(false);
    expect(await releaseInHand(ctx.db.knex, { ...task, workerId: "w1" })).to.equal(true);
    expect(await rowOf(ctx.db.knex, task)).to.equal(undefined);
    await takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w1" });
    expect(await forgetInHand(ctx.db.knex, task)).to.equal(true);
    expect(await rowOf(ctx.db.knex, task)).to.equal(undefined);
  });

  it("releases, given its take, only the row of that take: never a later take's of the same task by the same worker", async () => {
    const task = key();
    const first = await takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w1" });
    // Taken again by the same worker before the first take's release ran: the row renewed.
    const renewed = await takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w1" });
    expect(await releaseInHand(ctx.db.knex, { ...task, workerId: "w1", take: first.take })).to.equal(false);
    expect((await rowOf(ctx.db.knex, task))?.attempts).to.equal(2);
    // The row dropped and written afresh (attempt 1 again, as the first take was): only its started_at tells them apart.
    expect(await forgetInHand(ctx.db.knex, task)).to.equal(true);
    const afresh = await takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w1" });
    expect([first.take.attempts, afresh.take.attempts]).to.deep.equal([1, 1]);
    expect(await releaseInHand(ctx.db.knex, { ...task, workerId: "w1", take: first.take })).to.equal(false);
    expect(await releaseInHand(ctx.db.knex, { ...task, workerId: "w1", take: renewed.take })).to.equal(false);
    expect((await rowOf(ctx.db.knex, task))?.worker_id).to.equal("w1");
    expect(await releaseInHand(ctx.db.knex, { ...task, workerId: "w1", take: afresh.take })).to.equal(true);
    expect(await rowOf(ctx.db.knex, task)).to.equal(undefined);
  });

  it("releases every row of the given workers and no other", async () => {
    const [a, b, c] = [key(), key(), key()];
    const [w1, w2, w3] = [randomUUID(), randomUUID(), randomUUID()];
    await takeInHand(ctx.db.knex, { ...a, topic: "t", workerId: w1 });
    await takeInHand(ctx.db.knex, { ...b, topic: "t", workerId: w2 });
    await takeInHand(ctx.db.knex, { ...c, topic: "t", workerId: w3 });
    expect(await releaseAllInHand(ctx.db.knex, [w1, w2])).to.equal(2);
    expect(await releaseAllInHand(ctx.db.knex, [])).to.equal(0);
    expect((await rowOf(ctx.db.knex, c))?.worker_id).to.equal(w3);
  });

  it("removes the rows taken before the horizon only", async () => {
    const [old, fresh] = [key(), key()];
    await takeInHand(ctx.db.knex, { ...old, topic: "t", workerId: "w1" });
    await takeInHand(ctx.db.knex, { ...fresh, topic: "t", workerId: "w1" });
    await ctx.db.knex("tasks_in_hand").where({ engine: old.engine, task_key: old.taskKey }).update({ started_at: "2000-01-01T00:00:00Z" });
    expect(await removeStaleInHand(ctx.db.knex, new Date("2000-01-02T00:00:00Z"))).to.equal(1);
    expect(await rowOf(ctx.db.knex, old)).to.equal(undefined);
    expect(await rowOf(ctx.db.knex, fresh)).to.not.equal(undefined);
  });
  /** The statements on tasks_in_hand that `work` makes. */
  const statementsOf = async (work: () => Promise<unknown>): Promise<string[]> => {
    const seen: string[] = [];
    const listen = (query: { sql: string }) => {
      if (query.sql.includes("tasks_in_hand")) seen.push(query.sql);
    };
    ctx.db.knex.on("query", listen);
    try {
      await work();
    } finally {
      ctx.db.knex.removeListener("query", listen);
    }
    return seen;
  };

  it("writes the takes of one turn (the tasks of one fetch) in one statement, and their releases in one, each answered for itself", async () => {
    const tasks = Array.from({ length: 10 }, () => key());
    const other = tasks[3]!;
    await takeInHand(ctx.db.knex, { ...other, topic: "api-request", workerId: "w-ended" });
    let rows: Awaited<ReturnType<typeof takeInHand>>[] = [];
    const takes = await statementsOf(async () => {
      rows = await Promise.all(tasks.map((task) => takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w1" })));
    });
    expect(takes).to.have.length(1);
    expect(rows.map((row) => [row.workerId, row.attempts])).to.deep.equal(tasks.map((task) => (task === other ? ["w-ended", 2] : ["w1", 1])));
    let released: boolean[] = [];
    const releases = await statementsOf(async () => {
      released = await Promise.all(tasks.map((task) => releaseInHand(ctx.db.knex, { ...task, workerId: "w1" })));
    });
    expect(releases).to.have.length(1);
    expect(released).to.deep.equal(tasks.map((task) => task !== other));
    expect((await rowOf(ctx.db.knex, other))?.worker_id).to.equal("w-ended");
    for (const task of tasks.filter((t) => t !== other)) expect(await rowOf(ctx.db.knex, task)).to.equal(undefined);
  });

  it("takes the same task twice in one turn one after the other, as separate statements would", async () => {
    const task = key();
    const [first, second] = await Promise.all([
      takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w1" }),
      takeInHand(ctx.db.knex, { ...task, topic: "api-request", workerId: "w2" }),
    ]);
    expect([first.workerId, first.attempts, second.workerId, second.attempts]).to.deep.equal(["w1", 1, "w1", 2]);
    const [gone, again] = await Promise.all([releaseInHand(ctx.db.knex, { ...task, workerId: "w1" }), releaseInHand(ctx.db.knex, { ...task, workerId: "w1" })]);
    expect([gone, again]).to.deep.equal([true, false]);
  });

  it("fails only the take whose row the table refuses, the others of its turn taken as if alone", async () => {
    const [a, b, c] = [key(), key(), key()];
    // An engine the table refuses (its check constraint) fails the statement of the turn; each row is then written alone.
    const bad = { ...b, engine: "camunda9" as never };
    const outcomes = await Promise.allSettled([
      takeInHand(ctx.db.knex, { ...a, topic: "t", workerId: "w1" }),
      takeInHand(ctx.db.knex, { ...bad, topic: "t", workerId: "w1" }),
      takeInHand(ctx.db.knex, { ...c, topic: "t", workerId: "w1" }),
    ]);
    expect(outcomes.map((o) => o.status)).to.deep.equal(["fulfilled", "rejected", "fulfilled"]);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).to.include("tasks_in_hand_engine");
    expect((await rowOf(ctx.db.knex, a))?.worker_id).to.equal("w1");
    expect((await rowOf(ctx.db.knex, c))?.worker_id).to.equal("w1");
    const again = await takeInHand(ctx.db.knex, { ...a, topic: "t", workerId: "w1" });
    expect([again.workerId, again.attempts]).to.deep.equal(["w1", 2]);
  });
});
