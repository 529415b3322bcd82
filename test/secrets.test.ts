import { inspect } from "node:util";
import { expect } from "chai";
import Transport from "winston-transport";
import { createLogger } from "../src/logger.js";
import { Redactor, redactUrl, Secret, secretsIn, urlSecrets } from "../src/secrets.js";

/** The finished lines, as the console transport would write them. */
class Lines extends Transport {
  readonly lines: string[] = [];
  override log(info: Record<symbol, unknown>, done: () => void): void {
    this.lines.push(String(info[Symbol.for("message")]));
    done();
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("secrets", () => {
  it("a Secret reads *** serialised, printed, interpolated or inspected, and its value only through reveal()", () => {
    const secret = new Secret("hunter2-value");
    expect(JSON.stringify({ password: secret })).to.equal('{"password":"***"}');
    expect(`${String(secret)} ${inspect({ secret })}`).to.equal("*** { secret: Secret(***) }");
    expect(secret.reveal()).to.equal("hunter2-value");
    expect(new TextDecoder().decode(secret.bytes())).to.equal("hunter2-value");
  });

  it("redactUrl hides the userinfo password and credential parameters, keeping the rest", () => {
    expect(redactUrl("postgres://app:pa%40ss@db:5432/x?sslmode=require&sslpassword=k1&application_name=w")).to.equal(
      "postgres://app:***@db:5432/x?sslmode=require&sslpassword=***&application_name=w",
    );
    expect(redactUrl("https://engine.example/engine-rest?access_token=abc&Client-Secret=def")).to.equal("https://engine.example/engine-rest?access_token=***&Client-Secret=***");
    expect(redactUrl("http://user@host/path")).to.equal("http://user@host/path");
    expect(redactUrl("not a url with secret")).to.equal("(unparseable)");
    expect(urlSecrets("postgres://app:pa%40ss@db/x?password=p2")).to.deep.equal(["pa%40ss", "pa@ss", "p2"]);
  });

  it("secretsIn finds every Secret of a configuration at any depth, and the user:password pair of basic credentials", () => {
    const config = { a: { password: new Secret("p1"), username: "u" }, b: [{ token: new Secret("t1") }], c: "plain" };
    expect(secretsIn(config).sort()).to.deep.equal(["p1", "t1", "u:p1"]);
  });

  it("the redactor replaces a known secret in clear, JSON-escaped, URL-encoded and base64, URL passwords, credential parameters, quoted Authorization credentials and JWTs", () => {
    const redactor = new Redactor(['s3cr"et/+', "demo:pw-value"]);
    const b64 = Buffer.from('s3cr"et/+').toString("base64");
    const text = [
      `clear s3cr"et/+`,
      `json ${JSON.stringify('s3cr"et/+')}`,
      `url ${encodeURIComponent('s3cr"et/+')}`,
      `b64 ${b64}`,
      `basic ${Buffer.from("demo:pw-value").toString("base64")}`,
      "conn http://u:unknown-pw@host:1/x and https://host/cb?code=1&token=zz9",
      "echo Authorization: Bearer Zx9-unknown.token and Basic QWxhZGRpbjpvcGVu",
      "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln",
      "prose: Basic authentication and the bearer of a token stay",
    ].join("\n");
    expect(redactor.redact(text)).to.equal(
      [
        "clear ***",
        'json "***"',
        "url ***",
        "b64 ***",
        "basic ***",
        "conn http://u:***@host:1/x and https://host/cb?code=1&token=***",
        "echo Authorization: Bearer *** and Basic ***",
        "jwt ***",
        "prose: Basic authentication and the bearer of a token stay",
      ].join("\n"),
    );
  });

  it("the logger writes no known secret, whatever the call site passes (a field, an error, a nested object, a child's field)", async () => {
    const out = new Lines();
    const logger = createLogger("debug", [out], ["client-secret-1", "db-pw-2"]);
    logger.info("connecting", { url: "postgres://app:db-pw-2@db/x", settings: { clientSecret: "client-secret-1" } });
    logger.warn("failed", { error: new Error("token endpoint refused client-secret-1").message });
    logger.child({ requestId: "r", header: `Basic ${Buffer.from("x:client-secret-1").toString("base64")}` }).debug("child");
    await settle();
    expect(out.lines).to.have.length(3);
    for (const line of out.lines) expect(line).not.to.match(/client-secret-1|db-pw-2|Y2xpZW50LXNlY3JldC0x/);
    expect(JSON.parse(out.lines[0]!)).to.deep.include({ message: "connecting", url: "postgres://app:***@db/x", settings: { clientSecret: "***" } });
  });
});
