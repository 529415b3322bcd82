import { expect } from "chai";
import { loadConfig } from "../../src/config.js";
import { ApiDefinitions } from "../../src/definitions/service.js";
import { createServices, type Services } from "../../src/services.js";
import { DEFAULT_TRANSFORM_LIMITS } from "../../src/transform/transform.js";
import { describeEachBackend } from "../support/backends.js";
import { TEST_JWT_SECRET } from "../support/tokens.js";

describeEachBackend("API definitions kept between requests", (ctx) => {
  let services: Services;
  beforeEach(() => {
    services = createServices(loadConfig({ JWT_SECRET: TEST_JWT_SECRET }), ctx.db);
  });
  afterEach(() => services.transforms.close());

  it("keeps as many definitions as its cache size, least recently used dropped first; a dropped one is read again", async () => {
    const definitions = new ApiDefinitions(
      ctx.db.knex,
      ctx.db.graph,
      services.timeSeries,
      services.transforms,
      { query: { timeoutMs: 5000, maxRows: 100 }, transform: { ...DEFAULT_TRANSFORM_LIMITS, timeoutMs: 5000 } },
      2,
    );
    for (const externalId of ["a", "b", "c"]) {
      await definitions.create(ctx.tenant, { externalId, active: true, data: {}, query: `Site ?${externalId}; entity:key "S1".` });
    }
    // Every read of a stored definition (a request for one not kept, or kept but changed) is a select on api_definitions.
    const reads: string[] = [];
    const onQuery = (query: { sql: string; bindings?: unknown[] }) => {
      if (/from "api_definitions"/.test(query.sql) && query.bindings?.includes(ctx.tenant)) reads.push(String(query.bindings.find((b) => b !== ctx.tenant)));
    };
    ctx.db.knex.on("query", onQuery);
    try {
      const caller = { tenant: ctx.tenant, userId: undefined };
      for (const externalId of ["a", "b", "a", "c", "a", "b"]) {
        expect(await definitions.request(caller, externalId, {})).to.deep.equal({ [externalId]: [] });
      }
    } finally {
      ctx.db.knex.off("query", onQuery);
    }
    // a and b are read and kept; a is used again; c drops b (used before a); a is still kept; b is read again.
    expect(reads).to.deep.equal(["a", "b", "c", "b"]);
  });
});
