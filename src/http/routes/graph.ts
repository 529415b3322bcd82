import { Type } from "typebox";
import type { App, ServerDeps } from "../types.js";
import { requireTenant } from "../request.js";
import { TEXT_MAX_BYTES } from "../../input.js";
import { SCHEMA_LIMIT } from "../../graph/schema.js";
import { NoContent, PageFields, PageQuery, Uuid } from "../schemas.js";

const MAX_BATCH = 10_000;
/** An entity's type or a link's relation; the key of an entity: bounded in bytes by their indexes (docs/reference/input-limits.md). */
const Name = Type.String({ minLength: 1, "x-maxBytes": TEXT_MAX_BYTES.name });
const Key = Type.String({ minLength: 1, "x-maxBytes": TEXT_MAX_BYTES.key });
const Entity = Type.Object(
  { id: Uuid, type: Type.String(), key: Type.String() },
  { additionalProperties: true, description: "id, type, key and the attributes flattened beside them" },
);
const EntityRef = Type.Union([
  Type.Object({ id: Uuid }, { additionalProperties: false }),
  Type.Object({ type: Name, key: Key }, { additionalProperties: false }),
]);
const Handle = Type.Object({ id: Uuid, type: Type.String(), key: Type.String() });

export function graphRoutes(app: App, { services }: ServerDeps): void {
  const graph = services.graph;
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
                  key: Key,
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
    async (request) => ({ entities: await graph.upsert(requireTenant(request), request.body.entities) }),
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
    async (request) => ({ links: await graph.link(requireTenant(request), request.body.links) }),
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
    async (request) => graph.list(requireTenant(request), request.query),
  );

  app.get(
    "/graph/schema",
    {
      config: { access: "admin" },
      schema: {
        operationId: "getGraphSchema",
        summary: "Summarise the tenant's graph: entity types with attribute names, relations with the types they join",
        description: `At most ${SCHEMA_LIMIT} types, ${SCHEMA_LIMIT} relation rows and ${SCHEMA_LIMIT} attribute names per type; \`truncated\` says when more exist.`,
        tags: ["graph"],
        response: {
          200: Type.Object({
            types: Type.Array(Type.Object({ type: Type.String(), count: Type.Integer(), attributes: Type.Array(Type.String()) })),
            relations: Type.Array(Type.Object({ relation: Type.String(), from: Type.String(), to: Type.String(), count: Type.Integer() })),
            truncated: Type.Boolean(),
          }),
        },
      },
    },
    async (request) => graph.schema(requireTenant(request)),
  );

  app.get(
    "/graph/entities/:id",
    {
      config: { access: "admin" },
      schema: { operationId: "getEntity", summary: "Read one entity", tags: ["graph"], params: Type.Object({ id: Uuid }), response: { 200: Entity } },
    },
    async (request) => graph.get(requireTenant(request), request.params.id),
  );

  app.delete(
    "/graph/entities/:id",
    {
      config: { access: "admin" },
      schema: { operationId: "deleteEntity", summary: "Delete an entity with its links (and an Item's events)", tags: ["graph"], params: Type.Object({ id: Uuid }), response: { 204: NoContent } },
    },
    async (request, reply) => {
      await graph.delete(requireTenant(request), request.params.id);
      return reply.status(204).send(null);
    },
  );
}
