import { fileURLToPath } from "node:url";
import { inspect } from "node:util";
import { expect } from "chai";
import { ConfigError, configSecrets, loadConfig, type Role } from "../src/config.js";
import { Secret } from "../src/secrets.js";
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

  it("refuses to start with auth on but no way to check tokens", () => {
    expect(problemsOf({})).to.deep.equal([
      "none of JWT_SECRET, JWT_PUBLIC_KEY, JWT_JWKS_URL and OIDC_ISSUER_URL is set; set one, or AUTH_DISABLED=true for development only",
    ]);
  });

  it("reads an identity provider's key set, its timing, algorithms, claim paths and role map", () => {
    const oidc = loadConfig({ OIDC_ISSUER_URL: "https://kc.example.com/realms/main", JWT_ROLES_CLAIM: "realm_access.roles", JWT_ROLE_MAP: "realm-admin=admin, ops=admin" }).auth;
    expect(oidc.disabled === false && oidc.key).to.deep.equal({
      kind: "remote",
      oidcIssuerUrl: "https://kc.example.com/realms/main",
      algorithms: ["RS256", "PS256", "ES256", "EdDSA"],
      cacheMaxAgeMs: 600_000,
      cooldownMs: 30_000,
      timeoutMs: 5_000,
    });
    expect(oidc).to.deep.include({ issuer: "https://kc.example.com/realms/main", rolesClaim: "realm_access.roles" });
    expect(oidc.disabled === false && [...(oidc.roleMap ?? [])]).to.deep.equal([["realm-admin", ["admin"]], ["ops", ["admin"]]]);
    const jwks = loadConfig({ JWT_JWKS_URL: "https://login.example.com/jwks.json", JWT_ALGORITHMS: "ES256, EdDSA", JWT_JWKS_COOLDOWN_MS: "0" }).auth;
    expect(jwks.disabled === false && jwks.key).to.deep.include({ kind: "remote", jwksUrl: "https://login.example.com/jwks.json", algorithms: ["ES256", "EdDSA"], cooldownMs: 0 });
    expect(jwks.disabled === false && jwks.issuer).to.equal(undefined);
  });

  it("refuses two ways to check tokens, a bad algorithm list or role map, and an issuer disagreeing with OIDC_ISSUER_URL", () => {
    const oidc = { OIDC_ISSUER_URL: "https://kc.example.com/realms/main" };
    expect(problemsOf({ ...oidc, JWT_SECRET: SECRET })).to.deep.equal(["JWT_SECRET and JWT_JWKS_URL or OIDC_ISSUER_URL are both set: choose one way to check tokens"]);
    expect(problemsOf({ ...oidc, JWT_ALGORITHMS: "RS256,HS256" })[0]).to.match(/^JWT_ALGORITHMS: JWT_ALGORITHMS must be a comma-separated list of RS256/);
    expect(problemsOf({ ...oidc, JWT_ROLE_MAP: "admin" })[0]).to.match(/^JWT_ROLE_MAP: JWT_ROLE_MAP must be a comma-separated list of provider-role=role pairs/);
    expect(problemsOf({ ...oidc, JWT_ISSUER: "https://elsewhere.example.com" })).to.deep.equal(["JWT_ISSUER and OIDC_ISSUER_URL disagree: the issuer is OIDC_ISSUER_URL, leave JWT_ISSUER out"]);
    expect(problemsOf({ JWT_SECRET: SECRET, JWT_ALGORITHMS: "RS256" })).to.deep.equal(["JWT_ALGORITHMS applies to a key set only: set JWT_JWKS_URL or OIDC_ISSUER_URL, or leave it out"]);
    expect(problemsOf({ OIDC_ISSUER_URL: "kc.example.com" })[0]).to.match(/^OIDC_ISSUER_URL: OIDC_ISSUER_URL must be an http\(s\) URL/);
  });

  it("accepts no key when AUTH_DISABLED=true", () => {
    expect(loadConfig({ AUTH_DISABLED: "true" }).auth.disabled).to.equal(true);
  });

  it("names CAMUNDA_URL, and never its value, when its userinfo is not valid percent-encoding", () => {
    const problems = problemsOf({ CAMUNDA_URL: "http://alice:p%E0%A4%A@127.0.0.1:3699/engine-rest" }, "worker");
    expect(problems).to.include("CAMUNDA_URL: the password in its userinfo is not valid percent-encoding");
    expect(problems.filter((p) => p.includes("alice") || p.includes("%E0"))).to.deep.equal([]);
  });

  it("runs the workers alone without a JWT key, but not without an engine", () => {
    expect(problemsOf({}, "worker")).to.deep.equal(["the worker needs an engine: set CAMUNDA_URL (Camunda 7), ZEEBE_ADDRESS or ZEEBE_GRPC_ADDRESS (Zeebe), or both"]);
    expect(loadConfig({ ZEEBE_GRPC_ADDRESS: "grpc://localhost:26500" }, "worker").zeebe?.address).to.equal("localhost:26500");
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
    expect(defaults.camunda7).to.deep.equal({ url: "http://localhost:8080/engine-rest", auth: { kind: "none" }, ...shared, asyncResponseTimeoutMs: 10_000, workerId: undefined });
    expect(defaults.zeebe).to.deep.equal({
      address: "localhost:26500",
      ...shared,
      tls: false,
      rootCertPath: undefined,
      mtls: undefined,
      auth: { strategy: "NONE" },
      tenantIds: undefined,
      streamJobs: false,
      streamPollIntervalMs: 10_000,
    });
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
    const auth = config.zeebe?.auth;
    expect(auth).to.deep.include({ strategy: "OAUTH", url: "https://login.example/oauth/token", clientId: "id" });
    expect(auth?.strategy === "OAUTH" && auth.clientSecret.reveal()).to.equal("s");
    expect(problemsOf({ JWT_SECRET: SECRET, ZEEBE_CLIENT_ID: "id" })).to.deep.equal([
      "ZEEBE_CLIENT_ID, ZEEBE_CLIENT_SECRET, ZEEBE_OAUTH_URL go together (OAUTH): set all of them, or none",
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

  describe("connection settings under the names @camunda8/sdk users write", () => {
    const base = { JWT_SECRET: SECRET };
    const file = fileURLToPath(import.meta.url);

    it("reads ZEEBE_GRPC_ADDRESS (grpcs:// is TLS), CAMUNDA_OAUTH_URL, CAMUNDA_TOKEN_SCOPE, CAMUNDA_ZEEBE_OAUTH_AUDIENCE and CAMUNDA_AUTH_STRATEGY", () => {
      const zeebe = loadConfig({
        ...base,
        ZEEBE_GRPC_ADDRESS: "grpcs://abc.bru-2.zeebe.camunda.io:443",
        CAMUNDA_AUTH_STRATEGY: "OAUTH",
        ZEEBE_CLIENT_ID: "client",
        ZEEBE_CLIENT_SECRET: "client-secret",
        CAMUNDA_OAUTH_URL: "https://login.cloud.camunda.io/oauth/token",
        CAMUNDA_TOKEN_SCOPE: "api://zeebe/.default",
        CAMUNDA_ZEEBE_OAUTH_AUDIENCE: "zeebe.camunda.io",
      }).zeebe;
      expect(zeebe).to.deep.include({ address: "abc.bru-2.zeebe.camunda.io:443", tls: true });
      expect(zeebe?.auth).to.deep.include({ strategy: "OAUTH", url: "https://login.cloud.camunda.io/oauth/token", clientId: "client", scope: "api://zeebe/.default", audience: "zeebe.camunda.io" });
      expect(loadConfig({ ...base, ZEEBE_GRPC_ADDRESS: "grpc://localhost:26500" }).zeebe).to.deep.include({ address: "localhost:26500", tls: false });
      // The SDK's legacy form (no scheme) takes TLS from ZEEBE_TLS / CAMUNDA_SECURE_CONNECTION.
      expect(loadConfig({ ...base, ZEEBE_GRPC_ADDRESS: "zeebe:26500", CAMUNDA_SECURE_CONNECTION: "true" }).zeebe).to.deep.include({ address: "zeebe:26500", tls: true });
      // The Java and Go clients' name of the OAuth URL (Camunda SaaS credential files up to 8.5).
      const legacy = loadConfig({ ...base, ZEEBE_ADDRESS: "zeebe:443", ZEEBE_TLS: "true", ZEEBE_CLIENT_ID: "c", ZEEBE_CLIENT_SECRET: "s", ZEEBE_AUTHORIZATION_SERVER_URL: "https://login.example/token" });
      expect(legacy.zeebe?.auth).to.deep.include({ strategy: "OAUTH", url: "https://login.example/token" });
    });

    it("accepts two names of one setting that agree, and refuses two that disagree, naming both and neither value", () => {
      const agreeing = loadConfig({ ...base, ZEEBE_ADDRESS: "Zeebe:26500", ZEEBE_GRPC_ADDRESS: "grpcs://zeebe:26500", ZEEBE_TLS: "1", CAMUNDA_SECURE_CONNECTION: "true" });
      expect(agreeing.zeebe).to.deep.include({ address: "zeebe:26500", tls: true });
      const disagree = (a: string, b: string) => `${a} and ${b} disagree: they name the same setting; set one of them, or both to the same value`;
      expect(problemsOf({ ...base, ZEEBE_ADDRESS: "a:26500", ZEEBE_GRPC_ADDRESS: "grpc://b:26500" })).to.deep.equal([disagree("ZEEBE_ADDRESS", "ZEEBE_GRPC_ADDRESS")]);
      expect(problemsOf({ ...base, ZEEBE_GRPC_ADDRESS: "grpcs://b:443", ZEEBE_TLS: "false" })).to.deep.equal([
        disagree("ZEEBE_TLS", "the scheme of ZEEBE_GRPC_ADDRESS (grpcs:// is TLS, grpc:// plaintext)"),
      ]);
      expect(problemsOf({ ...base, ZEEBE_ADDRESS: "b:443", ZEEBE_TLS: "true", CAMUNDA_SECURE_CONNECTION: "false" })).to.deep.equal([disagree("ZEEBE_TLS", "CAMUNDA_SECURE_CONNECTION")]);
      const oauth = { ...base, ZEEBE_ADDRESS: "b:443", ZEEBE_CLIENT_ID: "c", ZEEBE_CLIENT_SECRET: "s" };
      expect(problemsOf({ ...oauth, ZEEBE_OAUTH_URL: "https://a.example/token", CAMUNDA_OAUTH_URL: "https://b.example/token" })).to.deep.equal([disagree("ZEEBE_OAUTH_URL", "CAMUNDA_OAUTH_URL")]);
      expect(problemsOf({ ...oauth, CAMUNDA_OAUTH_URL: "https://a.example/token", ZEEBE_TOKEN_AUDIENCE: "a", CAMUNDA_ZEEBE_OAUTH_AUDIENCE: "b" })).to.deep.equal([
        disagree("ZEEBE_TOKEN_AUDIENCE", "CAMUNDA_ZEEBE_OAUTH_AUDIENCE"),
      ]);
      expect(problemsOf({ ...base, ZEEBE_GRPC_ADDRESS: "http://b:26500" })).to.deep.equal([
        "ZEEBE_GRPC_ADDRESS: ZEEBE_GRPC_ADDRESS must be grpc://host:port (plaintext) or grpcs://host:port (TLS), like grpc://localhost:26500",
      ]);
    });

    it("reads the BASIC and BEARER strategies, and refuses a strategy without its settings or beside another's", () => {
      const zeebe = { ...base, ZEEBE_ADDRESS: "localhost:26500" };
      const basic = loadConfig({ ...zeebe, CAMUNDA_AUTH_STRATEGY: "BASIC", CAMUNDA_BASIC_AUTH_USERNAME: "demo", CAMUNDA_BASIC_AUTH_PASSWORD: "pw-1" }).zeebe?.auth;
      expect(basic?.strategy === "BASIC" && [basic.username, basic.password.reveal()]).to.deep.equal(["demo", "pw-1"]);
      // Without CAMUNDA_AUTH_STRATEGY the strategy whose settings are given is taken.
      const bearer = loadConfig({ ...zeebe, CAMUNDA_OAUTH_TOKEN: "tok-1" }).zeebe?.auth;
      expect(bearer?.strategy === "BEARER" && bearer.token.reveal()).to.equal("tok-1");
      expect(loadConfig({ ...zeebe, CAMUNDA_AUTH_STRATEGY: "NONE" }).zeebe?.auth).to.deep.equal({ strategy: "NONE" });
      expect(problemsOf({ ...zeebe, CAMUNDA_AUTH_STRATEGY: "BASIC", CAMUNDA_BASIC_AUTH_USERNAME: "demo" })).to.deep.equal(["CAMUNDA_AUTH_STRATEGY=BASIC needs CAMUNDA_BASIC_AUTH_PASSWORD"]);
      expect(problemsOf({ ...zeebe, CAMUNDA_AUTH_STRATEGY: "NONE", ZEEBE_CLIENT_ID: "c" })).to.deep.equal(["CAMUNDA_AUTH_STRATEGY=NONE does not use ZEEBE_CLIENT_ID (OAUTH): remove it, or choose OAUTH"]);
      expect(problemsOf({ ...zeebe, CAMUNDA_OAUTH_TOKEN: "t", CAMUNDA_BASIC_AUTH_USERNAME: "u", CAMUNDA_BASIC_AUTH_PASSWORD: "p" })).to.deep.equal([
        "CAMUNDA_BASIC_AUTH_USERNAME, CAMUNDA_BASIC_AUTH_PASSWORD (BASIC) and CAMUNDA_OAUTH_TOKEN (BEARER) are settings of different authentication strategies: set CAMUNDA_AUTH_STRATEGY and only its settings",
      ]);
      expect(problemsOf({ ...zeebe, CAMUNDA_AUTH_STRATEGY: "COOKIE" })).to.deep.equal([
        "CAMUNDA_AUTH_STRATEGY: CAMUNDA_AUTH_STRATEGY must be one of OAUTH, BASIC, BEARER, NONE (COOKIE is not supported by the gRPC workers)",
      ]);
    });

    it("reads a client certificate for mutual TLS (CAMUNDA_CUSTOM_CERT_CHAIN_PATH, CAMUNDA_CUSTOM_PRIVATE_KEY_PATH), both or none, with TLS only", () => {
      const tls = { ...base, ZEEBE_GRPC_ADDRESS: "grpcs://zeebe:443" };
      expect(loadConfig({ ...tls, CAMUNDA_CUSTOM_CERT_CHAIN_PATH: file, CAMUNDA_CUSTOM_PRIVATE_KEY_PATH: file }).zeebe?.mtls).to.deep.equal({ certChainPath: file, privateKeyPath: file });
      expect(problemsOf({ ...tls, CAMUNDA_CUSTOM_CERT_CHAIN_PATH: file })).to.deep.equal(["CAMUNDA_CUSTOM_CERT_CHAIN_PATH and CAMUNDA_CUSTOM_PRIVATE_KEY_PATH go together (mutual TLS): set both, or none"]);
      expect(problemsOf({ ...base, ZEEBE_ADDRESS: "zeebe:26500", CAMUNDA_CUSTOM_CERT_CHAIN_PATH: file, CAMUNDA_CUSTOM_PRIVATE_KEY_PATH: file })).to.deep.equal([
        "CAMUNDA_CUSTOM_CERT_CHAIN_PATH and CAMUNDA_CUSTOM_PRIVATE_KEY_PATH (mutual TLS) need TLS: set ZEEBE_TLS=true or a grpcs:// ZEEBE_GRPC_ADDRESS",
      ]);
      expect(problemsOf({ ...tls, CAMUNDA_CUSTOM_CERT_CHAIN_PATH: file, CAMUNDA_CUSTOM_PRIVATE_KEY_PATH: "/no/such/key.pem" })).to.deep.equal([
        "CAMUNDA_CUSTOM_PRIVATE_KEY_PATH: CAMUNDA_CUSTOM_PRIVATE_KEY_PATH must be a readable PEM file",
      ]);
    });
  });

  describe("Camunda 7 authentication (CAMUNDA_AUTH)", () => {
    const base = { JWT_SECRET: SECRET };

    it("takes the userinfo of CAMUNDA_URL as basic credentials and keeps the URL without it", () => {
      const camunda7 = loadConfig({ ...base, CAMUNDA_URL: "http://demo:p%40ss@localhost:8080/engine-rest" }).camunda7;
      expect(camunda7?.url).to.equal("http://localhost:8080/engine-rest");
      expect(camunda7?.auth.kind === "basic" && [camunda7.auth.username, camunda7.auth.password.reveal()]).to.deep.equal(["demo", "p@ss"]);
      const same = loadConfig({ ...base, CAMUNDA_URL: "http://demo:pw@localhost:8080/engine-rest", CAMUNDA_AUTH: "basic", CAMUNDA_USERNAME: "demo", CAMUNDA_PASSWORD: "pw" }).camunda7;
      expect(same?.auth.kind).to.equal("basic");
      expect(problemsOf({ ...base, CAMUNDA_URL: "http://demo:pw@localhost:8080/engine-rest", CAMUNDA_PASSWORD: "other" })).to.deep.equal([
        "CAMUNDA_PASSWORD and the password in CAMUNDA_URL disagree: they name the same setting; set one of them, or both to the same value",
      ]);
      expect(problemsOf({ ...base, CAMUNDA_URL: "http://demo@localhost:8080/engine-rest" })).to.deep.equal(["CAMUNDA_USERNAME, CAMUNDA_PASSWORD go together (basic): set all of them, or none"]);
    });

    it("reads basic, a static bearer token and OAuth client credentials, and refuses each without its settings", () => {
      const url = { ...base, CAMUNDA_URL: "https://engine.example/engine-rest" };
      const basic = loadConfig({ ...url, CAMUNDA_AUTH: "basic", CAMUNDA_USERNAME: "u", CAMUNDA_PASSWORD: "p" }).camunda7?.auth;
      expect(basic?.kind === "basic" && [basic.username, basic.password.reveal()]).to.deep.equal(["u", "p"]);
      const bearer = loadConfig({ ...url, CAMUNDA_TOKEN: "static" }).camunda7?.auth;
      expect(bearer?.kind === "bearer" && bearer.token.reveal()).to.equal("static");
      const oauth = loadConfig({
        ...url,
        CAMUNDA_AUTH: "oauth",
        CAMUNDA_TOKEN_URL: "https://login.example/token",
        CAMUNDA_CLIENT_ID: "worker",
        CAMUNDA_CLIENT_SECRET: "cs",
        CAMUNDA_CLIENT_SCOPE: "engine",
        CAMUNDA_CLIENT_AUDIENCE: "camunda-rest",
      }).camunda7?.auth;
      expect(oauth).to.deep.include({ kind: "oauth", url: "https://login.example/token", clientId: "worker", scope: "engine", audience: "camunda-rest" });
      expect(oauth?.kind === "oauth" && oauth.clientSecret.reveal()).to.equal("cs");
      expect(problemsOf({ ...url, CAMUNDA_AUTH: "bearer" })).to.deep.equal(["CAMUNDA_AUTH=bearer needs CAMUNDA_TOKEN"]);
      expect(problemsOf({ ...url, CAMUNDA_AUTH: "oauth", CAMUNDA_CLIENT_ID: "w" })).to.deep.equal(["CAMUNDA_AUTH=oauth needs CAMUNDA_TOKEN_URL, CAMUNDA_CLIENT_SECRET"]);
      expect(problemsOf({ ...url, CAMUNDA_AUTH: "basic", CAMUNDA_USERNAME: "u", CAMUNDA_PASSWORD: "p", CAMUNDA_TOKEN: "t" })).to.deep.equal([
        "CAMUNDA_AUTH=basic does not use CAMUNDA_TOKEN (bearer): remove it, or choose bearer",
      ]);
      expect(problemsOf({ ...url, CAMUNDA_AUTH: "digest" })).to.deep.equal(["CAMUNDA_AUTH: CAMUNDA_AUTH must be one of none, basic, bearer, oauth"]);
    });
  });

  it("holds every secret setting as a Secret: the configuration serialised or inspected shows none, and configSecrets lists them all", () => {
    const secrets = ["jwt-secret-value-of-at-least-32-bytes!!", "c7-password", "zeebe-client-secret", "db-password"];
    const config = loadConfig({
      JWT_SECRET: secrets[0]!,
      CAMUNDA_URL: `http://demo:${secrets[1]!}@localhost:8080/engine-rest`,
      ZEEBE_ADDRESS: "localhost:26500",
      ZEEBE_CLIENT_ID: "client",
      ZEEBE_CLIENT_SECRET: secrets[2]!,
      ZEEBE_OAUTH_URL: "http://localhost:1/token",
      DATABASE_URL: `postgres://app:${secrets[3]!}@localhost:5432/db`,
    });
    const shown = JSON.stringify(config) + inspect(config, { depth: 10 }) + String(config.camunda7?.auth.kind === "basic" && config.camunda7.auth.password);
    for (const secret of secrets.slice(0, 3)) expect(shown).not.to.contain(secret);
    expect(config.auth.disabled === false && config.auth.key.kind === "secret" && config.auth.key.secret).to.be.instanceOf(Secret);
    expect(configSecrets(config)).to.include.members(secrets);
  });

  it("never quotes a value in a problem (a secret in a setting that disagrees with another)", () => {
    const problems = problemsOf({ JWT_SECRET: SECRET, CAMUNDA_URL: "http://demo:url-secret@localhost/engine-rest", CAMUNDA_PASSWORD: "env-secret", ZEEBE_ADDRESS: "z:1", ZEEBE_CLIENT_SECRET: "zeebe-secret" });
    expect(problems).to.have.length(2);
    for (const secret of ["url-secret", "env-secret", "zeebe-secret"]) expect(problems.join("\n")).not.to.contain(secret);
  });
});
