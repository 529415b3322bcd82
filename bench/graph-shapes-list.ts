import type { QueryParameters } from "../src/graph/query/compiler.js";
import { EXAMPLE_QUERY } from "../src/demo/seed.js";
import type { ShapeCounts } from "./seed-shapes.js";

/** A query shape of bench/graph-shapes.ts. */
export interface Shape {
  name: string;
  category: "value join" | "disconnected" | "hub" | "long chain" | "self link" | "array";
  source: string;
  params?: QueryParameters;
  /** Tighter than the backend's goal (the issue's value join: 20 ms). */
  goalMs?: number;
}

export const GOAL_MS = { postgres: 50, embedded: 200 } as const;
export const ISSUE_VALUE_JOIN_GOAL_MS = 20;

/**
 * The shapes, generated from templates over the seeded counts (keys picked inside the seeded
 * ranges, so every scale has them). Comments give the answer's size at scale 1.
 */
export function generateShapes(c: ShapeCounts): Shape[] {
  const device = (i: number) => `D-${i % c.devices}`;
  const person = (i: number) => `P-${i % c.persons}`;
  const agreement = (i: number) => `AGR-${i % c.agreements}`;
  const shapes: Shape[] = [];
  const add = (category: Shape["category"], name: string, source: string, extra: Partial<Shape> = {}) => shapes.push({ category, name, source, ...extra });

  // Value joins: a value bound in one statement and used in another.
  add("value join", "vj-issue", `Device ?d; attribute:owner ?o. Person ?p; attribute:name ?o; attribute:city "C1".`, { goalMs: ISSUE_VALUE_JOIN_GOAL_MS }); // 200
  add("value join", "vj-issue-reordered", `Person ?p; attribute:city "C1"; attribute:name ?o. Device ?d; attribute:owner ?o.`);
  for (const city of [3, 17]) add("value join", `vj-model-city-${city}`, `Device ?d; attribute:model "M${city % 20}"; attribute:owner ?o. Person ?p; attribute:name ?o; attribute:city "C${city}".`);
  add("value join", "vj-device-key", `Device ?d; entity:key "${device(17)}"; attribute:owner ?o. Person ?p; attribute:name ?o.`); // 1
  add("value join", "vj-common-city", `Person ?p; entity:key "${person(1)}"; attribute:city ?c. Person ?q; attribute:city ?c.`); // 40
  add("value join", "vj-city-pairs", `Person ?p; attribute:city ?c. Person ?q; attribute:city ?c.`); // 80,000: row limit
  add("value join", "vj-status-pairs", `Device ?d; attribute:status ?s; attribute:model "M1". Device ?e; attribute:status ?s; attribute:model "M2".`); // 250,000: row limit
  add("value join", "vj-site", `Person ?p; attribute:city "C7"; attribute:name ?o. Device ?d; attribute:owner ?o; link:installedAt Site:?s.`); // 200
  add("value join", "vj-two-hops", `Device ?d; entity:key "${device(42)}"; attribute:owner ?o. Person ?p; attribute:name ?o; attribute:city ?c. Person ?q; attribute:city ?c; attribute:tags "t3".`);
  add("value join", "vj-meter-owner", `Meter ?m5; entity:key "M-0". Meter ?m3; attribute:ownerId ?m5.`); // 1

  // Disconnected parts: statements no link or value joins.
  add("disconnected", "dp-issue", `Meter ?m2. Meter ?m5. Meter ?m3; attribute:ownerId ?m5.`); // 400
  add("disconnected", "dp-issue-with-sites", `Site ?s. Meter ?m2. Meter ?m5. Meter ?m3; attribute:ownerId ?m5.`); // 2,000
  add("disconnected", "dp-two-keys", `Person ?p; entity:key "${person(1)}". Device ?d; entity:key "${device(1)}".`); // 1
  add("disconnected", "dp-key-and-type", `Agreement ?a; attribute:publicId "${agreement(7)}". Meter ?m.`); // 200
  add("disconnected", "dp-two-types", `Site ?s. Meter ?m.`); // 1,000
  add("disconnected", "dp-three-parts", `Site ?s; entity:key "S-1". Person ?p; attribute:city "C2". Meter ?m; attribute:zone "Z1".`); // 2,000
  add("disconnected", "dp-zone-pairs", `Meter ?a; attribute:zone "Z0". Meter ?b; attribute:zone "Z1".`); // 2,500
  add("disconnected", "dp-chain-and-city", `Agreement ?a; attribute:publicId "${agreement(99)}"; link:hasProduct AgreementProduct:?pr. Person ?p; attribute:city "C3".`); // 40
  add("disconnected", "dp-empty-part", `Person ?p; attribute:city "nowhere". Device ?d.`); // 0
  add("disconnected", "dp-big-product", `Person ?p. Meter ?m.`); // 400,000: row limit

  // Hubs: an entity many others link to (the index set: every agreement; a site: 2,000 devices).
  add("hub", "hub-index-set-one", `IndexSet ?s. Agreement ?a; attribute:publicId "${agreement(123)}"; link:inIndexSet ?s.`); // 1
  add("hub", "hub-tenant-index-set", `Tenant ?t; link:hasIndexSet IndexSet:?s. Agreement ?a; link:inIndexSet ?s; attribute:publicId "${agreement(5)}".`); // 1
  add("hub", "hub-all-agreements", `IndexSet ?s. Agreement ?a; link:inIndexSet ?s.`); // 20,000: row limit
  add("hub", "hub-site-model", `Site ?s; entity:key "S-2". Device ?d; link:installedAt ?s; attribute:model "M7".`); // 500
  add("hub", "hub-site-device-key", `Site ?s. Device ?d; entity:key "${device(999)}"; link:installedAt ?s.`); // 1
  add("hub", "hub-site-owner-city", `Site ?s; entity:key "S-0". Device ?d; link:installedAt ?s; attribute:owner ?o. Person ?p; attribute:name ?o; attribute:city "C5".`); // 200
  add("hub", "hub-site-devices", `Site ?s; entity:key "S-1". Device ?d; link:installedAt ?s.`); // 2,000
  add("hub", "hub-common-value-key", `AccessPoint ?ap; attribute:accessPointType "ELECTRICITY"; attribute:externalId "EAN-${77 % c.agreements}-1".`); // 1
  add("hub", "hub-common-value-all", `AccessPoint ?ap; attribute:accessPointType "ELECTRICITY".`); // 40,000: row limit

  // Long chains.
  add("long chain", "lc-example", EXAMPLE_QUERY, { params: { tenantId: "", publicId: agreement(4711) } }); // 2 (tenantId set at run)
  add(
    "long chain",
    "lc-backward",
    `AccessPoint ?ap; attribute:externalId "EAN-${311 % c.agreements}-2". AccessPointRelation ?r; link:accessPoint ?ap. Arrangement ?ar; link:hasAccessPointRelation ?r. AgreementProduct ?p; link:hasArrangement ?ar. Agreement ?a; link:hasProduct ?p.`,
  ); // 1
  add(
    "long chain",
    "lc-common-end",
    `Agreement ?a; attribute:publicId "${agreement(88)}"; link:hasProduct AgreementProduct:?p. AgreementProduct ?p; link:hasArrangement Arrangement:?ar. Arrangement ?ar; link:hasAccessPointRelation AccessPointRelation:?r. AccessPointRelation ?r; link:accessPoint AccessPoint:?ap. AccessPoint ?ap; attribute:accessPointType "ELECTRICITY".`,
  ); // 2
  add("long chain", "lc-to-tenant", `Agreement ?a; attribute:publicId "${agreement(5)}"; link:inIndexSet IndexSet:?s. Tenant ?t; link:hasIndexSet ?s.`); // 1
  add("long chain", "lc-no-constant", `Agreement ?a; link:hasProduct AgreementProduct:?p. AgreementProduct ?p; link:hasArrangement Arrangement:?ar.`); // 20,000: row limit
  add("long chain", "lc-meters", `Meter ?a; entity:key "M-0"; link:feeds Meter:?b. Meter ?b; link:feeds Meter:?c. Meter ?c; link:feeds Meter:?d. Meter ?d; link:feeds Meter:?e.`);
  add(
    "long chain",
    "lc-site-then-value",
    `Device ?d; entity:key "${device(3)}"; link:installedAt Site:?s. Device ?e; link:installedAt ?s; attribute:owner ?o. Person ?p; attribute:name ?o; attribute:city "C8".`,
  ); // 200

  // Self links.
  add("self link", "sl-meter", `Meter ?m; link:feeds ?m.`); // 67
  add("self link", "sl-meter-zone", `Meter ?m; link:feeds ?m; attribute:zone "Z2".`);
  add("self link", "sl-device-model", `Device ?d; link:peer ?d; attribute:model "M0".`); // 500
  add("self link", "sl-device-all", `Device ?d; link:peer ?d.`); // 1,000
  add("self link", "sl-self-and-next", `Meter ?m; link:feeds ?m; link:feeds Meter:?n.`); // 134
  add("self link", "sl-cycle", `Meter ?a; link:feeds Meter:?b. Meter ?b; link:feeds ?a.`); // 67

  // Array attributes.
  add("array", "arr-constant", `Person ?p; attribute:tags "t3"; attribute:city "C3".`);
  add("array", "arr-value-join", `Person ?p; entity:key "${person(10)}"; attribute:tags ?t. Person ?q; attribute:tags ?t; attribute:city "C10".`);
  add("array", "arr-device-labels", `Device ?d; entity:key "${device(8)}"; attribute:labels ?l. Device ?e; attribute:labels ?l; attribute:model "M1".`); // 500
  return shapes;
}
