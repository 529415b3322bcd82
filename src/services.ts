import type { Config } from "./config.js";
import type { Database } from "./db/database.js";
import { Calculations } from "./calculation/service.js";
import { ApiDefinitions } from "./definitions/service.js";
import { TimeSeries } from "./timeseries/service.js";
import { DEFAULT_TRANSFORM_LIMITS } from "./transform/transform.js";

/** The domain services every transport (REST, Camunda 7, Zeebe) calls. */
export interface Services {
  apiDefinitions: ApiDefinitions;
  timeSeries: TimeSeries;
  calculations: Calculations;
}

export function createServices(config: Config, db: Database): Services {
  const timeSeries = new TimeSeries(db.knex, config.defaultTimeZone);
  const query = { timeoutMs: config.queryTimeoutMs, maxRows: config.queryMaxRows };
  const calculations = new Calculations(db.knex, db.graph, timeSeries, {
    timeoutMs: config.calculationTimeoutMs,
    query,
    steps: { maxSteps: config.calculationMaxSteps, expression: { maxLength: config.expressionMaxLength, maxDepth: config.expressionMaxDepth } },
  });
  timeSeries.deriveWith((tenant, externalId, request) => calculations.calculate(tenant, externalId, request));
  return {
    timeSeries,
    calculations,
    apiDefinitions: new ApiDefinitions(db.knex, db.graph, timeSeries, {
      query: { timeoutMs: config.queryTimeoutMs, maxRows: config.queryMaxRows },
      transform: { ...DEFAULT_TRANSFORM_LIMITS, timeoutMs: config.transformTimeoutMs },
    }),
  };
}
