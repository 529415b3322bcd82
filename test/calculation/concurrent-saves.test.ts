import { expect } from "chai";
import { describeEachBackend } from "../support/backends.js";
import { adminServer } from "../support/server.js";

const RANGE = { period: "Custom range", from: "2024-01-01T10:00:00Z", to: "2024-01-01T11:00:00Z", timeZone: "UTC" };
const QUARTERS = { aggregation: { metric: "sum", interval: "15 minute" } };
const ROUNDS = 6;

describeEachBackend("concurrent saves of calculation definitions", (ctx) => {
  const suite = adminServer(ctx);

  const call = (method: "POST" | "PUT" | "GET", url: string, payload?: unknown) =>
    suite.server.app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${suite.token}`, "x-tenant-id": ctx.tenant } });
  const definition = (externalId: string, calculation: Record<string, unknown>) => ({ externalId, calculationType: "EXPRESSION", data: { calculation } });
  const leaf = (externalId: string) => definition(externalId, { select: 'Site ?s; link:meter Item:?m.', expression: "a", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { a: { type: "TIMESERIES", timeseries: { selectVariable: "{{?m}}" } } } });
  const referring = (externalId: string, to: string) => definition(externalId, { expression: "x + 1", eventDateRange: RANGE, queryOptions: QUARTERS, scope: { x: { type: "EXPRESSION", expression: to } } });

  it("accepts at most two of three concurrent PUTs that together close a reference cycle; the third gets the cycle's 400, round after round", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const names = [0, 1, 2].map((i) => `r${round}-c${i}`);
      for (const name of names) expect((await call("POST", "/calculation-definitions", leaf(name))).statusCode).to.equal(201);
      // c0 → c1, c1 → c2, c2 → c0: any two are a chain, all three a cycle.
      const answers = await Promise.all(names.map((name, i) => call("PUT", `/calculation-definitions/${name}`, referring(name, names[(i + 1) % 3]!))));
      const statuses = answers.map((a) => a.statusCode);
      expect(statuses.filter((s) => s === 200), `round ${round}: ${statuses.join(", ")}`).to.have.length(2);
      const refused = answers.find((a) => a.statusCode !== 200)!;
      expect(refused.statusCode, refused.body).to.equal(400);
      expect(refused.json()).to.include({ code: "INVALID_DEFINITION" });
      expect((refused.json() as { errors: { message: string }[] }).errors.map((e) => e.message).join("\n")).to.match(/^reference cycle: /m);
      // What is stored has no cycle: a calculation of each ends (with its data or its own problem), never with a cycle.
      for (const name of names) {
        const run = await call("POST", `/calculation-definitions/${name}/calculate`, {});
        expect(run.body, `round ${round}: ${name}`).not.to.match(/reference cycle/);
      }
    }
  });
});
