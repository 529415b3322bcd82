/**
 * The configuration: every setting is declared once, by group, under src/config/ (its variable,
 * kind with bounds, default, doc); the `Config` type, the defaults, the checks and
 * docs/reference/configuration.md (`npm run docs:config`) are derived from those declarations.
 */
export { type AuthConfig } from "./config/auth.js";
export { camunda7Settings, type Camunda7Auth, type Camunda7Settings } from "./config/camunda7.js";
export { type DatabaseTimeouts } from "./config/database.js";
export { processEnvironment } from "./config/environment.js";
export { ConfigError, configSecrets, loadConfig, SETTING_GROUPS, type Config } from "./config/load.js";
export { type LogLevel, type Role } from "./config/server.js";
export { type MqttSettings } from "./config/mqtt.js";
export { type StreamSettings } from "./config/streams.js";
export { workerSettings, type ClientCredentials, type WorkerSettings, type WorkerTopics } from "./config/workers.js";
export { zeebeSettings, type ZeebeAuth, type ZeebeClientCertificate, type ZeebeSettings } from "./config/zeebe.js";

import { databaseSettings } from "./config/database.js";

/** DATA_DIR's default, also where the demo keeps its development secret before the configuration is read. */
export const DEFAULT_DATA_DIR = databaseSettings.dataDir.default;
