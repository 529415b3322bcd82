import type { Config } from "./config.js";
import { openDatabase, redactUrl, type Database } from "./db/database.js";
import { startPartitionUpkeep } from "./db/partitions.js";
import { startRollupUpkeep } from "./timeseries/rollup-store.js";
import { rollupFloor } from "./timeseries/retention.js";
import { createAuthenticator } from "./http/auth.js";
import { buildServer } from "./http/server.js";
import type { App } from "./http/types.js";
import type { Logger } from "./logger.js";
import { Metrics } from "./metrics.js";
import { MqttIngest } from "./mqtt/subscriber.js";
import { createServices, type Services } from "./services.js";
import { releaseAllInHand, removeStaleInHand } from "./tasks/in-hand.js";
import type { RunningWorker } from "./tasks/runner.js";
import { startCamunda7Worker } from "../workers/camunda7/worker.js";
import { startZeebeWorker } from "../workers/zeebe/worker.js";
import { errorText } from "./errors.js";

/** The running service: the one place that creates connections and wires the parts together. */
export interface Service {
  db: Database;
  services: Services;
  server: App;
  /** Starts listening; resolves to the address. */
  listen(): Promise<string>;
  /** Stops taking new work, waits for work in flight, then closes the database. */
  close(): Promise<void>;
  /**
   * Before exiting with tasks still in hand (the shutdown deadline passed): drops their rows in
   * `tasks_in_hand`, so they are run again rather than taken for tasks that ended the process.
   */
  abandon(): Promise<void>;
}

/** Rows of `tasks_in_hand` older than this are dropped when the workers start. */
export const TASKS_IN_HAND_HORIZON_MS = 7 * 24 * 3600 * 1000;

export async function createService(config: Config, logger: Logger): Promise<Service> {
  if (config.auth.disabled && config.role === "server") {
    logger.warn("AUTH IS DISABLED: every request is accepted as an admin. Never run like this outside development.", {
      setting: "AUTH_DISABLED=true",
    });
  }
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.databasePoolSize,
    queryTimeoutMs: config.queryTimeoutMs,
    timeouts: config.databaseTimeouts,
    onWarning: (message) => logger.warn("database", { message }),
  });
  logger.info("database ready", { kind: db.kind, location: db.kind === "embedded" ? config.dataDir : redactUrl(config.databaseUrl) });
  // The events' monthly partitions: the months ahead made, old ones dropped past EVENTS_RETENTION_DAYS (src/db/partitions.ts).
  const partitions = await startPartitionUpkeep(db.knex, {
    retentionDays: config.eventsRetentionDays,
    onWarning: (message) => logger.warn("events partitions", { message }),
    onDone: (upkeep) => (upkeep.created.length > 0 || upkeep.dropped.length > 0 || upkeep.deleted > 0) && logger.info("events partitions kept", { ...upkeep }),
  });
  // The rollups' invalidation log drained in the background (src/timeseries/rollup-store.ts).
  const rollups = startRollupUpkeep(db.knex, {
    floor: () => rollupFloor(config.eventsRetentionDays, new Date()),
    onWarning: (message) => logger.warn("events rollups", { message }),
  });
  let server: App;
  const services = createServices(config, db);
  const metrics = new Metrics();
  metrics.observeTransforms(() => services.transforms.stats());
  const workers: RunningWorker[] = [];
  try {
    server = await buildServer({ config, db, logger, authenticate: createAuthenticator(config.auth, undefined, logger), services, metrics, workers: () => workers });
  } catch (err) {
    await Promise.all([partitions.stop(), rollups.stop()]);
    await db.close();
    throw err;
  }
  let closing: Promise<void> | undefined;
  let mqtt: MqttIngest | undefined;
  return {
    db,
    services,
    server,
    async listen() {
      const address = await server.listen({ port: config.port, host: config.host });
      services.transforms.warm();
      // CAMUNDA_URL / ZEEBE_ADDRESS set: the workers run beside the REST server.
      if (config.camunda7 !== undefined || config.zeebe !== undefined) {
        await removeStaleInHand(db.knex, new Date(Date.now() - TASKS_IN_HAND_HORIZON_MS)).then(
          (removed) => removed > 0 && logger.info("dropped stale rows of tasks_in_hand", { removed }),
          (err: unknown) => logger.warn("could not drop stale rows of tasks_in_hand", { error: errorText(err) }),
        );
      }
      workers.push(...startWorkers(config, services, db, logger, metrics));
      // MQTT_URL set: events from devices, through the upload path (src/mqtt/).
      if (config.mqtt !== undefined) mqtt = new MqttIngest(config.mqtt, db.knex, logger, metrics.registry);
      return address;
    },
    close() {
      closing ??= (async () => {
        try {
          // Workers stop fetching and finish the tasks in hand while the server finishes its requests.
          await Promise.all([...workers.map((w) => w.stop()), server.close(), mqtt?.stop()]);
        } finally {
          await services.streams.stop();
          await services.transforms.close();
          await Promise.all([partitions.stop(), rollups.stop()]);
          await db.close();
        }
      })();
      return closing;
    },
    async abandon() {
      await releaseAllInHand(db.knex, workers.map((w) => w.inHandId));
    },
  };
}

/** A connection string without its password, fit for a log line. */
export { redactUrl } from "./db/database.js";

/** The process-engine workers the configuration asks for. */
function startWorkers(config: Config, services: Services, db: Database, logger: Logger, metrics: Metrics): RunningWorker[] {
  const deps = { database: db.knex, logger, metrics };
  return [
    ...(config.camunda7 !== undefined ? [startCamunda7Worker(services, config.camunda7, deps)] : []),
    ...(config.zeebe !== undefined ? [startZeebeWorker(services, config.zeebe, deps)] : []),
  ];
}
