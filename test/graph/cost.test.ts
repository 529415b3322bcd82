import { expect } from "chai";
import { compileQuery } from "../../src/graph/query/compiler.js";
import { parseQuery } from "../../src/graph/query/parser.js";
import { planJoins, type JoinPlan } from "../../src/graph/query/plan.js";
import { bucketed, describeGraph, estimateDistinct, LINK_SAMPLE, type GraphStatistics } from "../../src/graph/query/statistics.js";

/** The walk's placing steps, one line each. */
const walk = (p: JoinPlan) =>
  p.parts.map((part) =>
    part.steps
      .flatMap((s) => (s.kind === "find" ? [`find ${s.entity}`] : s.kind === "follow" ? [`follow ${s.link.relation} to ${s.entity}`] : s.kind === "check" ? [`check ${s.link.relation}`] : []))
      .join(", "),
  );
const planned = (source: string, statistics?: GraphStatistics) => walk(planJoins(parseQuery(source), statistics));

/** A tenant like the benchmark's (bench/seed-shapes.ts), as its statistics describe it. */
const BENCH: GraphStatistics = {
  types: { Agreement: 16384, AgreementProduct: 16384, Arrangement: 16384, AccessPointRelation: 32768, AccessPoint: 32768, Device: 8192, Person: 2048, Site: 4 },
  relations: {
    hasProduct: { links: 16384, sources: 16384, targets: 16384, self: 0 },
    hasArrangement: { links: 16384, sources: 16384, targets: 16384, self: 0 },
    hasAccessPointRelation: { links: 32768, sources: 16384, targets: 32768, self: 0 },
    accessPoint: { links: 32768, sources: 32768, targets: 32768, self: 0 },
    installedAt: { links: 8192, sources: 8192, targets: 4, self: 0 },
  },
  attributes: {
    Agreement: { publicId: { held: 1, distinct: 16384, common: {}, exact: false } },
    AccessPoint: { accessPointType: { held: 1, distinct: 1, common: { '"ELECTRICITY"': 1 }, exact: false } },
    Device: { owner: { held: 1, distinct: 2048, common: {}, exact: false } },
    Person: { name: { held: 1, distinct: 2048, common: {}, exact: false }, city: { held: 1, distinct: 64, common: {}, exact: false } },
  },
  unsampledLinks: 0,
};

const CHAIN = `Agreement ?a; attribute:publicId "AGR-88"; link:hasProduct AgreementProduct:?p. AgreementProduct ?p; link:hasArrangement Arrangement:?ar.
Arrangement ?ar; link:hasAccessPointRelation AccessPointRelation:?r. AccessPointRelation ?r; link:accessPoint AccessPoint:?ap.
AccessPoint ?ap; attribute:accessPointType "ELECTRICITY".`;
const HUB = `Site ?s; entity:key "S-0". Device ?d; link:installedAt ?s; attribute:owner ?o. Person ?p; attribute:name ?o; attribute:city "C5".`;

describe("graph statistics and the walk they choose", () => {
  it("rounds counts to powers of two and estimates distinct values from a sample as ANALYZE does", () => {
    expect([0, 1, 3, 5, 6, 1000, 0.3].map(bucketed)).to.deep.equal([0, 1, 4, 4, 8, 1024, 0.25]);
    // Every value seen once: as many distinct values as items; every value seen often: those seen.
    expect(estimateDistinct(500, 500, 500, 10_000)).to.equal(10_000);
    expect(estimateDistinct(500, 5, 0, 10_000)).to.equal(5);
    expect(estimateDistinct(500, 50, 0, 500)).to.equal(50);
  });

  it("describes a tenant from the rows read: a small type whole (exact), a large one sampled, a sample of links scaled up", () => {
    const values = [
      ...["a", "b", "c"].map((v) => ({ type: "Small", name: "colour", value: JSON.stringify(v), entities: 1 })),
      { type: "Big", name: "kind", value: '"common"', entities: 500 },
      ...Array.from({ length: 500 }, (_, i) => ({ type: "Big", name: "serial", value: JSON.stringify(`s${i}`), entities: 1 })),
    ];
    const relations = [{ relation: "to", links: LINK_SAMPLE, sources: LINK_SAMPLE / 2, self: 10, targets: 4, once: 0 }];
    const statistics = describeGraph([{ type: "Small", n: 3 }, { type: "Big", n: 10_000 }], relations, 0.25, values);
    expect(statistics.types).to.deep.equal({ Small: 4, Big: 8192 });
    expect(statistics.attributes.Small!.colour).to.deep.equal({ held: 1, distinct: 4, common: { '"a"': 0.25, '"b"': 0.25, '"c"': 0.25 }, exact: true });
    expect(statistics.attributes.Big!.kind).to.deep.equal({ held: 1, distinct: 1, common: { '"common"': 1 }, exact: false });
    expect(statistics.attributes.Big!.serial).to.include({ distinct: 8192, exact: false });
    expect(statistics.attributes.Big!.serial!.common).to.deep.equal({});
    // A quarter of the links read: four times as many links and sources; the hub's 4 targets stay 4.
    expect(statistics.relations.to).to.deep.equal({ links: bucketed(4 * LINK_SAMPLE), sources: bucketed(2 * LINK_SAMPLE), targets: 4, self: 32 });
    expect(statistics.unsampledLinks).to.equal(2);
    expect(describeGraph([], [], 1, []).unsampledLinks).to.equal(0);
  });

  it("starts a chain at the one agreement with the key rather than at the access points holding a common value", () => {
    // By the pattern alone, each end has one constant: the tie goes to the type name.
    expect(planned(CHAIN)[0]).to.match(/^find ap, follow accessPoint to r/);
    expect(planned(CHAIN, BENCH)).to.deep.equal([
      "find a, follow hasProduct to p, follow hasArrangement to ar, follow hasAccessPointRelation to r, follow accessPoint to ap",
    ]);
    // Where the value is rare and the agreements' ids all alike, the walk starts at the access point.
    const other: GraphStatistics = {
      ...BENCH,
      attributes: {
        Agreement: { publicId: { held: 1, distinct: 1, common: { '"AGR-88"': 1 }, exact: false } },
        AccessPoint: { accessPointType: { held: 1, distinct: 32768, common: {}, exact: false } },
      },
    };
    expect(planned(CHAIN, other)[0]).to.match(/^find ap, follow accessPoint to r/);
  });

  it("crosses no hub: finds the persons of the city and their devices by the bound name, then checks the devices' site", () => {
    expect(planned(HUB)).to.deep.equal(["find s, follow installedAt to d, find p"]);
    expect(planned(HUB, BENCH)).to.deep.equal(["find s, find p, find d, check installedAt"]);
  });

  it("walks a part the statistics say is empty first, and treats a relation the sample missed as rare, not absent", () => {
    expect(planned(`Device ?d. Site ?s; attribute:city "nowhere".`, { ...BENCH, attributes: { Site: { city: { held: 1, distinct: 2, common: { '"C1"': 1 }, exact: true } } } })).to.deep.equal([
      "find s",
      "find d",
    ]);
    const rare = { ...BENCH, unsampledLinks: 2 };
    expect(planned(`Site ?s; entity:key "S-0"; link:managedBy Person:?p. Device ?d; link:installedAt ?s.`, rare)).to.deep.equal([
      "find s, follow managedBy to p, follow installedAt to d",
    ]);
  });

  it("shares one statement among the statistics that give one plan, and makes another for another plan", () => {
    const compiled = compileQuery(parseQuery(CHAIN));
    const twice = { ...BENCH, types: { ...BENCH.types, Site: 8 } };
    expect(compiled.planned(undefined)).to.include({ sql: compiled.sql });
    expect(compiled.planned(BENCH).sql).not.to.equal(compiled.sql);
    expect(compiled.planned(twice)).to.equal(compiled.planned(BENCH));
  });
});
