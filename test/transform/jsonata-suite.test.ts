import { expect } from "chai";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { rewriteTransform } from "../../src/transform/rewrite.js";
import { loadJsonataSuite, type JsonataSuiteCase } from "../support/jsonata-suite.js";
import { lexerDisagreement } from "../support/lexer-oracle.js";

// The suite is not part of the project: it sits in shared/ beside the clone, or where
// JSONATA_SUITE_DIR says. This file runs from dist/test/transform/, three levels below the root.
const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const SUITE_DIR = process.env.JSONATA_SUITE_DIR ?? path.resolve(REPO_ROOT, "../shared/jsonata-test-suite");

describe("the official JSONata test suite, read as transforms", () => {
  let cases: JsonataSuiteCase[] = [];
  before(() => {
    cases = loadJsonataSuite(SUITE_DIR);
  });

  it("holds its 1,686 cases", () => {
    expect(cases.length).to.equal(1686);
  });

  it("is tokenized as JSONata's own parser tokenizes it, every expression", () => {
    const disagreements = cases.flatMap((c) => {
      const found = lexerDisagreement(c.expr);
      return found === undefined ? [] : [`${c.id}: ${found}`];
    });
    expect(disagreements).to.deep.equal([]);
  });

  it("comes out of the rewrite unchanged and without problems, every expression: none is read as the extension", () => {
    const changed = cases.flatMap((c) => {
      const { source, problems } = rewriteTransform(c.expr);
      return source === c.expr && problems.length === 0 ? [] : [`${c.id}: ${JSON.stringify(c.expr)} → ${JSON.stringify(source)} ${JSON.stringify(problems)}`];
    });
    expect(changed).to.deep.equal([]);
  });
});
