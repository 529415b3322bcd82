import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SignJWT } from "jose";
import { DEFAULT_DATA_DIR, loadConfig, processEnvironment } from "./config.js";
import { demoEnvironment } from "./demo/environment.js";
import { DEMO_TENANT, EXAMPLE_DEFINITION, seedDemo } from "./demo/seed.js";
import { exitOnStartFailure, processLogger, runService } from "./run.js";

/**
 * The newcomer's entry point: the production server, plus what a first run needs. It listens on
 * 127.0.0.1 unless HOST says otherwise, since it prints an admin token. When no JWT key is
 * configured, a development secret is made once and kept in DATA_DIR; demo data is seeded into
 * the tenant `demo`; an admin token and a working request are printed.
 */
async function demo(): Promise<void> {
  const env = demoEnvironment(processEnvironment());
  const dataDir = env.DATA_DIR ?? DEFAULT_DATA_DIR;
  const keyConfigured = [env.JWT_SECRET, env.JWT_PUBLIC_KEY].some((v) => v !== undefined && v.trim() !== "") || env.AUTH_DISABLED === "true";
  if (!keyConfigured) env.JWT_SECRET = developmentSecret(dataDir);
  // A configuration problem rejects demo(): exitOnStartFailure prints it and exits 2.
  const config = loadConfig(env);
  const logger = processLogger(config);
  await runService(config, logger, async (service) => {
    const seeded = await seedDemo(service.db.knex, service.services);
    logger.info("demo data ready", { tenant: DEMO_TENANT, ...seeded });
    const base = `http://localhost:${config.port}`;
    const lines = [`\nThe service runs on ${base} (OpenAPI description: ${base}/openapi.json; admin console: ${base}/console).`];
    if (config.auth.disabled === false && config.auth.key.kind === "secret") {
      const token = await new SignJWT({ roles: ["admin"], [config.auth.tenantsClaim]: [DEMO_TENANT] })
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setSubject("demo-admin")
        .setIssuedAt()
        .setExpirationTime("12h")
        .sign(config.auth.key.secret.bytes());
      lines.push(
        `An admin token of the tenant ${DEMO_TENANT} for the next 12 hours:`,
        `  export TOKEN=${token}`,
        "Request the example API definition (the access points of agreement AGR-1001):",
        `  curl -s -X POST '${base}/task-backend/tasks/demo/api/request' -H "Authorization: Bearer $TOKEN" -H 'X-TENANT-ID: ${DEMO_TENANT}' \\`,
        `       -H 'Content-Type: application/json' -d '{"apiDefinitionExternalId":"${EXAMPLE_DEFINITION.externalId}","queryParameters":{"publicId":"AGR-1001"}}'`,
        "Browse the graph:",
        `  curl -s '${base}/graph/entities?type=AccessPoint' -H "Authorization: Bearer $TOKEN" -H 'X-TENANT-ID: ${DEMO_TENANT}'`,
      );
    } else {
      lines.push("Try:", `  curl -s '${base}/health'`);
    }
    process.stdout.write(`${lines.join("\n")}\n\n`);
  });
}

/**
 * A random HS256 secret made on the first demo run and kept (owner-only) beside the embedded
 * database; with the database in memory (`memory://`) it is kept in memory too, for this run only.
 */
function developmentSecret(dataDir: string): string {
  if (dataDir.startsWith("memory://")) return randomBytes(48).toString("base64url");
  const file = join(dataDir, "dev-jwt-secret");
  try {
    return readFileSync(file, "utf8").trim();
  } catch {
    mkdirSync(dataDir, { recursive: true });
    const secret = randomBytes(48).toString("base64url");
    writeFileSync(file, secret, { mode: 0o600 });
    return secret;
  }
}

demo().catch((err: unknown) => exitOnStartFailure(err));
