import type { Config } from "./config.js";
import type { Database } from "./db/database.js";
import { Calculations } from "./calculation/service.js";
import { ApiDefinitions } from "./definitions/service.js";
import { StreamHub } from "./streams/hub.js";
import { Graph } from "./graph/service.js";
import { TimeSeries } from "./timeseries/service.js";
import { TransformPool } from "./transform/pool.js";
import { DEFAULT_TRANSFORM_LIMITS } from "./transform/transform.js";

/** The domain services every transport (REST, Camunda 7, Zeebe) calls. */
export interface Services {
  apiDefinitions: ApiDefinitions;
  timeSeries: TimeSeries;
  calculations: Calculations;
  /** Entities and links (the admin graph routes). */
  graph: Graph;
  /** Live streams of this process (WebSocket subscribers), fed by every process's ingestion. */
  streams: StreamHub;
  /** The child processes transforms run in; closed with the service. */
  transforms: TransformPool;
}

export function createServices(config: Config, db: Database): Services {
  // Calculations read series through a reader of their own, which answers no derived items;
  // the time series the transports use answer those through the calculations. No late wiring.
  const query = { timeoutMs: config.queryTimeoutMs, maxRows: config.queryMaxRows };
  const rollupZones = config.rollupZones.split(",").map((zone) => zone.trim());
  const calculations = new Calculations(db.knex, db.graph, new TimeSeries(db.knex, config.defaultTimeZone, undefined, undefined, config.eventsRetentionDays, rollupZones), {
    timeoutMs: config.calculationTimeoutMs,
    query,
    steps: { maxSteps: config.calculationMaxSteps, expression: { maxLength: config.expressionMaxLength, maxDepth: config.expressionMaxDepth } },
  });
  const timeSeries = new TimeSeries(
    db.knex,
    config.defaultTimeZone,
    undefined,
    (tenant, externalId, request) => calculations.calculate(tenant, externalId, request),
    config.eventsRetentionDays,
    rollupZones,
  );
  const transforms = new TransformPool({
    processes: config.transformProcesses,
    timeoutMs: config.transformTimeoutMs,
    memoryMb: config.transformMemoryMb,
    maxResultBytes: config.transformMaxResultBytes,
    maxQueue: config.transformMaxQueue,
  });
  const streams = new StreamHub(db.knex, db.notifications, { debounceMs: config.streams.debounceMs }, (tenant, itemId) => timeSeries.latestBucket(tenant, itemId));
  return {
    timeSeries,
    streams,
    calculations,
    graph: new Graph(db.knex),
    transforms,
    apiDefinitions: new ApiDefinitions(db.knex, db.graph, timeSeries, transforms, {
      query,
      transform: { ...DEFAULT_TRANSFORM_LIMITS, timeoutMs: config.transformTimeoutMs },
    }),
  };
}
