import { Type } from "typebox";
import { ProblemError } from "../../errors.js";
import { deleteEntity, getEntity, listEntities, upsertEntities } from "../../graph/entities.js";
import { createLinks } from "../../graph/links.js";
import type { App, ServerDeps } from "../types.js";
import { requireTenant } from "../request.js";
import { NoContent, PageFields, PageQuery, Uuid } from "../schemas.js";

const MAX_BATCH = 10_000;
const Name = Type.String({ minLength: 1, maxLength: 200 });
const Entity = Type.Object(
  { id: Uuid, type: Type.String(), key: Type.String() },
  { additionalProperties: true, description: "id, type, key and the attributes flattened beside them" },
);
const EntityRef = Type.Union([
  Type.Object({ id: Uuid }, { additionalProperties: false }),
  Type.Object({ type: Name, key: Type.String({ minLength: 1, maxLength: 1000 }) }, { additionalProperties: false }),
]);
const Handle = Type.Object({ id: Uuid, type: Type.String(), key: Type.String() });

export function graphRoutes(app: App, { db }: ServerDeps): void {
  app.post(
    "/graph/entities",
    {
      config: { access: "admin" },
      schema: {
        operationId: "upsertEntities",
        summary: "Insert or update entities by (type, key); all or nothing",
        tags: ["graph"],
        body: Type.Object(
          {
            entities: Type.Array(
              Type.Object(
                {
                  type: Name,
                  key: Type.String({ minLength: 1, maxLength: 1000 }),
                  attributes: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
                  id: Type.Optional(Uuid),
                },
                { additionalProperties: false },
              ),
              { maxItems: MAX_BATCH },
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ entities: Type.Array(Entity) }) },
      },
    },
    async (request) => ({ entities: await upsertEntities(db.knex, requireTenant(request), request.body.entities) }),
  );

  app.post(
    "/graph/links",
    {
      config: { access: "admin" },
      schema: {
        operationId: "createLinks",
        summary: "Create directed links between existing entities; all or nothing",
        tags: ["graph"],
        body: Type.Object(
          {
            links: Type.Array(Type.Object({ from: EntityRef, relation: Name, to: EntityRef }, { additionalProperties: false }), {
              maxItems: MAX_BATCH,
            }),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ links: Type.Array(Type.Object({ from: Handle, relation: Type.String(), to: Handle })) }) },
      },
    },
    async (request) => ({ links: await createLinks(db.knex, requireTenant(request), request.body.links) }),
  );

  app.get(
    "/graph/entities",
    {
      config: { access: "admin" },
      schema: {
        operationId: "listEntities",
        summary: "List entities, optionally of one type, ordered by type and key",
        tags: ["graph"],
        querystring: Type.Object(
          { type: Type.Optional(Name), ...PageQuery },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ entities: Type.Array(Entity), ...PageFields }),
        },
      },
    },
    async (request) => listEntities(db.knex, requireTenant(request), request.query),
  );

  app.get(
    "/graph/entities/:id",
    {
      config: { access: "admin" },
      schema: { operationId: "getEntity", summary: "Read one entity", tags: ["graph"], params: Type.Object({ id: Uuid }), response: { 200: Entity } },
    },
    async (request) => {
      const entity = await getEntity(db.knex, requireTenant(request), request.params.id);
      if (entity === undefined) throw entityNotFound(request.params.id);
      return entity;
    },
  );

  app.delete(
    "/graph/entities/:id",
    {
      config: { access: "admin" },
      schema: { operationId: "deleteEntity", summary: "Delete an entity with its links (and an Item's events)", tags: ["graph"], params: Type.Object({ id: Uuid }), response: { 204: NoContent } },
    },
    async (request, reply) => {
      if (!(await deleteEntity(db.knex, requireTenant(request), request.params.id))) throw entityNotFound(request.params.id);
      return reply.status(204).send(null);
    },
  );
}

function entityNotFound(id: string): ProblemError {
  return new ProblemError("INVALID_REQUEST", `there is no entity with id ${id} in this tenant`, { status: 404 });
}
