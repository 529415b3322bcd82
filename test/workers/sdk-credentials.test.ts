import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { loadConfig } from "../../src/config.js";
import { zeebeClient } from "../../workers/zeebe/worker.js";
import { selfSignedCertificate } from "../support/tls.js";
import { TEST_JWT_SECRET, unsignedToken } from "../support/tokens.js";
import { ZeebeGateway, type GatewayOptions } from "../support/zeebe-gateway.js";

/** The Zeebe settings of `env`, read as the service reads them. */
const zeebeOf = (env: Record<string, string>) => loadConfig({ JWT_SECRET: TEST_JWT_SECRET, ...env }).zeebe!;

/** One Topology call of the worker's gateway client (its credentials from the SDK's providers), asked once; answers "answered" or the error's message. */
async function topology(env: Record<string, string>): Promise<string> {
  const client = zeebeClient(zeebeOf(env));
  try {
    return await client.topology().then(
      () => "answered",
      (err: Error) => err.message,
    );
  } finally {
    await client.close();
  }
}

describe("Zeebe connection settings under the SDK's names, passed through to the SDK client (the gateway stand-in requires the credentials and records what it receives)", function () {
  this.timeout(30_000);
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  const standIn = async (options: GatewayOptions = {}) => {
    const gateway = await ZeebeGateway.start(options);
    closers.push(() => gateway.close());
    return gateway;
  };
  /** The authorization header of each Topology call the stand-in received, with its answer. */
  const received = (gateway: ZeebeGateway) => gateway.calls("Topology").map((c) => `${c.status} ${c.authorization ?? "(none)"}`);

  it("CAMUNDA_AUTH_STRATEGY=BASIC sends CAMUNDA_BASIC_AUTH_USERNAME and CAMUNDA_BASIC_AUTH_PASSWORD (ZEEBE_GRPC_ADDRESS grpc://)", async () => {
    const basic = `Basic ${Buffer.from("demo:pw:1").toString("base64")}`;
    const gateway = await standIn({ authorization: basic });
    const settings = { ZEEBE_GRPC_ADDRESS: `grpc://${gateway.address}`, CAMUNDA_AUTH_STRATEGY: "BASIC", CAMUNDA_BASIC_AUTH_USERNAME: "demo" };
    expect(await topology({ ...settings, CAMUNDA_BASIC_AUTH_PASSWORD: "pw:1" })).to.equal("answered");
    // Another password is refused by the stand-in.
    expect(await topology({ ...settings, CAMUNDA_BASIC_AUTH_PASSWORD: "pw:2" })).to.contain("UNAUTHENTICATED");
    expect(received(gateway)).to.deep.equal([`OK ${basic}`, `UNAUTHENTICATED Basic ${Buffer.from("demo:pw:2").toString("base64")}`]);
  });

  it("CAMUNDA_AUTH_STRATEGY=BEARER sends CAMUNDA_OAUTH_TOKEN", async () => {
    const gateway = await standIn({ authorization: "Bearer static-bearer" });
    expect(await topology({ ZEEBE_ADDRESS: gateway.address, CAMUNDA_AUTH_STRATEGY: "BEARER", CAMUNDA_OAUTH_TOKEN: "static-bearer" })).to.equal("answered");
    expect(received(gateway)).to.deep.equal(["OK Bearer static-bearer"]);
  });

  it("NONE (the default) sends no credentials: a gateway asking for none answers, one asking for some refuses", async () => {
    const open = await standIn();
    expect(await topology({ ZEEBE_ADDRESS: open.address })).to.equal("answered");
    expect(received(open)).to.deep.equal(["OK (none)"]);
    const guarded = await standIn({ authorization: "Bearer static-bearer" });
    expect(await topology({ ZEEBE_ADDRESS: guarded.address })).to.contain("UNAUTHENTICATED");
    expect(received(guarded)).to.deep.equal(["UNAUTHENTICATED (none)"]);
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
    const gateway = await standIn({ authorization: `Bearer ${token}` });
    const answer = await topology({
      ZEEBE_GRPC_ADDRESS: `grpc://${gateway.address}`,
      CAMUNDA_AUTH_STRATEGY: "OAUTH",
      ZEEBE_CLIENT_ID: "zeebe-worker",
      ZEEBE_CLIENT_SECRET: "zeebe-secret",
      CAMUNDA_OAUTH_URL: `http://127.0.0.1:${(tokens.address() as AddressInfo).port}/token`,
      CAMUNDA_TOKEN_SCOPE: "zeebe-scope",
      CAMUNDA_ZEEBE_OAUTH_AUDIENCE: "zeebe-api",
    });
    expect(answer).to.equal("answered");
    expect(asked).to.deep.equal([{ audience: "zeebe-api", client_id: "zeebe-worker", client_secret: "zeebe-secret", grant_type: "client_credentials", scope: "zeebe-scope" }]);
    expect(received(gateway)).to.deep.equal([`OK Bearer ${token}`]);
  });

  it("mutual TLS: grpcs:// with CAMUNDA_CUSTOM_ROOT_CERT_PATH, CAMUNDA_CUSTOM_CERT_CHAIN_PATH and CAMUNDA_CUSTOM_PRIVATE_KEY_PATH reaches a gateway that requires a client certificate; without one it does not", async () => {
    const serverCert = selfSignedCertificate();
    const clientCert = selfSignedCertificate();
    // The stand-in trusts the client's self-signed certificate as its own CA, and requires one.
    const gateway = await standIn({ tls: { key: serverCert.key, cert: serverCert.cert, clientCa: clientCert.cert } });
    const tls = { ZEEBE_GRPC_ADDRESS: `grpcs://${gateway.address}`, CAMUNDA_CUSTOM_ROOT_CERT_PATH: serverCert.certPath };
    expect(await topology({ ...tls, CAMUNDA_CUSTOM_CERT_CHAIN_PATH: clientCert.certPath, CAMUNDA_CUSTOM_PRIVATE_KEY_PATH: clientCert.keyPath })).to.equal("answered");
    expect(received(gateway)).to.deep.equal(["OK (none)"]);
    // Without a client certificate the handshake fails: no call reaches the gateway.
    expect(await topology(tls)).not.to.equal("answered");
    expect(received(gateway)).to.have.length(1);
  });
});
