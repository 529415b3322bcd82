import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { readTiers, REPOSITORY, testFiles, tierProblems, unitProblems } from "./support/tiers.js";

/** The test tiers (test/tiers.json): npm test runs every test file once; test:unit, test:db and test:e2e a tier each. */
describe("test tiers", function () {
  const tiers = readTiers();
  const files = testFiles();
  const tierOf = (file: string) => Object.entries(tiers).find(([, listed]) => listed.includes(file))?.[0];

  it("put every test file in exactly one tier of unit, db and e2e, and list no other file", () => {
    expect(files.length).to.be.greaterThan(50);
    expect(tierProblems(files, tiers)).to.deep.equal([]);
  });

  it("keep databases, servers, processes and browsers out of the unit tier", () => {
    const problems = tiers.unit!.flatMap((file) => unitProblems(file, readFileSync(join(REPOSITORY, file), "utf8"), tierOf));
    expect(problems).to.deep.equal([]);
  });

  it("report a file in no tier, in two, one that does not exist, and a tier of another name", () => {
    const problems = tierProblems(["test/a.test.ts", "test/b.test.ts", "test/c.test.ts"], {
      unit: ["test/a.test.ts", "test/b.test.ts"],
      db: ["test/b.test.ts", "test/gone.test.ts"],
      slow: [],
    });
    expect(problems).to.have.members([
      "unknown tier slow",
      "test/gone.test.ts (tier db) is not a test file",
      "test/b.test.ts is in 2 tiers: unit, db",
      "test/c.test.ts is in no tier",
    ]);
  });

  it("report a unit file that imports the backends, a process module or a test of another tier, or starts a process", () => {
    const spawnCall = ["spawn", "(process.execPath)"].join(""); // not written out: this file is in the unit tier itself
    const source = [
      'import { expect } from "chai";',
      "import {",
      "  describeEachBackend,",
      '} from "../support/backends.js";',
      'import { spawn } from "node:child_process";',
      'import { describeService } from "./openapi.test.js";',
      'import { ROOT } from "../support/process.js";',
      'const version = /v(\\d+)/.exec("v24");',
      `const child = ${spawnCall};`,
    ].join("\n");
    const of = (file: string) => (file === "test/http/openapi.test.ts" ? "db" : undefined);
    expect(unitProblems("test/http/x.test.ts", source, of)).to.deep.equal([
      "test/http/x.test.ts imports ../support/backends.js",
      "test/http/x.test.ts imports node:child_process",
      "test/http/x.test.ts imports ./openapi.test.js, a test file outside the unit tier",
      "test/http/x.test.ts calls spawn",
    ]);
    expect(unitProblems("test/json.test.ts", 'import { expect } from "chai";\nimport { ROOT } from "./support/process.js";\n', of)).to.deep.equal([]);
  });
});
