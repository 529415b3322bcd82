import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { expect } from "chai";
import { loadConfig } from "../../src/config.js";
import { zeebeClient } from "../../workers/zeebe/worker.js";
import { selfSignedCertificate } from "../support/tls.js";
import { TEST_JWT_SECRET, unsignedToken } from "../support/tokens.js";

const require = createRequire(import.meta.url);
const PROTO = require.resolve("@camunda8/sdk/dist/proto/zeebe.proto");

/**
 * A gRPC server of the SDK's gateway protocol answering only `Topology`, recording the
 * `authorization` metadata of each call: enough to see what the worker's SDK client sends.
 */
async function topologyGateway(credentials: grpc.ServerCredentials): Promise<{ address: string; authorizations: (string | undefined)[]; close: () => void }> {
  const definition = protoLoader.loadSync(PROTO, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  const proto = grpc.loadPackageDefinition(definition) as unknown as { gateway_protocol: { Gateway: { service: grpc.ServiceDefinition } } };
  const authorizations: (string | undefined)[] = [];
  const server = new grpc.Server();
  server.addService(proto.gateway_protocol.Gateway.service, {
    Topology: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const header = call.metadata.get("authorization")[0];
      // The SDK's NONE sends an empty header: both read as none.
      authorizations.push(header === undefined || String(header) === "" ? undefined : String(header));
      callback(null, { brokers: [], clusterSize: 1, partitionsCount: 1, replicationFactor: 1, gatewayVersion: "8.8.0" });
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync("127.0.0.1:0", credentials, (err, bound) => (err ? reject(err) : resolve(bound))));
  return { address: `localhost:${port}`, authorizations, close: () => server.forceShutdown() };
}

/** The Zeebe settings of `env`, read as the service reads them. */
const zeebeOf = (env: Record<string, string>) => loadConfig({ JWT_SECRET: TEST_JWT_SECRET, ...env }).zeebe!;

/** One Topology call of the worker's SDK client, asked once (no SDK retry). */
async function topology(env: Record<string, string>): Promise<void> {
  const client = zeebeClient(zeebeOf(env), false);
  try {
    await client.topology();
  } finally {
    await client.close();
  }
}

describe("Zeebe connection settings under the SDK's names, passed through to the SDK client (a gRPC gateway of the SDK's protocol checks what it receives)", function () {
  this.timeout(30_000);
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  const plaintextGateway = async () => {
    const gateway = await topologyGateway(grpc.ServerCredentials.createInsecure());
    closers.push(gateway.close);
    return gateway;
  };

  it("CAMUNDA_AUTH_STRATEGY=BASIC sends CAMUNDA_BASIC_AUTH_USERNAME and CAMUNDA_BASIC_AUTH_PASSWORD (ZEEBE_GRPC_ADDRESS grpc://)", async () => {
    const gateway = await plaintextGateway();
    await topology({ ZEEBE_GRPC_ADDRESS: `grpc://${gateway.address}`, CAMUNDA_AUTH_STRATEGY: "BASIC", CAMUNDA_BASIC_AUTH_USERNAME: "demo", CAMUNDA_BASIC_AUTH_PASSWORD: "pw:1" });
    expect(gateway.authorizations).to.deep.equal([`Basic ${Buffer.from("demo:pw:1").toString("base64")}`]);
  });

  it("CAMUNDA_AUTH_STRATEGY=BEARER sends CAMUNDA_OAUTH_TOKEN", async () => {
    const gateway = await plaintextGateway();
    await topology({ ZEEBE_ADDRESS: gateway.address, CAMUNDA_AUTH_STRATEGY: "BEARER", CAMUNDA_OAUTH_TOKEN: "static-bearer" });
    expect(gateway.authorizations).to.deep.equal(["Bearer static-bearer"]);
  });

  it("NONE (the default) sends no credentials", async () => {
    const gateway = await plaintextGateway();
    await topology({ ZEEBE_ADDRESS: gateway.address });
    expect(gateway.authorizations).to.deep.equal([undefined]);
  });

  it("OAUTH asks CAMUNDA_OAUTH_URL for a token with the client credentials, CAMUNDA_TOKEN_SCOPE and the audience, and sends it", async () => {
    const token = unsignedToken({ sub: "worker", exp: Math.floor(Date.now() / 1000) + 600 });
    const asked: Record<string, string>[] = [];
    const tokens = createHttpServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        asked.push(Object.fromEntries(new URLSearchParams(body)));
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ access_token: token, token_type: "Bearer", expires_in: 600 }));
      });
    });
    await new Promise<void>((resolve) => tokens.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise((resolve) => tokens.close(resolve)));
    const gateway = await plaintextGateway();
    await topology({
      ZEEBE_GRPC_ADDRESS: `grpc://${gateway.address}`,
      CAMUNDA_AUTH_STRATEGY: "OAUTH",
      ZEEBE_CLIENT_ID: "zeebe-worker",
      ZEEBE_CLIENT_SECRET: "zeebe-secret",
      CAMUNDA_OAUTH_URL: `http://127.0.0.1:${(tokens.address() as AddressInfo).port}/token`,
      CAMUNDA_TOKEN_SCOPE: "zeebe-scope",
      CAMUNDA_ZEEBE_OAUTH_AUDIENCE: "zeebe-api",
    });
    expect(asked).to.deep.equal([{ audience: "zeebe-api", client_id: "zeebe-worker", client_secret: "zeebe-secret", grant_type: "client_credentials", scope: "zeebe-scope" }]);
    expect(gateway.authorizations).to.deep.equal([`Bearer ${token}`]);
  });

  it("mutual TLS: grpcs:// with CAMUNDA_CUSTOM_ROOT_CERT_PATH, CAMUNDA_CUSTOM_CERT_CHAIN_PATH and CAMUNDA_CUSTOM_PRIVATE_KEY_PATH reaches a gateway that requires a client certificate; without one it does not", async () => {
    const serverCert = selfSignedCertificate();
    const clientCert = selfSignedCertificate();
    // The gateway trusts the client's self-signed certificate as its own CA, and requires one.
    const gateway = await topologyGateway(grpc.ServerCredentials.createSsl(clientCert.cert, [{ private_key: serverCert.key, cert_chain: serverCert.cert }], true));
    closers.push(gateway.close);
    const tls = { ZEEBE_GRPC_ADDRESS: `grpcs://${gateway.address}`, CAMUNDA_CUSTOM_ROOT_CERT_PATH: serverCert.certPath };
    await topology({ ...tls, CAMUNDA_CUSTOM_CERT_CHAIN_PATH: clientCert.certPath, CAMUNDA_CUSTOM_PRIVATE_KEY_PATH: clientCert.keyPath });
    expect(gateway.authorizations).to.deep.equal([undefined]);
    const refused = await topology(tls).then(
      () => "answered",
      (err: Error) => err.message,
    );
    expect(refused).not.to.equal("answered");
    expect(gateway.authorizations).to.have.length(1);
  });
});
