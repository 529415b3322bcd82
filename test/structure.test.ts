import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { expect } from "chai";
import { REPOSITORY } from "./support/tiers.js";

const SOURCE = join(REPOSITORY, "src");

/** Every .ts file under `dir`, as a path relative to the repository with `/` separators. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [relative(REPOSITORY, path).split(sep).join("/")] : [];
  });
}

/** The files of `files` that `file` imports or re-exports from (type-only imports included: they tie the modules too). */
function importsOf(file: string, files: Set<string>): string[] {
  const source = readFileSync(join(REPOSITORY, file), "utf8");
  const targets: string[] = [];
  for (const [, named, bare] of source.matchAll(/^\s*(?:import|export)\b[^"';]*?\bfrom\s+["'](\.[^"']+)["']|^\s*import\s*\(?\s*["'](\.[^"']+)["']/gm)) {
    const target = join(dirname(file), (named ?? bare)!.replace(/\.js$/, ".ts")).split(sep).join("/");
    if (files.has(target)) targets.push(target);
  }
  return targets;
}

/** Each import circle of the graph once, as its files from the alphabetically first, back to that one. */
function importCircles(graph: Map<string, string[]>): string[][] {
  const circles = new Map<string, string[]>();
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === "open") {
        const circle = path.slice(path.indexOf(next));
        const first = circle.indexOf([...circle].sort()[0]!);
        const rotated = [...circle.slice(first), ...circle.slice(0, first)];
        circles.set(rotated.join(" -> "), [...rotated, rotated[0]!]);
      } else if (state.get(next) === undefined) visit(next);
    }
    path.pop();
    state.set(file, "done");
  };
  for (const file of [...graph.keys()].sort()) if (state.get(file) === undefined) visit(file);
  return [...circles.values()];
}

/**
 * The modules of src/ import one another without a circle: a circle makes the order modules load
 * in decide which of them see the others' exports (an import of a module still loading is undefined).
 */
describe("import circles in src/", () => {
  it("finds none", () => {
    const files = new Set(sourceFiles(SOURCE));
    const graph = new Map([...files].map((file) => [file, importsOf(file, files)]));
    expect(importCircles(graph).map((circle) => circle.join(" -> "))).to.deep.equal([]);
  });

  it("finds a circle of two and one of three, each once, and nothing in a graph without one", () => {
    const graph = new Map([
      ["a", ["b"]],
      ["b", ["a", "c"]],
      ["c", ["d"]],
      ["d", ["e"]],
      ["e", ["c"]],
      ["f", ["a"]],
    ]);
    expect(importCircles(graph)).to.deep.equal([
      ["a", "b", "a"],
      ["c", "d", "e", "c"],
    ]);
    expect(importCircles(new Map([["a", ["b"]], ["b", ["c"]], ["c", []]]))).to.deep.equal([]);
  });
});

/** The longest a source file of the service (src/, workers/) may be: past it, a file holds more than one job. */
const MAX_SOURCE_LINES = 400;

describe("source files", () => {
  it(`are at most ${MAX_SOURCE_LINES} lines each (src/, workers/)`, () => {
    const files = [...sourceFiles(SOURCE), ...sourceFiles(join(REPOSITORY, "workers"))];
    expect(files.length).to.be.greaterThan(50);
    const long = files
      .map((file) => ({ file, lines: readFileSync(join(REPOSITORY, file), "utf8").split("\n").length - 1 }))
      .filter((f) => f.lines > MAX_SOURCE_LINES);
    expect(long).to.deep.equal([]);
  });
});
