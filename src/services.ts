import type { Config } from "./config.js";
import type { Database } from "./db/database.js";
import { ApiDefinitions } from "./definitions/service.js";
import { TimeSeries } from "./timeseries/service.js";
import { DEFAULT_TRANSFORM_LIMITS } from "./transform/transform.js";

/** The domain services every transport (REST, Camunda 7, Zeebe) calls. */
export interface Services {
  apiDefinitions: ApiDefinitions;
  timeSeries: TimeSeries;
}

export function createServices(config: Config, db: Database): Services {
  const timeSeries = new TimeSeries(db.knex, config.defaultTimeZone);
  return {
    timeSeries,
    apiDefinitions: new ApiDefinitions(db.knex, db.graph, timeSeries, {
      query: { timeoutMs: config.queryTimeoutMs, maxRows: config.queryMaxRows },
      transform: { ...DEFAULT_TRANSFORM_LIMITS, timeoutMs: config.transformTimeoutMs },
    }),
  };
}
