import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { ConfigError, loadConfig, type Role } from "../src/config.js";
import { ecKeyPair, rsaKeyPair } from "./support/tokens.js";

const SECRET = "a-secret-of-at-least-thirty-two-bytes!!";

function problemsOf(env: Record<string, string>, role: Role = "server"): string[] {
  try {
    loadConfig(env, role);
  } catch (err) {
    expect(err).to.be.instanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  expect.fail("loadConfig accepted the environment");
}

describe("configuration", () => {
  it("gives the documented defaults when only a secret is set", () => {
    const config = loadConfig({ JWT_SECRET: SECRET });
    expect(config.port).to.equal(3000);
    expect(config.databaseUrl).to.equal(undefined);
    expect(config.dataDir).to.equal("./data");
    expect(config.defaultTimeZone).to.equal("Europe/Brussels");
    expect(config.camunda7).to.equal(undefined);
    expect(config.zeebe).to.equal(undefined);
    expect(config.queryTimeoutMs).to.equal(5000);
    expect(config.transformTimeoutMs).to.equal(2000);
    expect(config.auth).to.include({ disabled: false, userClaim: "sub", tenantsClaim: "tenants", clockSkewSeconds: 5 });
  });

  it("reads JWT_TENANTS_CLAIM and JWT_CLOCK_SKEW_SECONDS, and refuses a skew out of range", () => {
    const config = loadConfig({ JWT_SECRET: SECRET, JWT_TENANTS_CLAIM: "org_ids", JWT_CLOCK_SKEW_SECONDS: "30" });
    expect(config.auth).to.include({ tenantsClaim: "org_ids", clockSkewSeconds: 30 });
    expect(problemsOf({ JWT_SECRET: SECRET, JWT_CLOCK_SKEW_SECONDS: "301" })).to.deep.equal([
      "JWT_CLOCK_SKEW_SECONDS: JWT_CLOCK_SKEW_SECONDS must be between 0 and 300",
    ]);
    expect(problemsOf({ JWT_SECRET: SECRET, JWT_CLOCK_SKEW_SECONDS: "-1" })).to.deep.equal([
      "JWT_CLOCK_SKEW_SECONDS: JWT_CLOCK_SKEW_SECONDS must be a whole number",
    ]);
  });

  it("reads every variable it knows", () => {
    const config = loadConfig({
      PORT: "8081",
      DATABASE_URL: "postgres://postgres@127.0.0.1:5432/test",
      DATA_DIR: "/var/lib/x",
      JWT_SECRET: SECRET,
      JWT_USER_CLAIM: "preferred_username",
      CAMUNDA_URL: "http://localhost:8080/engine-rest",
      ZEEBE_ADDRESS: "localhost:26500",
      DEFAULT_TIME_ZONE: "America/New_York",
      LOG_LEVEL: "debug",
    });
    expect(config).to.deep.include({
      port: 8081,
      databaseUrl: "postgres://postgres@127.0.0.1:5432/test",
      dataDir: "/var/lib/x",
      defaultTimeZone: "America/New_York",
      logLevel: "debug",
    });
    expect(config.camunda7?.url).to.equal("http://localhost:8080/engine-rest");
    expect(config.zeebe?.address).to.equal("localhost:26500");
    expect(config.auth.userClaim).to.equal("preferred_username");
  });

  it("reads the live-stream settings, with their defaults, and refuses values out of range", () => {
    expect(loadConfig({ JWT_SECRET: SECRET }).streams).to.deep.equal({ bufferBytes: 1048576, pingMs: 30000, debounceMs: 250 });
    expect(loadConfig({ JWT_SECRET: SECRET, STREAM_BUFFER_BYTES: "65536", STREAM_PING_MS: "500", STREAM_DEBOUNCE_MS: "0" }).streams).to.deep.equal({ bufferBytes: 65536, pingMs: 500, debounceMs: 0 });
    expect(problemsOf({ JWT_SECRET: SECRET, STREAM_BUFFER_BYTES: "100", STREAM_PING_MS: "99", STREAM_DEBOUNCE_MS: "-1" })).to.deep.equal([
      "STREAM_BUFFER_BYTES: STREAM_BUFFER_BYTES must be between 1024 and 1073741824",
      "STREAM_PING_MS: STREAM_PING_MS must be between 100 and 3600000",
      "STREAM_DEBOUNCE_MS: STREAM_DEBOUNCE_MS must be a whole number",
    ]);
  });

  it("refuses PORT=abc naming the variable", () => {
    expect(problemsOf({ JWT_SECRET: SECRET, PORT: "abc" })).to.deep.equal(["PORT: PORT must be a whole number"]);
  });

  it("refuses a port out of range", () => {
    expect(problemsOf({ JWT_SECRET: SECRET, PORT: "70000" })).to.deep.equal(["PORT: PORT must be between 0 and 65535"]);
  });

  it("refuses a DATABASE_URL that is not a PostgreSQL URL", () => {
    expect(problemsOf({ JWT_SECRET: SECRET, DATABASE_URL: "not a url" })[0]).to.match(/^DATABASE_URL: DATABASE_URL must be a URL/);
    expect(problemsOf({ JWT_SECRET: SECRET, DATABASE_URL: "mysql://localhost/db" })[0]).to.match(/^DATABASE_URL:/);
  });

  it("refuses to start with auth on but neither JWT_SECRET nor JWT_PUBLIC_KEY", () => {
    expect(problemsOf({})).to.deep.equal([
      "neither JWT_SECRET nor JWT_PUBLIC_KEY is set; set one, or AUTH_DISABLED=true for development only",
    ]);
  });

  it("accepts no key when AUTH_DISABLED=true", () => {
    expect(loadConfig({ AUTH_DISABLED: "true" }).auth.disabled).to.equal(true);
  });

  it("runs the workers alone without a JWT key, but not without an engine", () => {
    expect(problemsOf({}, "worker")).to.deep.equal(["the worker needs an engine: set CAMUNDA_URL (Camunda 7), ZEEBE_ADDRESS (Zeebe) or both"]);
    const worker = loadConfig({ ZEEBE_ADDRESS: "localhost:26500" }, "worker");
    expect(worker.role).to.equal("worker");
    expect(worker.zeebe?.address).to.equal("localhost:26500");
    expect(loadConfig({ CAMUNDA_URL: "http://localhost:8080/engine-rest" }, "worker").camunda7?.url).to.equal("http://localhost:8080/engine-rest");
    // The server still needs its key, engine or not.
    expect(problemsOf({ CAMUNDA_URL: "http://localhost:8080/engine-rest" })).to.have.length(1);
  });

  it("refuses both keys at once, a short secret, and a key that is not PEM", () => {
    const { publicPem } = rsaKeyPair();
    expect(problemsOf({ JWT_SECRET: SECRET, JWT_PUBLIC_KEY: publicPem })[0]).to.match(/both set/);
    expect(problemsOf({ JWT_SECRET: "short" })[0]).to.match(/at least 32 bytes/);
    expect(problemsOf({ JWT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----" })[0]).to.match(/not a PEM public key/);
  });

  it("picks RS256 for an RSA key and ES256 for a P-256 key, with escaped line breaks too", () => {
    const rsa = loadConfig({ JWT_PUBLIC_KEY: rsaKeyPair().publicPem }).auth;
    const ec = loadConfig({ JWT_PUBLIC_KEY: ecKeyPair().publicPem.replace(/\n/g, "\\n") }).auth;
    expect(rsa.disabled === false && rsa.key.kind === "public" && rsa.key.algorithm).to.equal("RS256");
    expect(ec.disabled === false && ec.key.kind === "public" && ec.key.algorithm).to.equal("ES256");
  });

  it("reads the worker settings, with their defaults", () => {
    const engines = { JWT_SECRET: SECRET, CAMUNDA_URL: "http://localhost:8080/engine-rest", ZEEBE_ADDRESS: "localhost:26500" };
    const defaults = loadConfig(engines);
    // Both engines read the same worker settings, each default applied once.
    const shared = { topics: { apiRequest: "api-request", calculateSeries: "calculate-series" }, maxTasks: 10, lockDurationMs: 30_000, defaultRetries: 3 };
    expect(defaults.camunda7).to.deep.equal({ url: "http://localhost:8080/engine-rest", ...shared, asyncResponseTimeoutMs: 10_000, workerId: undefined });
    expect(defaults.zeebe).to.deep.equal({ address: "localhost:26500", ...shared, tls: false, rootCertPath: undefined, oauth: undefined, tenantIds: undefined, streamJobs: false, streamPollIntervalMs: 10_000 });
    const custom = loadConfig({ ...engines, TOPIC_API_REQUEST: "api-req", WORKER_MAX_TASKS: "4", WORKER_LOCK_DURATION_MS: "60000", CAMUNDA_WORKER_ID: "w1" });
    const given = { topics: { apiRequest: "api-req", calculateSeries: "calculate-series" }, maxTasks: 4, lockDurationMs: 60_000 };
    expect(custom.camunda7).to.deep.include({ ...given, workerId: "w1" });
    expect(custom.zeebe).to.deep.include(given);
    expect(problemsOf({ JWT_SECRET: SECRET, WORKER_MAX_TASKS: "0" })).to.deep.equal(["WORKER_MAX_TASKS: WORKER_MAX_TASKS must be between 1 and 1000"]);
  });

  it("reads the database bounds, with their defaults, and keeps the graph time-out within the statement time-out", () => {
    expect(loadConfig({ JWT_SECRET: SECRET }).databaseTimeouts).to.deep.equal({
      connectMs: 5000,
      acquireMs: 10_000,
      statementMs: 30_000,
      idleMs: 30_000,
      idleInTransactionMs: 60_000,
      keepAliveMs: 10_000,
      probeMs: 800,
      startupMs: 60_000,
    });
    const custom = loadConfig({ JWT_SECRET: SECRET, DATABASE_STATEMENT_TIMEOUT_MS: "2000", QUERY_TIMEOUT_MS: "1000", DATABASE_KEEPALIVE_MS: "0", DATABASE_STARTUP_TIMEOUT_MS: "0" }).databaseTimeouts;
    expect(custom).to.include({ statementMs: 2000, keepAliveMs: 0, startupMs: 0 });
    expect(problemsOf({ JWT_SECRET: SECRET, DATABASE_STATEMENT_TIMEOUT_MS: "2000" })).to.deep.equal([
      "QUERY_TIMEOUT_MS (5000) must not be longer than DATABASE_STATEMENT_TIMEOUT_MS (2000)",
    ]);
    // /health answers within a second: its probe cannot wait longer.
    expect(problemsOf({ JWT_SECRET: SECRET, DATABASE_PROBE_TIMEOUT_MS: "1000" })).to.deep.equal([
      "DATABASE_PROBE_TIMEOUT_MS: DATABASE_PROBE_TIMEOUT_MS must be between 50 and 900",
    ]);
  });

  it("reads Zeebe TLS and OAuth, and refuses OAuth settings given only in part", () => {
    const config = loadConfig({ JWT_SECRET: SECRET, ZEEBE_ADDRESS: "zeebe:26500", ZEEBE_TLS: "true", ZEEBE_CLIENT_ID: "id", ZEEBE_CLIENT_SECRET: "s", ZEEBE_OAUTH_URL: "https://login.example/oauth/token" });
    expect(config.zeebe?.tls).to.equal(true);
    expect(config.zeebe?.oauth).to.deep.equal({ url: "https://login.example/oauth/token", clientId: "id", clientSecret: "s" });
    expect(problemsOf({ JWT_SECRET: SECRET, ZEEBE_CLIENT_ID: "id" })).to.deep.equal([
      "ZEEBE_CLIENT_ID, ZEEBE_CLIENT_SECRET and ZEEBE_OAUTH_URL go together: set all three for OAuth, or none",
    ]);
  });

  it("reads ZEEBE_TENANT_IDS as a list of tenant ids, and refuses ids Zeebe would refuse", () => {
    const zeebe = { JWT_SECRET: SECRET, ZEEBE_ADDRESS: "localhost:26500" };
    expect(loadConfig({ ...zeebe, ZEEBE_TENANT_IDS: " acme, globex-2 ,<default>,acme" }).zeebe?.tenantIds).to.deep.equal(["acme", "globex-2", "<default>"]);
    expect(loadConfig({ ...zeebe, ZEEBE_TENANT_IDS: "  " }).zeebe?.tenantIds).to.equal(undefined);
    const refused = "ZEEBE_TENANT_IDS: ZEEBE_TENANT_IDS must be a comma-separated list of tenant ids, each <default> or 1 to 31 letters, digits, _, - or .";
    for (const bad of ["acme,", "acme globex", "a".repeat(32), "acme;globex", "<other>"]) expect(problemsOf({ ...zeebe, ZEEBE_TENANT_IDS: bad }), bad).to.deep.equal([refused]);
  });

  it("reads ZEEBE_STREAM_JOBS and ZEEBE_STREAM_POLL_INTERVAL_MS, and refuses values that are not a flag or a pause", () => {
    const zeebe = { JWT_SECRET: SECRET, ZEEBE_ADDRESS: "localhost:26500" };
    expect(loadConfig({ ...zeebe, ZEEBE_STREAM_JOBS: "true", ZEEBE_STREAM_POLL_INTERVAL_MS: "2500" }).zeebe).to.deep.include({ streamJobs: true, streamPollIntervalMs: 2500 });
    expect(loadConfig({ ...zeebe, ZEEBE_STREAM_JOBS: "0" }).zeebe?.streamJobs).to.equal(false);
    expect(problemsOf({ ...zeebe, ZEEBE_STREAM_JOBS: "yes" })).to.deep.equal(["ZEEBE_STREAM_JOBS: ZEEBE_STREAM_JOBS must be true or false"]);
    expect(problemsOf({ ...zeebe, ZEEBE_STREAM_POLL_INTERVAL_MS: "50" })).to.deep.equal(["ZEEBE_STREAM_POLL_INTERVAL_MS: ZEEBE_STREAM_POLL_INTERVAL_MS must be between 100 and 3600000"]);
  });

  it("refuses a Camunda 7 long poll that a shutdown could not wait for", () => {
    const env = { JWT_SECRET: SECRET, CAMUNDA_URL: "http://localhost:8080/engine-rest" };
    expect(problemsOf({ ...env, CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: "30000" })).to.deep.equal([
      "CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS (30000) must be shorter than SHUTDOWN_TIMEOUT_MS (30000): a shutdown waits for the long poll in progress",
    ]);
    expect(loadConfig({ ...env, CAMUNDA_ASYNC_RESPONSE_TIMEOUT_MS: "30000", SHUTDOWN_TIMEOUT_MS: "60000" }).camunda7?.asyncResponseTimeoutMs).to.equal(30_000);
  });

  it("reads the CA file for the Zeebe gateway's certificate, and refuses one it cannot read", () => {
    const file = fileURLToPath(import.meta.url);
    const zeebe = { JWT_SECRET: SECRET, ZEEBE_ADDRESS: "localhost:26500" };
    expect(loadConfig({ ...zeebe, CAMUNDA_CUSTOM_ROOT_CERT_PATH: file }).zeebe?.rootCertPath).to.equal(file);
    expect(loadConfig(zeebe).zeebe?.rootCertPath).to.equal(undefined);
    expect(problemsOf({ JWT_SECRET: SECRET, CAMUNDA_CUSTOM_ROOT_CERT_PATH: "/no/such/ca.pem" })).to.deep.equal(["CAMUNDA_CUSTOM_ROOT_CERT_PATH: CAMUNDA_CUSTOM_ROOT_CERT_PATH must be a readable PEM file"]);
  });

  it("reads the calculation limits, with their defaults, and refuses values past their ceilings naming the variable", () => {
    expect(loadConfig({ JWT_SECRET: SECRET })).to.deep.include({ calculationTimeoutMs: 10_000, calculationMaxSteps: 1000, expressionMaxLength: 1000, expressionMaxDepth: 50 });
    expect(loadConfig({ JWT_SECRET: SECRET, CALCULATION_MAX_STEPS: "20", EXPRESSION_MAX_LENGTH: "2500", EXPRESSION_MAX_DEPTH: "100" })).to.deep.include({
      calculationMaxSteps: 20,
      expressionMaxLength: 2500,
      expressionMaxDepth: 100,
    });
    expect(problemsOf({ JWT_SECRET: SECRET, CALCULATION_MAX_STEPS: "0", EXPRESSION_MAX_LENGTH: "2501", EXPRESSION_MAX_DEPTH: "many" })).to.deep.equal([
      "CALCULATION_MAX_STEPS: CALCULATION_MAX_STEPS must be between 1 and 100000",
      "EXPRESSION_MAX_LENGTH: EXPRESSION_MAX_LENGTH must be between 1 and 2500",
      "EXPRESSION_MAX_DEPTH: EXPRESSION_MAX_DEPTH must be a whole number",
    ]);
  });

  it("refuses an unknown time zone, a bad Zeebe address, a bad Camunda URL and a bad log level, all at once", () => {
    const problems = problemsOf({
      JWT_SECRET: SECRET,
      DEFAULT_TIME_ZONE: "Mars/Olympus",
      ZEEBE_ADDRESS: "no-port",
      CAMUNDA_URL: "ftp://x",
      LOG_LEVEL: "loud",
    });
    expect(problems.map((p) => p.split(":")[0])).to.have.members(["DEFAULT_TIME_ZONE", "ZEEBE_ADDRESS", "CAMUNDA_URL", "LOG_LEVEL"]);
  });
});
