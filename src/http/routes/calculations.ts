import { Type } from "typebox";
import type { CalculationDefinitionInput } from "../../calculation/definition.js";
import type { CalculateRequest } from "../../calculation/service.js";
import { requireTenant } from "../request.js";
import type { App, ServerDeps } from "../server.js";
import { ExternalId, Uuid } from "../schemas.js";

const Body = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 500 })),
    externalId: ExternalId,
    calculationType: Type.String({ description: "EXPRESSION, STATE-EXPRESSION or CALCULATION" }),
    active: Type.Optional(Type.Boolean()),
    data: Type.Record(Type.String(), Type.Unknown(), { description: "spec §2.2 data block; README for CALCULATION" }),
  },
  { additionalProperties: false },
);
const Params = Type.Object({ externalId: ExternalId });

export function calculationRoutes(app: App, { services }: ServerDeps): void {
  const calculations = services.calculations;
  const admin = { access: "admin" as const };
  const tags = ["calculation definitions"];

  app.post("/calculation-definitions", { config: admin, schema: { summary: "Create a calculation definition (every problem listed)", tags, body: Body } }, async (request, reply) =>
    reply.status(201).send(await calculations.create(requireTenant(request), request.body as unknown as CalculationDefinitionInput)),
  );
  app.get("/calculation-definitions", { config: admin, schema: { summary: "List calculation definitions", tags } }, async (request) => ({
    calculationDefinitions: await calculations.list(requireTenant(request)),
  }));
  app.get("/calculation-definitions/:externalId", { config: admin, schema: { summary: "Read a calculation definition", tags, params: Params } }, async (request) =>
    calculations.get(requireTenant(request), request.params.externalId),
  );
  app.put("/calculation-definitions/:externalId", { config: admin, schema: { summary: "Replace a calculation definition", tags, params: Params, body: Body } }, async (request) =>
    calculations.replace(requireTenant(request), request.params.externalId, request.body as unknown as CalculationDefinitionInput),
  );
  app.delete("/calculation-definitions/:externalId", { config: admin, schema: { summary: "Delete a calculation definition", tags, params: Params } }, async (request, reply) => {
    await calculations.delete(requireTenant(request), request.params.externalId);
    return reply.status(204).send();
  });
  app.post(
    "/calculation-definitions/:externalId/calculate",
    {
      config: admin,
      schema: {
        summary: "Calculate: { buckets } for TIMESERIES, { value } for VALUE and STATE-EXPRESSION",
        tags,
        params: Params,
        body: Type.Object(
          {
            inputs: Type.Optional(Type.Record(Type.String(), Type.Object({ items: Type.Optional(Type.Array(Type.Object({ id: Uuid }))), value: Type.Optional(Type.Number()) }))),
            eventDateRange: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
            queryOptions: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => calculations.calculate(requireTenant(request), request.params.externalId, request.body as CalculateRequest),
  );
}
