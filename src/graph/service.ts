import type { Knex } from "knex";
import { ProblemError } from "../errors.js";
import { deleteEntity, getEntity, listEntities, upsertEntities, type EntityInput, type EntityPage } from "./entities.js";
import type { EntityJson } from "./entity.js";
import { createLinks, type LinkInput, type LinkJson } from "./links.js";
import { graphSchema, type GraphSchema } from "./schema.js";

/** The graph of a tenant as the transports see it: entities by (type, key), and the links between them. */
export class Graph {
  constructor(private readonly knex: Knex) {}

  /** Inserts or updates entities by (type, key); all or nothing. */
  upsert(tenant: string, entities: EntityInput[]): Promise<EntityJson[]> {
    return upsertEntities(this.knex, tenant, entities);
  }

  /** Creates directed links between existing entities; all or nothing. */
  link(tenant: string, links: LinkInput[]): Promise<LinkJson[]> {
    return createLinks(this.knex, tenant, links);
  }

  list(tenant: string, options: { type?: string; limit: number; offset: number }): Promise<EntityPage> {
    return listEntities(this.knex, tenant, options);
  }

  /** Entity types with their attribute names, and relations with the types they join (bounded). */
  schema(tenant: string): Promise<GraphSchema> {
    return graphSchema(this.knex, tenant);
  }

  /** One entity; a 404 when the tenant has none with this id. */
  async get(tenant: string, id: string): Promise<EntityJson> {
    const entity = await getEntity(this.knex, tenant, id);
    if (entity === undefined) throw entityNotFound(id);
    return entity;
  }

  /** Deletes an entity with its links (and an Item's events); a 404 when the tenant has none with this id. */
  async delete(tenant: string, id: string): Promise<void> {
    if (!(await deleteEntity(this.knex, tenant, id))) throw entityNotFound(id);
  }
}

function entityNotFound(id: string): ProblemError {
  return new ProblemError("INVALID_REQUEST", `there is no entity with id ${id} in this tenant`, { status: 404 });
}
