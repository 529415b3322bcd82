import { expect } from "chai";
import fc from "fast-check";
import { EXAMPLE_QUERY } from "../../src/demo/seed.js";
import { parseQuery } from "../../src/graph/query/parser.js";
import { planJoins, type JoinPlan, type PlanStep } from "../../src/graph/query/plan.js";
import type { GraphStatistics } from "../../src/graph/query/statistics.js";
import { patternModel, printPattern, statisticsModel } from "../support/graph-arbitrary.js";

const plan = (source: string, statistics?: GraphStatistics) => planJoins(parseQuery(source), statistics);
/** A tenant's statistics, or none (the plan by the pattern alone): every property holds for both. */
const someStatistics = fc.option(statisticsModel, { nil: undefined });

/** A step as one line a person reads. */
function describe_(step: PlanStep): string {
  switch (step.kind) {
    case "find":
      return `find ${step.entity}`;
    case "follow":
      return `follow ${step.link.relation} ${step.forward ? "to" : "from"} ${step.entity}`;
    case "check":
      return `check ${step.link.from} ${step.link.relation} ${step.link.to}`;
    case "bind":
    case "compare":
      return `${step.kind} ${step.label} at ${step.owner} ${step.source.kind === "key" ? "key" : step.source.name}`;
  }
}
const walk = (p: JoinPlan) => p.parts.flatMap((part) => part.steps).map(describe_);

describe("graph query plan", () => {
  it("walks the example from the tenant's key, finds the agreement by its attribute and checks its link to the index set", () => {
    expect(walk(plan(EXAMPLE_QUERY))).to.deep.equal([
      "find tenant",
      "follow hasIndexSet to indexSet",
      "find agreement",
      "check agreement inIndexSet indexSet",
      "follow hasProduct to product",
      "follow hasArrangement to arrangement",
      "follow hasAccessPointRelation to relation",
      "follow accessPoint to accessPoint",
    ]);
  });

  it("binds a value label at its first use and compares it at the others; an entity label as a value is compared once both ends are placed", () => {
    expect(walk(plan(`Site ?s; attribute:city ?c. Site ?t; attribute:city ?c.`))).to.deep.equal(["find s", "bind c at s city", "find t", "compare c at t city"]);
    expect(walk(plan(`Site ?s; attribute:members ?m. Meter ?m.`))).to.deep.equal(["find m", "find s", "compare m at s members"]);
    expect(walk(plan(`A ?a; entity:key ?k. B ?b; attribute:x ?k; link:r ?a.`))).to.deep.equal(["find a", "bind k at a key", "follow r from b", "compare k at b x"]);
  });

  it("prefers a key over attributes, and more attributes over fewer, as the starting point", () => {
    expect(walk(plan(`A ?a; link:r B:?b. B ?b; attribute:x 1. C ?c; link:s ?b; entity:key "k".`))[0]).to.equal("find c");
    expect(walk(plan(`A ?a; attribute:y 2; link:r B:?b. B ?b; attribute:x 1; attribute:z 3.`))[0]).to.equal("find b");
  });

  it("is the same plan for every writing of a pattern, with any statistics or none", () => {
    const reordered = patternModel.chain((pattern) =>
      fc.tuple(fc.constant(pattern), fc.shuffledSubarray(pattern.statements, { minLength: pattern.statements.length }), fc.boolean()),
    );
    fc.assert(
      fc.property(reordered, someStatistics, ([pattern, shuffled, reverse], statistics) => {
        const statements = shuffled.map((s) => (reverse ? { ...s, clauses: [...s.clauses].reverse() } : s));
        expect(walk(plan(printPattern({ ...pattern, statements }), statistics))).to.deep.equal(walk(plan(printPattern(pattern), statistics)));
      }),
      { numRuns: 1000 },
    );
  });

  it("places every entity once, uses every link once from a placed end, binds every value label once before comparing it, with any statistics or none", () => {
    fc.assert(
      fc.property(patternModel, someStatistics, (pattern, statistics) => {
        const p = plan(printPattern(pattern), statistics);
        const placed: string[] = [];
        const bound = new Set<string>();
        let linkSteps = 0;
        const entityNames = new Set(p.entities.map((e) => e.name));
        for (const step of p.parts.flatMap((part) => part.steps)) {
          if (step.kind === "find") placed.push(step.entity);
          if (step.kind === "follow") {
            linkSteps++;
            expect(placed, describe_(step)).to.include(step.forward ? step.link.from : step.link.to);
            expect(step.entity).to.equal(step.forward ? step.link.to : step.link.from);
            placed.push(step.entity);
          }
          if (step.kind === "check") {
            linkSteps++;
            expect(placed, describe_(step)).to.include.members([step.link.from, step.link.to]);
          }
          if (step.kind === "bind") {
            expect(bound.has(step.label), describe_(step)).to.equal(false);
            expect(placed).to.include(step.owner);
            bound.add(step.label);
          }
          if (step.kind === "compare") {
            expect(placed).to.include(step.owner);
            if (step.entityLabel) expect(placed).to.include(step.label);
            else expect(bound.has(step.label), describe_(step)).to.equal(true);
          }
        }
        expect([...placed].sort()).to.deep.equal([...entityNames].sort());
        const links = pattern.statements.flatMap((s) => s.clauses.filter((c) => c.kind === "link"));
        expect(linkSteps).to.equal(links.length);
        const valueLabels = p.labels.filter((l) => l.kind === "value").map((l) => l.name);
        expect([...bound].sort()).to.deep.equal([...valueLabels].sort());
      }),
      { numRuns: 1000 },
    );
  });

  it("splits a pattern into its independent parts, each walked on its own, the most selective first", () => {
    const parts = (source: string) => plan(source).parts.map((part) => part.steps.map(describe_));
    // The issue's example: ?m3 holds ?m5's id, so they are one part; ?m2 is another.
    expect(parts(`Meter ?m2. Meter ?m5. Meter ?m3; attribute:ownerId ?m5.`)).to.deep.equal([["find m2"], ["find m3", "find m5", "compare m5 at m3 ownerId"]]);
    // A shared value label joins two statements into one part; a key puts its part first.
    expect(parts(`Site ?s; attribute:city ?c. Meter ?m. Site ?t; attribute:city ?c. Person ?p; entity:key "k".`)).to.deep.equal([
      ["find p"],
      ["find m"],
      ["find s", "bind c at s city", "find t", "compare c at t city"],
    ]);
  });

  it("makes each part a connected component: every link and every use of a label within one part, each part connected, with any statistics or none", () => {
    fc.assert(
      fc.property(patternModel, someStatistics, (pattern, statistics) => {
        const p = plan(printPattern(pattern), statistics);
        const partOf = new Map(p.parts.flatMap((part, i) => part.entities.map((name) => [name, i] as const)));
        expect([...partOf.keys()].sort()).to.deep.equal(p.entities.map((e) => e.name).sort());
        // Edges of the pattern: links, and a label used as a value at an entity.
        const edges: [string, string][] = [];
        const valueOwners = new Map<string, string>();
        for (const step of p.parts.flatMap((part) => part.steps)) {
          if (step.kind === "follow" || step.kind === "check") edges.push([step.link.from, step.link.to]);
          if (step.kind === "bind") valueOwners.set(step.label, step.owner);
        }
        for (const step of p.parts.flatMap((part) => part.steps)) {
          if (step.kind === "compare") edges.push([step.owner, step.entityLabel ? step.label : valueOwners.get(step.label)!]);
        }
        for (const [a, b] of edges) expect(partOf.get(a), `${a} and ${b}`).to.equal(partOf.get(b));
        // Connected: from its first entity, its edges reach every entity of the part.
        for (const part of p.parts) {
          const reached = new Set([part.entities[0]!]);
          for (let grown = true; grown; ) {
            grown = false;
            for (const [a, b] of edges) {
              if (reached.has(a) !== reached.has(b)) {
                reached.add(a).add(b);
                grown = true;
              }
            }
          }
          expect([...reached].sort()).to.deep.equal([...part.entities].sort());
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("refuses a label of two types and a link to a label bound to no entity, naming where", () => {
    expect(() => plan(`A ?x. B ?x.`)).to.throw(/label \?x is of type A \(line 1, column 3\) and cannot also be of type B/);
    expect(() => plan(`A ?x; link:r ?y.`)).to.throw(/label \?y is not bound to an entity/);
  });
});
