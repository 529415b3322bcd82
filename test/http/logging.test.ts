import { expect } from "chai";
import { backend, randomTenant } from "../support/backends.js";
import { testServer } from "../support/server.js";
import { adminToken, TEST_JWT_SECRET } from "../support/tokens.js";

const MESSAGE = Symbol.for("message");

describe("request logging", () => {
  it("writes one JSON line per request with tenant, status and duration, and never the token", async () => {
    const server = await testServer(await backend("embedded"));
    try {
      const token = await adminToken("logged-user");
      const tenant = randomTenant();
      await server.app.inject({ method: "GET", url: "/graph/entities?limit=5", headers: { authorization: `Bearer ${token}`, "x-tenant-id": tenant } });
      await server.app.inject({ method: "GET", url: "/graph/entities", headers: { authorization: "Bearer broken", "x-tenant-id": tenant } });

      const lines = server.logs.entries.filter((e) => e.message === "request");
      expect(lines).to.have.length(2);
      const [ok, refused] = lines.map((e) => JSON.parse(e[MESSAGE as unknown as string] as string) as Record<string, unknown>);
      expect(ok).to.include({ method: "GET", route: "/graph/entities", path: "/graph/entities", status: 200, tenant, userId: "logged-user" });
      expect(ok?.durationMs).to.be.a("number").and.at.least(0);
      expect(refused).to.include({ status: 401, tenant, userId: null });

      const everything = server.logs.entries.map((e) => String(e[MESSAGE as unknown as string])).join("\n");
      expect(everything).not.to.contain(token);
      expect(everything).not.to.contain(token.split(".")[2]);
      expect(everything).not.to.contain("broken");
      expect(everything).not.to.contain(TEST_JWT_SECRET);
    } finally {
      await server.app.close();
    }
  });
});
