import { expect } from "chai";
import { mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { backendNames, randomTenant, TEST_DATABASE_URL } from "./support/backends.js";
import { freePort, startNode, type RunningProcess } from "./support/process.js";
import { adminToken, TEST_JWT_SECRET } from "./support/tokens.js";

/** Every file under `dir`, by relative path, with its text. */
function files(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kind of readdirSync(dir)) for (const name of readdirSync(join(dir, kind))) out[`${kind}/${name}`] = readFileSync(join(dir, kind, name), "utf8");
  return out;
}

const QUERY = `# the tenant itself
Tenant ?tenant; entity:key \${tenantId}.
`;
const API = [
  { name: "Tenant", externalId: "tenant-of-request", version: "2.1", data: { queryParameters: [{ name: "tenantId", type: "string" }], zeta: 1, alpha: { b: 2, a: 1 } }, query: QUERY, transform: '{\n  "tenant": result(?tenant) { id }\n}' },
  { externalId: "raw", active: false, query: QUERY, data: { queryParameters: [{ name: "tenantId" }] } },
];
const value = (externalId: string, scope: object, expression: string) => ({ externalId, calculationType: "EXPRESSION", name: externalId, data: { calculation: { expression, expressionType: "VALUE", scope } } });
// "a-doubled" names "z-base": an apply in file order meets the reference before its target.
const CALCULATIONS = [value("z-base", { a: { type: "VALUE", value: 21 } }, "a"), value("a-doubled", { x: { type: "EXPRESSION", expression: "z-base" } }, "x * 2")];

for (const backend of backendNames) {
  describe(`npm run definitions against a running service [${backend}]`, function () {
    this.timeout(240_000);
    let server: RunningProcess;
    let dataDir: string;
    let work: string;
    let url: string;
    let token: string;
    const source = randomTenant();
    const target = randomTenant();

    before(async () => {
      dataDir = mkdtempSync(join(tmpdir(), "definitions-server-"));
      work = mkdtempSync(join(tmpdir(), "definitions-"));
      const port = await freePort();
      url = `http://127.0.0.1:${port}`;
      const env: Record<string, string> = { PORT: String(port), DATA_DIR: dataDir, JWT_SECRET: TEST_JWT_SECRET, HOST: "127.0.0.1" };
      if (backend === "postgres") env.DATABASE_URL = TEST_DATABASE_URL;
      server = startNode("dist/src/main.js", env);
      await server.waitFor(/"message":"listening"/, 180_000);
      token = await adminToken();
      for (const body of API) await send("POST", "/api-definitions", source, body);
      for (const body of CALCULATIONS) await send("POST", "/calculation-definitions", source, body);
    });
    after(() => {
      server?.kill();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(work, { recursive: true, force: true });
    });

    async function send(method: string, path: string, tenant: string, body?: unknown): Promise<Response> {
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, "x-tenant-id": tenant };
      if (body !== undefined) headers["content-type"] = "application/json";
      const res = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      if (method === "POST" && path.endsWith("-definitions")) expect(res.status, await res.clone().text()).to.equal(201);
      return res;
    }

    /** Runs the command as CI would, the token in the environment; its exit code and output. */
    async function definitions(args: string[], tenant: string, env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
      const run = startNode("dist/scripts/definitions.js", { DEFINITIONS_URL: url, DEFINITIONS_TOKEN: token, DEFINITIONS_TENANT: tenant, ...env }, args);
      const code = await run.exited;
      return { code, out: run.lines.join("\n") };
    }

    it("exports one YAML file per definition: the user's fields only, keys in a stable order", async () => {
      const dir = join(work, "source");
      const exported = await definitions(["export", dir], source);
      expect(exported.code, exported.out).to.equal(0);
      const all = files(dir);
      expect(Object.keys(all).sort()).to.deep.equal(["api/raw.yaml", "api/tenant-of-request.yaml", "calculation/a-doubled.yaml", "calculation/z-base.yaml"]);
      const api = all["api/tenant-of-request.yaml"]!;
      expect(api).to.not.match(/\b(id|createdAt|updatedAt):/);
      expect(api.split("\n").filter((l) => /^\w/.test(l)).map((l) => l.split(":")[0])).to.deep.equal(["externalId", "name", "version", "active", "data", "query", "transform"]);
      expect(api).to.contain("query: |\n  # the tenant itself\n  Tenant ?tenant; entity:key ${tenantId}.\n");
      expect(api).to.contain("data:\n  alpha:\n    a: 1\n    b: 2\n");
      expect(all["api/raw.yaml"]).to.contain("active: false").and.not.match(/^(name|version):/m);
      expect(all["calculation/z-base.yaml"]!.split("\n").filter((l) => /^\w/.test(l)).map((l) => l.split(":")[0])).to.deep.equal(["externalId", "name", "calculationType", "active", "data"]);
      expect((await definitions(["export", dir], source)).code).to.equal(0);
      expect(files(dir), "a second export writes the same bytes").to.deep.equal(all);
    });

    it("round-trips: diff shows the creates (exit 2), apply on an empty tenant, export gives identical files, a second apply changes nothing", async () => {
      const dir = join(work, "round-trip");
      await definitions(["export", dir], source);
      const pending = await definitions(["diff", dir], target);
      expect(pending.code, pending.out).to.equal(2);
      expect(pending.out).to.contain("+ calculation/a-doubled.yaml (create)").and.contain("+ api/tenant-of-request.yaml (create)").and.contain("4 to create, 0 to update, 0 to delete");
      const applied = await definitions(["apply", dir], target);
      expect(applied.code, applied.out).to.equal(0);
      expect(applied.out).to.contain("applied: 4 created, 0 updated, 0 deleted");
      const again = join(work, "round-trip-again");
      expect((await definitions(["export", again], target)).code).to.equal(0);
      expect(files(again)).to.deep.equal(files(dir));

      const second = await definitions(["apply", dir], target);
      expect(second.code, second.out).to.equal(0);
      expect(second.out).to.contain("no changes");
      expect((await definitions(["diff", dir], target)).code).to.equal(0);
      const history = (await (await send("GET", "/calculation-definitions/a-doubled/history", target)).json()) as { history: { action: string }[] };
      expect(history.history.map((e) => e.action), "the second apply wrote nothing").to.deep.equal(["create"]);
      const calculated = await send("POST", "/calculation-definitions/a-doubled/calculate", target, {});
      expect(await calculated.json()).to.deep.equal({ value: 42 });
    });

    it("shows an update field by field, applies it, and --prune deletes what the folder lacks", async () => {
      const dir = join(work, "edits");
      await definitions(["export", dir], target);
      const file = join(dir, "api/tenant-of-request.yaml");
      writeFileSync(file, readFileSync(file, "utf8").replace("# the tenant itself", "# the caller's tenant").replace("version: \"2.1\"", "version: \"2.2\""));
      unlinkSync(join(dir, "api/raw.yaml"));
      const diff = await definitions(["diff", dir], target);
      expect(diff.code, diff.out).to.equal(2);
      expect(diff.out).to.contain("~ api/tenant-of-request.yaml (update)\n    version:\n      - version: \"2.1\"\n      + version: \"2.2\"\n    query:\n        query: |\n      -   # the tenant itself\n      +   # the caller's tenant\n");
      expect(diff.out).to.contain("not in").and.contain("kept (--prune deletes them): api/raw.yaml").and.contain("0 to create, 1 to update, 0 to delete");

      const pruneDiff = await definitions(["diff", dir, "--prune"], target);
      expect(pruneDiff.code).to.equal(2);
      expect(pruneDiff.out).to.contain("- api/raw.yaml (delete)").and.contain("0 to create, 1 to update, 1 to delete");
      const applied = await definitions(["apply", dir, "--prune"], target);
      expect(applied.code, applied.out).to.equal(0);
      expect(applied.out).to.contain("updated api/tenant-of-request.yaml").and.contain("deleted api/raw.yaml");
      expect((await send("GET", "/api-definitions/raw", target)).status).to.equal(404);
      expect((await definitions(["diff", dir, "--prune"], target)).out).to.contain("no changes");
      const history = (await (await send("GET", "/api-definitions/tenant-of-request/history", target)).json()) as { history: { action: string; changedBy: { userId: string } }[] };
      expect(history.history.map((e) => e.action)).to.deep.equal(["update", "create"]);
      expect(history.history[0]!.changedBy.userId, "the history names the token's user").to.equal("admin-1");
    });

    it("ends with exit code 1 and a message for a refused token, a bad file and a definition the service refuses", async () => {
      const dir = join(work, "errors");
      const refused = await definitions(["diff", dir], target, { DEFINITIONS_TOKEN: "not-a-token" });
      expect(refused.code).to.equal(1);
      expect(refused.out).to.contain("401 UNAUTHENTICATED");
      await definitions(["export", dir], target);
      writeFileSync(join(dir, "calculation/z-base.yaml"), "externalId: z-base\ncalculationType: EXPRESSION\nfoo: 1\ndata: {}\n");
      const unknown = await definitions(["diff", dir], target);
      expect(unknown.code).to.equal(1);
      expect(unknown.out).to.contain("calculation/z-base.yaml: unknown field(s) foo");
      writeFileSync(join(dir, "calculation/z-base.yaml"), "externalId: z-base\ncalculationType: EXPRESSION\ndata: { calculation: { expression: 'a +', expressionType: VALUE } }\n");
      const invalid = await definitions(["apply", dir], target);
      expect(invalid.code).to.equal(1);
      expect(invalid.out).to.contain("PUT /calculation-definitions/z-base: 400 INVALID_DEFINITION");
      const usage = await definitions(["publish", dir], target);
      expect(usage.code).to.equal(1);
      expect(usage.out).to.contain("usage: npm run definitions");
    });
  });
}
