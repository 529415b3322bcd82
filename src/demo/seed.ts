import type { Knex } from "knex";
import { upsertEntities, type EntityInput } from "../graph/entities.js";
import { createLinks, type LinkInput } from "../graph/links.js";

export const DEMO_TENANT = "demo";

/**
 * A small energy-contract graph in the shape of the specification's example: a tenant with an
 * index set of agreements; each agreement has a product, the product an arrangement, the
 * arrangement access points. Upserted, so seeding twice changes nothing.
 */
export async function seedDemo(knex: Knex, tenant = DEMO_TENANT): Promise<{ entities: number; links: number }> {
  const entities: EntityInput[] = [
    { type: "Tenant", key: tenant, attributes: { name: "Demo Energy" } },
    { type: "IndexSet", key: "AGREEMENTS", attributes: { name: "Agreements" } },
  ];
  const links: LinkInput[] = [{ from: { type: "Tenant", key: tenant }, relation: "hasIndexSet", to: { type: "IndexSet", key: "AGREEMENTS" } }];
  const agreements = [
    { publicId: "AGR-1001", points: [["541448820000000011", "ELECTRICITY"], ["541448820000000028", "GAS"]] },
    { publicId: "AGR-1002", points: [["541448820000000035", "ELECTRICITY"]] },
  ] as const;
  for (const agreement of agreements) {
    const a = agreement.publicId;
    entities.push(
      { type: "Agreement", key: a, attributes: { publicId: a, status: "ACTIVE" } },
      { type: "AgreementProduct", key: `${a}-P`, attributes: { productCode: "FIXED-3Y" } },
      { type: "Arrangement", key: `${a}-ARR`, attributes: { startDate: "2024-01-01" } },
    );
    links.push(
      { from: { type: "Agreement", key: a }, relation: "inIndexSet", to: { type: "IndexSet", key: "AGREEMENTS" } },
      { from: { type: "Agreement", key: a }, relation: "hasProduct", to: { type: "AgreementProduct", key: `${a}-P` } },
      { from: { type: "AgreementProduct", key: `${a}-P` }, relation: "hasArrangement", to: { type: "Arrangement", key: `${a}-ARR` } },
    );
    for (const [ean, kind] of agreement.points) {
      entities.push({ type: "AccessPoint", key: ean, attributes: { externalId: ean, publicId: `AP-${ean.slice(-4)}`, accessPointType: kind } });
      links.push({ from: { type: "Arrangement", key: `${a}-ARR` }, relation: "hasAccessPoint", to: { type: "AccessPoint", key: ean } });
    }
  }
  await upsertEntities(knex, tenant, entities);
  await createLinks(knex, tenant, links);
  return { entities: entities.length, links: links.length };
}
