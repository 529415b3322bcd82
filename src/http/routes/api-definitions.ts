import { Type } from "typebox";
import type { ApiDefinitionInput } from "../../definitions/api-definition.js";
import { EXTERNAL_ID_MAX_LENGTH } from "../../input.js";
import { apiRequest } from "../../tasks/tasks.js";
import { actorOf, requireTenant } from "../request.js";
import { definitionHistoryRoutes } from "./definition-history.js";
import { DateRangeBody, ExternalId, NoContent, PageFields, PageQuery, QueryOptionsBody } from "../schemas.js";
import type { App, ServerDeps } from "../types.js";

const DefinitionBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 500 })),
    externalId: ExternalId,
    version: Type.Optional(Type.String({ maxLength: 100 })),
    active: Type.Optional(Type.Boolean({ default: true })),
    data: Type.Optional(
      Type.Object(
        {
          queryParameters: Type.Optional(
            Type.Array(Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }), type: Type.Optional(Type.String()) }, { additionalProperties: false }), {
              maxItems: 100,
            }),
          ),
          timelineParameters: Type.Optional(
            Type.Array(
              Type.Object(
                {
                  name: Type.String({ minLength: 1, maxLength: 100 }),
                  // Kept as sent (the service checks them when saving and reads them when running).
                  eventDateRange: Type.Optional(Type.Unsafe<Record<string, unknown>>(DateRangeBody)),
                  queryOptions: Type.Optional(Type.Unsafe<Record<string, unknown>>(QueryOptionsBody)),
                },
                { additionalProperties: false },
              ),
              { maxItems: 100 },
            ),
          ),
        },
        { additionalProperties: true },
      ),
    ),
    query: Type.String({ minLength: 1, maxLength: 100_000 }),
    transform: Type.Optional(Type.String({ maxLength: 100_000 })),
  },
  { additionalProperties: false },
);
const Definition = Type.Object(
  {
    id: Type.String(),
    name: Type.Union([Type.String(), Type.Null()]),
    externalId: Type.String(),
    version: Type.Union([Type.String(), Type.Null()]),
    active: Type.Boolean(),
    data: Type.Record(Type.String(), Type.Unknown()),
    query: Type.String(),
    transform: Type.String({ description: "empty when the query output is the answer" }),
    createdAt: Type.String({ format: "date-time" }),
    updatedAt: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);
const Params = Type.Object({ externalId: ExternalId });
const QueryParameters = Type.Record(Type.String(), Type.Unknown(), { description: "parameter name to value (string, number or boolean)" });

export function apiDefinitionRoutes(app: App, { services }: ServerDeps): void {
  const definitions = services.apiDefinitions;
  const admin = { access: "admin" as const };
  const tags = ["api-definitions"];

  app.post(
    "/api-definitions",
    { config: admin, schema: { operationId: "createApiDefinition", summary: "Create an API definition (validated: every problem listed)", tags, body: DefinitionBody, response: { 201: Definition } } },
    async (request, reply) => reply.status(201).send(await definitions.create(requireTenant(request), request.body, actorOf(request))),
  );

  app.get(
    "/api-definitions",
    {
      config: admin,
      schema: {
        operationId: "listApiDefinitions",
        summary: "List API definitions by externalId",
        tags,
        querystring: Type.Object(
          { ...PageQuery, active: Type.Optional(Type.Boolean()) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ apiDefinitions: Type.Array(Definition), ...PageFields }) },
      },
    },
    async (request) => definitions.list(requireTenant(request), request.query),
  );

  app.get(
    "/api-definitions/:externalId",
    { config: admin, schema: { operationId: "getApiDefinition", summary: "Read an API definition", tags, params: Params, response: { 200: Definition } } },
    async (request) => definitions.get(requireTenant(request), request.params.externalId),
  );

  app.put(
    "/api-definitions/:externalId",
    { config: admin, schema: { operationId: "replaceApiDefinition", summary: "Replace an API definition (the body's externalId may rename it)", tags, params: Params, body: DefinitionBody, response: { 200: Definition } } },
    async (request) => definitions.replace(requireTenant(request), request.params.externalId, request.body, actorOf(request)),
  );

  app.patch(
    "/api-definitions/:externalId",
    {
      config: admin,
      schema: {
        operationId: "setApiDefinitionActive",
        summary: "Activate or deactivate an API definition",
        tags,
        params: Params,
        body: Type.Object({ active: Type.Boolean() }, { additionalProperties: false }),
        response: { 200: Definition },
      },
    },
    async (request) => definitions.setActive(requireTenant(request), request.params.externalId, request.body.active, actorOf(request)),
  );

  app.delete(
    "/api-definitions/:externalId",
    { config: admin, schema: { operationId: "deleteApiDefinition", summary: "Delete an API definition", tags, params: Params, response: { 204: NoContent } } },
    async (request, reply) => {
      await definitions.delete(requireTenant(request), request.params.externalId, actorOf(request));
      return reply.status(204).send(null);
    },
  );

  definitionHistoryRoutes(app, { base: "/api-definitions", noun: "API definition", tags, record: Definition, service: definitions });

  app.post(
    "/api-definitions/test",
    {
      config: admin,
      schema: {
        operationId: "testApiDefinition",
        summary: "Run an unsaved definition: the query output, the transform's result and the definition's problems",
        tags,
        body: Type.Object(
          { definition: Type.Intersect([Type.Omit(DefinitionBody, ["externalId"]), Type.Object({ externalId: Type.Optional(ExternalId) })]), queryParameters: Type.Optional(QueryParameters) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            queryOutput: Type.Union([Type.Record(Type.String(), Type.Array(Type.Unknown())), Type.Null()]),
            result: Type.Unknown(),
            problems: Type.Array(Type.Record(Type.String(), Type.Unknown())),
          }),
        },
      },
    },
    async (request) => {
      const tenant = requireTenant(request);
      const definition: ApiDefinitionInput = { externalId: "unsaved", ...request.body.definition };
      return definitions.test({ tenant, userId: request.principal?.userId }, definition, request.body.queryParameters);
    },
  );

  app.post(
    "/task-backend/tasks/:segment/api/request",
    {
      config: { access: "user" },
      schema: {
        operationId: "requestApi",
        summary: "Request an API definition by externalId; the answer is exactly the transform's result",
        tags: ["tasks"],
        params: Type.Object({ segment: Type.String({ pattern: "^[a-z0-9-]+$", maxLength: 100 }) }),
        body: Type.Object({ apiDefinitionExternalId: Type.String({ minLength: 1, maxLength: EXTERNAL_ID_MAX_LENGTH }), queryParameters: Type.Optional(QueryParameters) }, { additionalProperties: false }),
        response: { 200: Type.Unknown({ description: "the transform's JSON result, no envelope" }) },
      },
    },
    async (request, reply) => {
      // The same task the process-engine workers run; tenant and user come from the header and the token.
      const output = await apiRequest(services, request.body, { tenant: requireTenant(request), userId: request.principal?.userId });
      // Serialised here: the answer is any JSON value, `null` included, with no envelope.
      return reply.type("application/json").send(JSON.stringify(output.result ?? null));
    },
  );
}

