import { expect } from "chai";
import { EXAMPLE_DEFINITION, exampleGraph } from "../../src/demo/seed.js";
import { upsertEntities } from "../../src/graph/entities.js";
import { createLinks } from "../../src/graph/links.js";
import { describeEachBackend } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { adminToken, userToken } from "../support/tokens.js";

/** The examples: each froze or killed the service when transforms ran on its event loop. */
const HOSTILE: { name: string; transform: string; parameters?: Record<string, string>; limit: string }[] = [
  { name: "eval-recursion", transform: '($f := function($n){ $eval("$f(1)") }; $f(0))', limit: "TRANSFORM_MEMORY_MB" },
  { name: "backtracking", transform: "$match(${code}, /(a+)+$/)", parameters: { code: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!" }, limit: "TRANSFORM_TIMEOUT_MS" },
  { name: "distinct", transform: "$count($distinct([1..300000]))", limit: "TRANSFORM_TIMEOUT_MS" },
];

describeEachBackend("hostile transforms over REST", (ctx) => {
  let server: TestServer;
  let base: string;
  let admin: string;
  let user: string;
  before(async () => {
    // Two processes, both taken by hostile transforms at once; the limits are those of production but shorter.
    server = await testServer(ctx.db, { TRANSFORM_PROCESSES: "2", TRANSFORM_TIMEOUT_MS: "4000", TRANSFORM_MEMORY_MB: "96" });
    base = await server.app.listen({ port: 0, host: "127.0.0.1" });
    admin = await adminToken();
    user = await userToken("nobody-special");
  });
  after(() => server.app.close());

  const send = (method: string, path: string, token: string | undefined, body?: unknown) =>
    fetch(`${base}${path}`, {
      method,
      headers: { ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}), "x-tenant-id": ctx.tenant, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  const request = (externalId: string, queryParameters: Record<string, string> = {}) =>
    send("POST", "/task-backend/tasks/energy/api/request", user, { apiDefinitionExternalId: externalId, queryParameters });

  it("keeps /health and ordinary requests answering while every transform process runs a hostile transform; each hostile one gets 422 naming its limit", async () => {
    const { entities, links } = exampleGraph(ctx.tenant, [{ publicId: "AGR-1", accessPoints: [["EAN-1", "GAS"]] }]);
    await upsertEntities(ctx.db.knex, ctx.tenant, entities);
    await createLinks(ctx.db.knex, ctx.tenant, links);
    const query = 'IndexSet ?s; attribute:name "Agreements".';
    for (const h of [...HOSTILE, { name: "plain", transform: "" }, { name: "shaped", transform: '{ "n": $count(s) }' }]) {
      const parameters = "parameters" in h && h.parameters !== undefined ? Object.keys(h.parameters).map((name) => ({ name, type: "string" })) : [];
      const created = await send("POST", "/api-definitions", admin, { externalId: h.name, active: true, data: { queryParameters: parameters }, query, transform: h.transform });
      expect(created.status, await created.text()).to.equal(201);
    }
    expect((await send("POST", "/api-definitions", admin, EXAMPLE_DEFINITION)).status).to.equal(201);

    // Hostile requests by a token without any role: two at once take both processes, the third waits.
    const finished: string[] = [];
    const hostile = HOSTILE.map((h) =>
      request(h.name, h.parameters).then(async (res) => {
        finished.push(h.name);
        return { name: h.name, status: res.status, body: (await res.json()) as { code: string; detail: string; errors?: { limit?: string }[] } };
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const health = await send("GET", "/health", undefined);
    expect(health.status).to.equal(200);
    const plain = await request("plain");
    expect(plain.status).to.equal(200);
    expect(finished, "the hostile requests were still running").to.deep.equal([]);

    const answers = await Promise.all(hostile);
    for (const answer of answers) {
      const expected = HOSTILE.find((h) => h.name === answer.name)!;
      expect(answer.status, JSON.stringify(answer.body)).to.equal(422);
      expect(answer.body.code).to.equal("TRANSFORM_FAILED");
      // $eval recursion may meet the time limit before the memory ceiling on a slow machine: either stops it.
      const limits = expected.name === "eval-recursion" ? ["TRANSFORM_MEMORY_MB", "TRANSFORM_TIMEOUT_MS"] : [expected.limit];
      expect(limits).to.include(answer.body.errors?.[0]?.limit);
      expect(answer.body.detail).to.contain(answer.body.errors![0]!.limit);
    }
    // The processes were replaced: transforms run again at once.
    const shaped = await request("shaped");
    expect(shaped.status).to.equal(200);
    expect(await shaped.json()).to.deep.equal({ n: 1 });
    const example = await request(EXAMPLE_DEFINITION.externalId, { publicId: "AGR-1" });
    expect(example.status).to.equal(200);
    expect(((await example.json()) as { accessPoints: { externalId: string }[] }).accessPoints.map((a) => a.externalId)).to.deep.equal(["EAN-1"]);
    // Operators see the stops by limit in /metrics.
    const metrics = await (await send("GET", "/metrics", undefined)).text();
    const stoppedByTime = Number(/^transform_stopped_total\{limit="TRANSFORM_TIMEOUT_MS"\} (\d+)$/m.exec(metrics)?.[1]);
    expect(stoppedByTime).to.be.at.least(2);
    expect(metrics).to.match(/^transform_processes 2$/m);
  });

  it("reports a limit in the console's test run as a problem beside the query output, not as an error", async () => {
    const res = await send("POST", "/api-definitions/test", admin, {
      definition: { externalId: "t", active: true, query: "IndexSet ?s.", transform: '$pad("", 100000000)' },
      queryParameters: {},
    });
    expect(res.status).to.equal(200);
    const body = (await res.json()) as { result: unknown; problems: { limit?: string; message: string }[] };
    expect(body.result).to.equal(null);
    expect(body.problems).to.have.length(1);
    expect(["TRANSFORM_MEMORY_MB", "TRANSFORM_MAX_RESULT_BYTES"]).to.include(body.problems[0]!.limit);
  });
});
