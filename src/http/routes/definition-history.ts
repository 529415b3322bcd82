import { Type, type TSchema } from "typebox";
import { HISTORY_ACTIONS, type Actor, type HistoryAction, type HistoryEntry } from "../../db/definition-history.js";
import { actorOf, requireTenant } from "../request.js";
import { ExternalId } from "../schemas.js";
import type { App } from "../types.js";

/** What the history routes of one kind of definition call. */
interface Versioned<D> {
  history(tenant: string, externalId: string): Promise<HistoryEntry<D>[]>;
  restore(tenant: string, externalId: string, version: number, actor: Actor): Promise<D>;
}

/**
 * `GET {base}/{externalId}/history` and `POST {base}/{externalId}/history/{version}/restore`, for
 * API and Calculation Definitions alike (docs/reference/endpoints.md#definition-history).
 */
export function definitionHistoryRoutes<D>(app: App, options: { base: string; noun: string; tags: string[]; record: TSchema; service: Versioned<D> }): void {
  const { base, noun, tags, record, service } = options;
  const admin = { access: "admin" as const };
  const Entry = Type.Object(
    {
      version: Type.Integer({ minimum: 1 }),
      action: Type.Unsafe<HistoryAction>(Type.String({ enum: [...HISTORY_ACTIONS] })),
      changedBy: Type.Object({ userId: Type.Union([Type.String(), Type.Null()]), name: Type.Union([Type.String(), Type.Null()]) }, { additionalProperties: false }),
      changedAt: Type.String({ format: "date-time" }),
      restoredFrom: Type.Optional(Type.Integer({ description: "restore: the version brought back" })),
      renamedFrom: Type.Optional(Type.String({ description: "rename: the externalId before" })),
      renamedTo: Type.Optional(Type.String({ description: "rename: the externalId after" })),
      // The definition after the change; for a delete (and a rename away), as it was removed.
      record,
    },
    { additionalProperties: false },
  );
  const Params = Type.Object({ externalId: ExternalId });
  const operation = noun.replace(/(^| )(\w)/g, (_m, _s, c: string) => c.toUpperCase());

  app.get(
    `${base}/:externalId/history`,
    {
      config: admin,
      schema: {
        operationId: `get${operation}History`,
        summary: `The history of a ${noun}, newest first: each create, update, activate, deactivate, delete, restore and rename, by whom, when, with the whole record`,
        tags,
        params: Params,
        response: { 200: Type.Object({ history: Type.Array(Entry) }, { additionalProperties: false }) },
      },
    },
    async (request) => ({ history: await service.history(requireTenant(request), request.params.externalId) }),
  );

  app.post(
    `${base}/:externalId/history/:version/restore`,
    {
      config: admin,
      schema: {
        operationId: `restore${operation}Version`,
        summary: `Restore a version of a ${noun}: a new version equal to that record, checked as a save is; a deleted one is made again`,
        tags,
        params: Type.Object({ externalId: ExternalId, version: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }) }),
        response: { 200: record },
      },
    },
    async (request) => service.restore(requireTenant(request), request.params.externalId, request.params.version, actorOf(request)),
  );
}
