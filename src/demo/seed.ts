import type { Knex } from "knex";
import type { ApiDefinitionInput } from "../definitions/api-definition.js";
import type { ApiDefinitions } from "../definitions/service.js";
import { ProblemError } from "../errors.js";
import { upsertEntities, type EntityInput } from "../graph/entities.js";
import { createLinks, type LinkInput } from "../graph/links.js";

export const DEMO_TENANT = "demo";

/**
 * The specification's example walk: tenant → index set → agreement → agreement product →
 * arrangement → access point relation → access point; 7 entities and 6 links, 13 relations.
 */
export const EXAMPLE_QUERY = `# access points of one agreement, found by its public id, in this tenant
Tenant ?tenant; entity:key \${tenantId}; link:hasIndexSet IndexSet:?indexSet.
Agreement ?agreement; attribute:publicId \${publicId}; link:inIndexSet ?indexSet; link:hasProduct AgreementProduct:?product.
AgreementProduct ?product; link:hasArrangement Arrangement:?arrangement.
Arrangement ?arrangement; link:hasAccessPointRelation AccessPointRelation:?relation.
AccessPointRelation ?relation; link:accessPoint AccessPoint:?accessPoint.
`;

/** The specification's example definition: two string parameters, the walk, a list `accessPoints`. */
export const EXAMPLE_DEFINITION: ApiDefinitionInput = {
  name: "Access points of an agreement",
  externalId: "agreement-access-points",
  version: "1.0",
  active: true,
  data: {
    queryParameters: [
      { name: "publicId", type: "string" },
      { name: "tenantId", type: "string" },
    ],
  },
  query: EXAMPLE_QUERY,
  transform: `{
  "accessPoints": result(?accessPoint) { externalId, publicId, id, accessPointType }
}`,
};

export interface ExampleAgreement {
  publicId: string;
  /** EAN code and type of each access point. */
  accessPoints: [string, string][];
}

export const DEMO_AGREEMENTS: ExampleAgreement[] = [
  { publicId: "AGR-1001", accessPoints: [["541448820000000011", "ELECTRICITY"], ["541448820000000028", "GAS"]] },
  { publicId: "AGR-1002", accessPoints: [["541448820000000035", "ELECTRICITY"]] },
];

/** The entities and links of the example graph for one tenant, in the shape EXAMPLE_QUERY walks. */
export function exampleGraph(tenant: string, agreements: ExampleAgreement[]): { entities: EntityInput[]; links: LinkInput[] } {
  const entities: EntityInput[] = [
    { type: "Tenant", key: tenant, attributes: { name: `Tenant ${tenant}` } },
    { type: "IndexSet", key: "AGREEMENTS", attributes: { name: "Agreements" } },
  ];
  const links: LinkInput[] = [{ from: { type: "Tenant", key: tenant }, relation: "hasIndexSet", to: { type: "IndexSet", key: "AGREEMENTS" } }];
  const ref = (type: string, key: string) => ({ type, key });
  for (const agreement of agreements) {
    const a = agreement.publicId;
    entities.push(
      { type: "Agreement", key: a, attributes: { publicId: a, status: "ACTIVE" } },
      { type: "AgreementProduct", key: `${a}-P`, attributes: { productCode: "FIXED-3Y" } },
      { type: "Arrangement", key: `${a}-ARR`, attributes: { startDate: "2024-01-01" } },
    );
    links.push(
      { from: ref("Agreement", a), relation: "inIndexSet", to: ref("IndexSet", "AGREEMENTS") },
      { from: ref("Agreement", a), relation: "hasProduct", to: ref("AgreementProduct", `${a}-P`) },
      { from: ref("AgreementProduct", `${a}-P`), relation: "hasArrangement", to: ref("Arrangement", `${a}-ARR`) },
    );
    for (const [ean, kind] of agreement.accessPoints) {
      entities.push(
        { type: "AccessPointRelation", key: `${a}-${ean}`, attributes: { role: "SUPPLY" } },
        { type: "AccessPoint", key: ean, attributes: { externalId: ean, publicId: `AP-${ean.slice(-4)}`, accessPointType: kind } },
      );
      links.push(
        { from: ref("Arrangement", `${a}-ARR`), relation: "hasAccessPointRelation", to: ref("AccessPointRelation", `${a}-${ean}`) },
        { from: ref("AccessPointRelation", `${a}-${ean}`), relation: "accessPoint", to: ref("AccessPoint", ean) },
      );
    }
  }
  return { entities, links };
}

/** Seeds the demo graph and the example definition; seeding twice changes nothing. */
export async function seedDemo(knex: Knex, definitions: ApiDefinitions, tenant = DEMO_TENANT): Promise<{ entities: number; links: number; apiDefinitions: number }> {
  const { entities, links } = exampleGraph(tenant, DEMO_AGREEMENTS);
  await upsertEntities(knex, tenant, entities);
  await createLinks(knex, tenant, links);
  try {
    await definitions.create(tenant, EXAMPLE_DEFINITION);
  } catch (err) {
    if (!(err instanceof ProblemError && err.status === 409)) throw err;
  }
  return { entities: entities.length, links: links.length, apiDefinitions: 1 };
}
