import { Type } from "typebox";
import type { CalculationData } from "../../calculation/definition.js";
import { actorOf, requireTenant } from "../request.js";
import { definitionHistoryRoutes } from "./definition-history.js";
import { Bucket, DateRangeBody, ExternalId, NoContent, PageFields, PageQuery, QueryOptionsBody, Uuid } from "../schemas.js";
import type { App, ServerDeps } from "../types.js";
import { CalculationDataBody, CalculationTypeBody } from "../series-schemas.js";

const Body = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 500 })),
    externalId: ExternalId,
    // Any string and any object here: the service checks both and lists every problem.
    calculationType: CalculationTypeBody,
    active: Type.Optional(Type.Boolean()),
    data: CalculationDataBody,
  },
  { additionalProperties: false },
);
const Params = Type.Object({ externalId: ExternalId });
const Definition = Type.Object(
  {
    id: Type.String({ format: "uuid" }),
    name: Type.String(),
    externalId: Type.String(),
    calculationType: Type.String(),
    active: Type.Boolean(),
    data: Type.Unsafe<CalculationData>(Type.Record(Type.String(), Type.Unknown(), { description: "spec §2.2 data block" })),
    createdAt: Type.String({ format: "date-time" }),
    updatedAt: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);
/** `{ buckets }` for a TIMESERIES result, `{ value }` for VALUE and STATE-EXPRESSION. */
const Result = Type.Union([Type.Object({ buckets: Type.Array(Bucket) }, { additionalProperties: false }), Type.Object({ value: Type.Union([Type.Number(), Type.Null()]) }, { additionalProperties: false })]);

const CalculateBody = {
  inputs: Type.Optional(Type.Record(Type.String(), Type.Object({ items: Type.Optional(Type.Array(Type.Object({ id: Uuid }))), value: Type.Optional(Type.Number()) }))),
  eventDateRange: Type.Optional(DateRangeBody),
  queryOptions: Type.Optional(QueryOptionsBody),
};
const Problems = Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: "the definition's problems, or the run's failure; empty when it ran" });
/** What `calculate` answers, with the problems; neither buckets nor value when the definition has problems. */
const TestResult = Type.Object(
  { buckets: Type.Optional(Type.Array(Bucket)), value: Type.Optional(Type.Union([Type.Number(), Type.Null()])), problems: Problems },
  { additionalProperties: false },
);

export function calculationRoutes(app: App, { services }: ServerDeps): void {
  const calculations = services.calculations;
  const admin = { access: "admin" as const };
  const tags = ["calculation definitions"];

  app.post(
    "/calculation-definitions",
    { config: admin, schema: { operationId: "createCalculationDefinition", summary: "Create a calculation definition (every problem listed)", tags, body: Body, response: { 201: Definition } } },
    async (request, reply) =>
    reply.status(201).send(await calculations.create(requireTenant(request), request.body, actorOf(request))),
  );
  app.get(
    "/calculation-definitions",
    {
      config: admin,
      schema: {
        operationId: "listCalculationDefinitions",
        summary: "List calculation definitions by externalId",
        tags,
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: { 200: Type.Object({ calculationDefinitions: Type.Array(Definition), ...PageFields }) },
      },
    },
    async (request) => calculations.list(requireTenant(request), request.query),
  );
  app.get(
    "/calculation-definitions/:externalId",
    { config: admin, schema: { operationId: "getCalculationDefinition", summary: "Read a calculation definition", tags, params: Params, response: { 200: Definition } } },
    async (request) => calculations.get(requireTenant(request), request.params.externalId),
  );
  app.put(
    "/calculation-definitions/:externalId",
    { config: admin, schema: { operationId: "replaceCalculationDefinition", summary: "Replace a calculation definition", tags, params: Params, body: Body, response: { 200: Definition } } },
    async (request) => calculations.replace(requireTenant(request), request.params.externalId, request.body, actorOf(request)),
  );
  app.delete(
    "/calculation-definitions/:externalId",
    { config: admin, schema: { operationId: "deleteCalculationDefinition", summary: "Delete a calculation definition", tags, params: Params, response: { 204: NoContent } } },
    async (request, reply) => {
      await calculations.delete(requireTenant(request), request.params.externalId, actorOf(request));
      return reply.status(204).send(null);
    },
  );
  definitionHistoryRoutes(app, { base: "/calculation-definitions", noun: "calculation definition", tags, record: Definition, service: calculations });
  app.post(
    "/calculation-definitions/:externalId/calculate",
    {
      config: admin,
      schema: {
        operationId: "calculate",
        summary: "Calculate: { buckets } for TIMESERIES, { value } for VALUE and STATE-EXPRESSION",
        tags,
        params: Params,
        body: Type.Object(CalculateBody, { additionalProperties: false }),
        response: { 200: Result },
      },
    },
    async (request) => calculations.calculate(requireTenant(request), request.params.externalId, request.body),
  );
  app.post(
    "/calculation-definitions/test",
    {
      config: admin,
      schema: {
        operationId: "testCalculationDefinition",
        summary: "Run an unsaved definition: what calculate answers, and the definition's problems (nothing stored)",
        tags,
        body: Type.Object(
          { definition: Type.Intersect([Type.Omit(Body, ["externalId"]), Type.Object({ externalId: Type.Optional(ExternalId) })]), ...CalculateBody },
          { additionalProperties: false },
        ),
        response: { 200: TestResult },
      },
    },
    async (request) => {
      const { definition, ...run } = request.body;
      return calculations.test(requireTenant(request), { externalId: "unsaved", ...definition }, run);
    },
  );
}
