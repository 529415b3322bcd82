import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import fc from "fast-check";
import { EXAMPLE_QUERY } from "../src/demo/seed.js";
import { compileQuery } from "../src/graph/query/compiler.js";
import { parseQuery } from "../src/graph/query/parser.js";
import { patternModel, printPattern } from "./support/graph-arbitrary.js";
import { joinFindings, sqlFindings, tenantTables } from "./support/tenant-joins.js";

const ROOT = join(import.meta.dirname, "..", "..");

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => join(e.parentPath, e.name));
}

describe("no statement joins across tenants (docs/explanations/distribution.md)", () => {
  it("reads the tenant tables from the migrations", () => {
    expect(tenantTables()).to.include.members(["api_definitions", "calculation_definitions", "entities", "events", "links", "stream_watchers"]);
    expect(tenantTables()).to.not.include.members(["schema_migrations", "stream_payloads", "tasks_in_hand"]);
  });

  it("finds no join without the tenant in the SQL of src/ and workers/", () => {
    const files = [...sources("src"), ...sources("workers")];
    expect(files.length).to.be.greaterThan(100);
    const findings = files.flatMap((file) => joinFindings(file.slice(ROOT.length + 1), readFileSync(file, "utf8")));
    expect(findings).to.deep.equal([]);
  });

  it("finds none in the statements the graph compiler writes, timed, budgeted and gated", () => {
    const tables = tenantTables();
    const forms = (source: string) => {
      const compiled = compileQuery(parseQuery(source));
      const gated = compiled.gated("true");
      return [compiled.sql, compiled.budgetedSql, gated.sql, gated.budgetedSql];
    };
    for (const sql of forms(EXAMPLE_QUERY)) expect(sqlFindings(sql, tables)).to.deep.equal([]);
    fc.assert(
      fc.property(patternModel, (pattern) => {
        for (const sql of forms(printPattern(pattern))) expect(sqlFindings(sql, tables)).to.deep.equal([]);
      }),
      { numRuns: 300 },
    );
  });

  it("finds a planted join across tenants, in SQL text and through knex", () => {
    const planted = [
      "const a = `select e.value from events e join entities x on x.id = e.item_id where e.tenant = ?`;",
      "const b = knex.raw(`select * from links ${l} join entities e on e.tenant = ? and e.id = ${l}.to_id`);",
      'const c = "select i.id, (select max(ts) from events v where v.item_id = i.id) from entities i where i.tenant = ?";',
      'const d = knex("events").where({ tenant }).join("entities", "entities.id", "events.item_id");',
      "const e = knex(\"events\").leftJoin(\"entities\", function () { this.on(\"entities.id\", \"events.item_id\"); });",
    ].join("\n");
    const findings = joinFindings("planted.ts", planted);
    expect(findings.map((f) => f.line)).to.deep.equal([1, 2, 3, 4, 5]);
    expect(findings[0]!.message).to.match(/^entities x is joined without its tenant/);
    expect(findings[1]!.message).to.match(/^links \$\{l\} is joined without its tenant/);
    expect(findings[2]!.message).to.match(/^events v is joined without its tenant/);
    // The same statements with the tenant named pass.
    const fixed = [
      "const a = `select e.value from events e join entities x on x.tenant = e.tenant and x.id = e.item_id where e.tenant = ?`;",
      "const b = knex.raw(`select * from links ${l} join entities e on e.tenant = ? and e.id = ${l}.to_id where ${l}.tenant = ?`);",
      'const c = "select i.id, (select max(ts) from events v where v.tenant = i.tenant and v.item_id = i.id) from entities i where i.tenant = ?";',
      'const d = knex("events").where({ tenant }).join("entities", (j) => j.on("entities.tenant", "events.tenant").andOn("entities.id", "events.item_id"));',
      'const e = ["a", "b"].join(", ");',
    ].join("\n");
    expect(joinFindings("fixed.ts", fixed)).to.deep.equal([]);
  });
});
