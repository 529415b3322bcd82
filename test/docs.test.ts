import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { documentationFiles, headingAnchors, markdownProblems, MAX_LINE } from "./support/markdown.js";
import { REPOSITORY } from "./support/tiers.js";

/** A file of the repository as text, undefined when it does not exist (a folder reads as ""). */
function readRepositoryFile(path: string): string | undefined {
  const full = join(REPOSITORY, path);
  if (!existsSync(full)) return undefined;
  return statSync(full).isDirectory() ? "" : readFileSync(full, "utf8");
}

/** The documentation (issue 26): a front page and docs/ a newcomer can navigate, each link working. */
describe("documentation", () => {
  const files = documentationFiles();

  it("has README.md as a front page of at most 200 lines, and an index of docs/", () => {
    const readme = readRepositoryFile("README.md")!;
    expect(readme.split("\n").length).to.be.at.most(200);
    expect(files).to.include.members(["docs/README.md", "docs/getting-started.md"]);
    expect(readme).to.include("](docs/README.md)");
  });

  it(`keeps every line outside code blocks within ${MAX_LINE} characters, and every relative link pointing at a file and heading that exist`, () => {
    const problems = files.flatMap((file) => markdownProblems(file, readRepositoryFile(file)!, readRepositoryFile));
    expect(problems).to.deep.equal([]);
  });

  it("reports a long line, a link to a missing file or heading, and leaves code blocks and absolute links alone", () => {
    const long = "x".repeat(MAX_LINE + 1);
    const text = [
      "# Title",
      "## Same",
      "## Same",
      long,
      "```",
      long,
      "[not a link](missing.md)",
      "```",
      "[ok](other.md#a-heading) [ok](#same-1) [ok](https://example.com/x) `[code](missing.md)`",
      "[gone](missing.md) [no heading](other.md#nothing) [no heading here](#nowhere)",
    ].join("\n");
    const read = (path: string) => (path === "docs/other.md" ? "## A heading\n" : undefined);
    expect(markdownProblems("docs/x.md", text, read)).to.deep.equal([
      `docs/x.md:4 is ${MAX_LINE + 1} characters long (at most ${MAX_LINE} outside code blocks)`,
      "docs/x.md:10 links to missing.md: docs/missing.md does not exist",
      "docs/x.md:10 links to other.md#nothing: docs/other.md has no heading #nothing",
      "docs/x.md:10 links to #nowhere: docs/x.md has no heading #nowhere",
    ]);
  });

  it("names headings' anchors as GitHub does", () => {
    expect([...headingAnchors("# Process-engine workers\n## `npm test`: the tiers\n## Tiers\n## Tiers\n")]).to.deep.equal([
      "process-engine-workers",
      "npm-test-the-tiers",
      "tiers",
      "tiers-1",
    ]);
  });
});
