import type { Knex } from "knex";
import type { ApiDefinitionInput } from "../definitions/api-definition.js";
import { ProblemError } from "../errors.js";
import { upsertEntities, type EntityInput } from "../graph/entities.js";
import { createLinks, type LinkInput } from "../graph/links.js";
import type { Services } from "../services.js";
import { NET_CALCULATION, siteEvents, siteGraph } from "./series.js";

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

export interface DemoSeeded {
  entities: number;
  links: number;
  events: number;
  apiDefinitions: number;
  calculationDefinitions: number;
}

/**
 * Seeds the demo into a tenant: the contract graph and the example API Definition, the Site with its
 * metered Items and their events, a derived Item and the stored Calculation Definition. Seeding twice
 * changes nothing (upserts; an event sent again replaces itself; a stored definition is kept as it is).
 */
export async function seedDemo(knex: Knex, services: Pick<Services, "apiDefinitions" | "calculations" | "timeSeries">, tenant = DEMO_TENANT): Promise<DemoSeeded> {
  const contract = exampleGraph(tenant, DEMO_AGREEMENTS);
  const site = siteGraph(tenant);
  const entities = [...contract.entities, ...site.entities];
  const links = [...contract.links, ...site.links];
  await upsertEntities(knex, tenant, entities);
  await createLinks(knex, tenant, links);
  const { stored } = await services.timeSeries.ingest(tenant, siteEvents(tenant));
  await keepIfStored(() => services.apiDefinitions.create(tenant, EXAMPLE_DEFINITION));
  await keepIfStored(() => services.calculations.create(tenant, NET_CALCULATION));
  return { entities: entities.length, links: links.length, events: stored, apiDefinitions: 1, calculationDefinitions: 1 };
}

/** Creates a definition unless one of that externalId is stored already (a restart, or the user's own edit). */
async function keepIfStored(create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (err) {
    if (!(err instanceof ProblemError && err.status === 409)) throw err;
  }
}
