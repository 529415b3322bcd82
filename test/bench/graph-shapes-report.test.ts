import { expect } from "chai";
import { compareFiles, formatComparison, meetsGoal, slowRefusal, type BackendRun, type ShapeResult, type ShapesFile } from "../../bench/graph-shapes-report.js";

function shape(name: string, p50Ms: number, outcome: ShapeResult["outcome"], met: boolean): ShapeResult {
  return { name, category: "hub", source: `T ?${name}.`, goalMs: 50, p50Ms, runsMs: [p50Ms], outcome, answerSize: "fits", met };
}

function file(build: string, backend: BackendRun["backend"], shapes: ShapeResult[]): ShapesFile {
  return {
    bench: "graph-shapes",
    build,
    date: "2026-11-28T00:00:00.000Z",
    runs: [{ backend, scale: 1, entities: 100, seedMs: 1, limits: { timeoutMs: 5000, maxRows: 10_000, maxVisits: 500_000 }, shapes }],
  };
}

describe("graph-shapes benchmark report", () => {
  it("meets a goal only with the outcome the answer's size calls for, within the time", () => {
    expect(meetsGoal("rows", "fits", 50, 50)).to.equal(true);
    expect(meetsGoal("rows", "fits", 50.1, 50)).to.equal(false);
    expect(meetsGoal("row-limit", "exceeds", 10, 50), "a too large answer refused fast").to.equal(true);
    expect(meetsGoal("row-limit", "exceeds", 400, 50), "refused slowly: still the issue's 'or'").to.equal(true);
    expect(slowRefusal({ outcome: "row-limit", p50Ms: 400, goalMs: 50, met: true }), "but listed apart").to.equal(true);
    expect(slowRefusal({ outcome: "row-limit", p50Ms: 40, goalMs: 50, met: true })).to.equal(false);
    expect(meetsGoal("time-out", "exceeds", 5000, 50), "a too large answer must be refused for its rows").to.equal(false);
    expect(meetsGoal("row-limit", "fits", 10, 50), "an answer that fits, refused").to.equal(false);
    expect(meetsGoal("rows", "exceeds", 10, 50)).to.equal(false);
    expect(meetsGoal("work-limit", "fits", 10, 50), "the work limit is never the expected outcome").to.equal(false);
    expect(meetsGoal("time-out", "unknown", 10, 50)).to.equal(false);
  });

  it("pairs shapes by backend and name, keeping those only one side has", () => {
    const before = file("main", "postgres", [shape("a", 100, "time-out", false), shape("b", 10, "rows", true)]);
    const after = file("next", "postgres", [shape("b", 5, "rows", true), shape("c", 1, "rows", true)]);
    const rows = compareFiles(before, after);
    expect(rows.map((r) => [r.backend, r.name, r.before?.p50Ms, r.after?.p50Ms, r.ratio])).to.deep.equal([
      ["postgres", "a", 100, undefined, undefined],
      ["postgres", "b", 10, 5, 0.5],
      ["postgres", "c", undefined, 1, undefined],
    ]);
    const embedded = compareFiles(before, file("next", "embedded", [shape("a", 20, "rows", true)]));
    expect(embedded.map((r) => [r.backend, r.name, r.ratio])).to.deep.equal([
      ["postgres", "a", undefined],
      ["postgres", "b", undefined],
      ["embedded", "a", undefined],
    ]);
  });

  it("prints each shape's two times and the ratio, and how many met their goal on each side", () => {
    const lines = formatComparison(
      file("main", "postgres", [shape("a", 100, "time-out", false), shape("b", 10, "rows", true)]),
      file("next", "postgres", [shape("a", 25, "rows", true), shape("b", 20, "rows", true)]),
    );
    expect(lines.find((l) => l.startsWith("a "))).to.match(/^a\s+100 NO time-out\s+25\.0 met rows\s+0\.25x$/);
    expect(lines.find((l) => l.startsWith("b "))).to.match(/^b\s+10\.0 met rows\s+20\.0 met rows\s+2\.00x$/);
    expect(lines.at(-1)).to.equal("postgres: goal met by 1 shapes before, 2 after, of 2");
  });

  it("judges the goal again from each file's figures rather than trusting its verdict", () => {
    const refused = { ...shape("big", 400, "row-limit", false), answerSize: "exceeds" as const };
    const slow = shape("slow", 60, "rows", true);
    const lines = formatComparison(file("old", "postgres", [refused, slow]), file("new", "postgres", [refused, slow]));
    expect(lines.find((l) => l.startsWith("big "))).to.match(/^big\s+400 met row-limit\s+400 met row-limit\s+1\.00x$/);
    expect(lines.find((l) => l.startsWith("slow "))).to.match(/^slow\s+60\.0 NO rows\s+60\.0 NO rows\s+1\.00x$/);
  });
});
