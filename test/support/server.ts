import Transport from "winston-transport";
import { loadConfig, type Config } from "../../src/config.js";
import type { Database } from "../../src/db/database.js";
import { createAuthenticator } from "../../src/http/auth.js";
import { buildServer } from "../../src/http/server.js";
import type { App } from "../../src/http/types.js";
import { createLogger, type Logger } from "../../src/logger.js";
import { Metrics } from "../../src/metrics.js";
import { createServices, type Services } from "../../src/services.js";
import type { RunningWorker } from "../../src/tasks/runner.js";
import { adminToken, TEST_JWT_SECRET } from "./tokens.js";

/** Keeps every log entry in memory, so tests can read what was logged. */
export class MemoryTransport extends Transport {
  readonly entries: Record<string, unknown>[] = [];
  override log(info: Record<string, unknown>, next: () => void): void {
    this.entries.push(info);
    next();
  }
}

export interface TestServer {
  app: App;
  config: Config;
  logs: MemoryTransport;
  logger: Logger;
  metrics: Metrics;
  services: Services;
}

/** A server on an open test database, configured as from the environment `env` (HS256 by default). */
export async function testServer(db: Database, env: Record<string, string> = {}, workers: RunningWorker[] = []): Promise<TestServer> {
  const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: "info", ...env });
  const logs = new MemoryTransport();
  const logger = createLogger(config.logLevel, [logs]);
  const metrics = new Metrics();
  const services = createServices(config, db);
  metrics.observeTransforms(() => services.transforms.stats());
  const app = await buildServer({ config, db, logger, authenticate: createAuthenticator(config.auth, undefined, logger), services, metrics, workers: () => workers });
  app.addHook("onClose", () => services.transforms.close());
  await app.ready();
  return { app, config, logs, logger, metrics, services };
}

/** For a suite on one backend: a server and an admin token, made before its tests, the server closed after them. */
export function adminServer(ctx: { db: Database }): { readonly server: TestServer; readonly token: string } {
  const suite = {} as { server: TestServer; token: string };
  before(async () => {
    suite.server = await testServer(ctx.db);
    suite.token = await adminToken();
  });
  after(() => suite.server.app.close());
  return suite;
}

/** An answer's body without the `requestId` a problem+json carries (one per request), to compare two answers. */
export function withoutRequestId(body: string): string {
  return body.replace(/,"requestId":"[^"\\]*"/, "");
}
