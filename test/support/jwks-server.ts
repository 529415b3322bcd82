import { generateKeyPairSync, randomUUID, type KeyObject } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, SignJWT, type JWK, type JWTPayload } from "jose";

/** A signing key of the test provider: its private half and the public JWK it publishes. */
export interface ProviderKey {
  kid: string;
  alg: string;
  privateKey: KeyObject;
  jwk: JWK;
}

/** A fresh key pair for `alg` (RS256, PS256, RS384: RSA; ES256: P-256; EdDSA: Ed25519). */
export async function providerKey(alg: string, kid = `${alg.toLowerCase()}-${randomUUID().slice(0, 8)}`): Promise<ProviderKey> {
  const pair =
    alg === "ES256"
      ? generateKeyPairSync("ec", { namedCurve: "P-256" })
      : alg === "EdDSA"
        ? generateKeyPairSync("ed25519")
        : generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = { ...(await exportJWK(pair.publicKey)), kid, alg, use: "sig" };
  return { kid, alg, privateKey: pair.privateKey, jwk };
}

/**
 * An identity provider over real HTTP on 127.0.0.1: its discovery document
 * (`/.well-known/openid-configuration`) and its key set (`/jwks`), counted; `failing` answers 503.
 */
export class JwksServer {
  keys: ProviderKey[] = [];
  failing = false;
  /** The `issuer` the discovery document names; the server's own URL unless set. */
  issuerOverride: string | undefined;
  readonly fetches = { jwks: 0, discovery: 0 };
  private readonly server: Server;

  constructor() {
    this.server = createServer((req, res) => {
      const answer = (status: number, body: unknown) => void res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (req.url === "/jwks") {
        this.fetches.jwks++;
        answer(this.failing ? 503 : 200, this.failing ? { error: "down" } : { keys: this.keys.map((k) => k.jwk) });
      } else if (req.url === "/.well-known/openid-configuration") {
        this.fetches.discovery++;
        const document = { issuer: this.issuerOverride ?? this.issuer, jwks_uri: `${this.url}/jwks`, token_endpoint: `${this.url}/token` };
        answer(this.failing ? 503 : 200, this.failing ? { error: "down" } : document);
      } else {
        answer(404, { error: "not found" });
      }
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get issuer(): string {
    return this.url;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** A token signed with `key`, issued by this provider unless `claims` says otherwise; valid 10 minutes. */
  async token(key: ProviderKey, claims: JWTPayload = {}, options: { alg?: string; expiresIn?: string | number } = {}): Promise<string> {
    return new SignJWT({ iss: this.issuer, sub: "user-1", ...claims })
      .setProtectedHeader({ alg: options.alg ?? key.alg, kid: key.kid, typ: "JWT" })
      .setIssuedAt()
      .setExpirationTime(options.expiresIn ?? "10m")
      .sign(key.privateKey);
  }
}
