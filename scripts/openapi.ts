// Writes the OpenAPI description the server serves at /openapi.json to docs/reference/openapi.json,
// for client generators: `npm run openapi`. test/http/openapi.test.ts fails when the committed file differs.
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig } from "../src/config.js";
import { openDatabase } from "../src/db/database.js";
import { createAuthenticator } from "../src/http/auth.js";
import { buildServer } from "../src/http/server.js";
import { createLogger } from "../src/logger.js";
import { Metrics } from "../src/metrics.js";
import { createServices } from "../src/services.js";

export const OPENAPI_PATH = "docs/reference/openapi.json";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
// Any secret: the description does not depend on it. The embedded database in memory is never written to.
const config = loadConfig({ JWT_SECRET: randomBytes(32).toString("hex"), DATA_DIR: "memory://", LOG_LEVEL: "silent" });
const db = await openDatabase({ databaseUrl: undefined, dataDir: "memory://", poolSize: 1 });
const services = createServices(config, db);
const app = await buildServer({ config, db, logger: createLogger("silent"), authenticate: createAuthenticator(config.auth), services, metrics: new Metrics(), workers: () => [] });
await app.ready();
const file = join(root, OPENAPI_PATH);
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, `${JSON.stringify(app.swagger(), null, 2)}\n`);
await app.close();
await services.transforms.close();
await db.close();
process.stdout.write(`wrote ${OPENAPI_PATH}\n`);
