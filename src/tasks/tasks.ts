import type { Services } from "../services.js";
import { invalidVariable, objectVariable, resultVariable, taskTenant, textVariable } from "./variables.js";

/** What a transport knows of a task besides its variables. */
export interface TaskContext {
  /** The engine's tenant of the task (Camunda 7 tenantId, Zeebe tenantId); a `tenantId` variable overrides it. */
  tenant?: string | null;
  /** The caller's user id (REST: the token's claim); in a process the `userId` variable gives it. */
  userId?: string;
}

export type OutputVariables = Record<string, unknown>;

/**
 * `api-request` (contract §6): runs an API definition and answers `{ <resultVariable>: result }`.
 * Throws a ProblemError: a 4xx code is a problem of the request or the definition (a BPMN error),
 * anything else a passing fault (a failure, retried).
 */
export async function apiRequest(services: Services, variables: Record<string, unknown>, context: TaskContext): Promise<OutputVariables> {
  const externalId = textVariable(variables.apiDefinitionExternalId, "apiDefinitionExternalId", true)!;
  const output = resultVariable(variables.resultVariable);
  const tenant = taskTenant(variables.tenantId, context.tenant);
  const userId = context.userId ?? textVariable(variables.userId, "userId");
  const result = await services.apiDefinitions.request({ tenant, userId }, externalId, objectVariable(variables.queryParameters, "queryParameters"));
  return { [output]: result };
}

/**
 * `calculate-series` (contract §6): a calculation definition by externalId, or an item's series
 * (a derived item is calculated), answered as `{ <resultVariable>: { buckets } or { value } }`.
 */
export async function calculateSeries(services: Services, variables: Record<string, unknown>, context: TaskContext): Promise<OutputVariables> {
  const externalId = textVariable(variables.calculationDefinitionExternalId, "calculationDefinitionExternalId");
  const itemId = textVariable(variables.itemId, "itemId");
  if ((externalId === undefined) === (itemId === undefined)) throw invalidVariable("calculationDefinitionExternalId", "or itemId: give exactly one");
  const output = resultVariable(variables.resultVariable);
  const tenant = taskTenant(variables.tenantId, context.tenant);
  const request = {
    inputs: objectVariable(variables.inputs, "inputs") as never,
    eventDateRange: objectVariable(variables.eventDateRange, "eventDateRange") as never,
    queryOptions: objectVariable(variables.queryOptions, "queryOptions") as never,
  };
  const result =
    externalId !== undefined
      ? await services.calculations.calculate(tenant, externalId, request)
      : await services.timeSeries.itemQuery(tenant, itemId!, { eventDateRange: request.eventDateRange, queryOptions: request.queryOptions });
  // Contract §6 answers buckets or a value: an item's raw events are not a calculated series.
  if (!("buckets" in result) && !("value" in result)) {
    throw invalidVariable("queryOptions", "needs an aggregation for an item that is not calculated: calculate-series answers buckets or a value, not raw events");
  }
  return { [output]: result };
}
