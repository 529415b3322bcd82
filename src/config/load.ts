import { processEnvironment, type Env } from "./environment.js";
import { secretsIn, urlSecrets } from "../secrets.js";
import { authGroup, authSettings, readAuth, type AuthConfig } from "./auth.js";
import { camunda7Declarations, camunda7Group, camunda7Settings, readCamunda7Connection, type Camunda7Settings } from "./camunda7.js";
import { databaseGroup, databaseSettings, databaseTimeoutSettings, type DatabaseTimeouts } from "./database.js";
import { calculationSettings, graphQuerySettings, limitGroups, requestSettings, timeSeriesSettings, transformSettings } from "./limits.js";
import { serverGroup, serverSettings, type Role } from "./server.js";
import { readSettings, withDefaults, type Group, type Settings, type Values } from "./setting.js";
import { mqttDeclarations, mqttGroup, readMqtt, type MqttSettings } from "./mqtt.js";
import { streamGroup, streamSettings, type StreamSettings } from "./streams.js";
import { workerDeclarations, workersGroup, workerTopicSettings } from "./workers.js";
import { readZeebeConnection, zeebeDeclarations, zeebeGroup, zeebeSettings, type ZeebeSettings } from "./zeebe.js";

/** Every group of settings, in the order of the reference. */
export const SETTING_GROUPS: readonly Group[] = [serverGroup, databaseGroup, authGroup, ...limitGroups, workersGroup, camunda7Group, zeebeGroup, streamGroup, mqttGroup];

/** The settings whose values are fields of {@link Config} as they are. */
const flatSettings = { ...serverSettings, ...databaseSettings, ...requestSettings, ...timeSeriesSettings, ...graphQuerySettings, ...transformSettings, ...calculationSettings };

/**
 * Everything the server and the workers read from the environment, validated once at start-up.
 * Nothing else in the code base reads `process.env`.
 */
export interface Config extends Values<typeof flatSettings> {
  role: Role;
  auth: AuthConfig;
  /** The Camunda 7 external-task worker (CAMUNDA_URL and the worker settings); absent: not started. */
  camunda7: Camunda7Settings | undefined;
  /** The Zeebe job workers (ZEEBE_ADDRESS, ZEEBE_TLS, OAuth and the worker settings); absent: not started. */
  zeebe: ZeebeSettings | undefined;
  /** Bounds of the database connections (DATABASE_*_TIMEOUT_MS, DATABASE_KEEPALIVE_MS). */
  databaseTimeouts: DatabaseTimeouts;
  /** Live streams over WebSocket (contract §10). */
  streams: StreamSettings;
  /** The MQTT subscriber (MQTT_URL and its settings); absent: not started. */
  mqtt: MqttSettings | undefined;
}

/** Thrown when the environment holds a value the service cannot start with. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

/** Reads and checks the environment; every problem is reported at once in a {@link ConfigError}. */
export function loadConfig(env: Env = processEnvironment(), role: Role = "server"): Config {
  const read = <S extends Settings>(settings: S) => readSettings(settings, env);
  const flat = read(flatSettings);
  const timeouts = read(databaseTimeoutSettings);
  const topics = read(workerTopicSettings);
  const workers = read(workerDeclarations);
  const camunda7 = read(camunda7Declarations);
  const zeebe = read(zeebeDeclarations);
  const streams = read(streamSettings);
  const mqtt = read(mqttDeclarations);
  const authReading = read(authSettings);
  const readings = [flat, timeouts, topics, workers, camunda7, zeebe, streams, mqtt];
  const problems = [...readings.flatMap((r) => r.issues), ...authReading.issues];
  // The cross-field checks run once every value has its kind (as the auth settings, read apart).
  const valid = readings.every((r) => r.issues.length === 0);
  // The workers alone serve no API, so they need no key to check tokens with.
  const auth: AuthConfig | undefined =
    role === "worker" ? { disabled: true, userClaim: env.JWT_USER_CLAIM ?? authSettings.userClaim.default } : authReading.issues.length === 0 ? readAuth(authReading.given, problems) : undefined;
  if (valid && role === "worker" && camunda7.given.url === undefined && zeebe.given.address === undefined) {
    problems.push("the worker needs an engine: set CAMUNDA_URL (Camunda 7), ZEEBE_ADDRESS or ZEEBE_GRPC_ADDRESS (Zeebe), or both");
  }
  const values = withDefaults(flatSettings, flat.given);
  const databaseTimeouts = withDefaults(databaseTimeoutSettings, timeouts.given);
  // A graph query is a database statement: its own time-out cannot be the longer one.
  if (valid && values.queryTimeoutMs > databaseTimeouts.statementMs) {
    problems.push(`QUERY_TIMEOUT_MS (${values.queryTimeoutMs}) must not be longer than DATABASE_STATEMENT_TIMEOUT_MS (${databaseTimeouts.statementMs})`);
  }
  let engines: Pick<Config, "camunda7" | "zeebe"> | undefined;
  const mqttSettings = valid ? readMqtt(mqtt.given, problems) : undefined;
  if (valid) {
    const given = { topics: topics.given, ...workers.given };
    problems.push(...readings.flatMap((r) => r.conflicts));
    const c7 = readCamunda7Connection(camunda7.given, problems);
    const zb = readZeebeConnection(zeebe.given, zeebe.names.oauthUrl, problems);
    const { tls, rootCertPath, tenantIds, streamJobs, streamPollIntervalMs } = zeebe.given;
    engines = {
      camunda7: c7 && camunda7Settings(c7.url, { ...given, auth: c7.auth, asyncResponseTimeoutMs: camunda7.given.asyncResponseTimeoutMs, workerId: camunda7.given.workerId }),
      zeebe: zb && zeebeSettings(zb.address, { ...given, ...zb, tls, rootCertPath, tenantIds, streamJobs, streamPollIntervalMs }),
    };
    // A shutdown lets the Camunda 7 long poll in progress finish: it must fit in the shutdown's time.
    const longPoll = engines.camunda7?.asyncResponseTimeoutMs;
    if (longPoll !== undefined && longPoll >= values.shutdownTimeoutMs) {
      problems.push(`CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS (${longPoll}) must be shorter than SHUTDOWN_TIMEOUT_MS (${values.shutdownTimeoutMs}): a shutdown waits for the long poll in progress`);
    }
  }
  if (auth === undefined || engines === undefined || problems.length > 0) throw new ConfigError(problems);
  return { role, ...values, auth, databaseTimeouts, streams: withDefaults(streamSettings, streams.given), mqtt: mqttSettings, ...engines };
}

/**
 * Every secret value the configuration holds, for the logger's redactor: each {@link Secret}, and
 * the password (or credential parameters) of the database URL.
 */
export function configSecrets(config: Config): string[] {
  return [...secretsIn(config), ...urlSecrets(config.databaseUrl), ...urlSecrets(config.mqtt?.url)];
}
