import { expect } from "chai";
import { loadConfig } from "../../src/config.js";
import { createAuthenticator } from "../../src/http/auth.js";
import { hsToken, TEST_JWT_SECRET } from "../support/tokens.js";

describe("verified tokens", () => {
  const auth = loadConfig({ JWT_SECRET: TEST_JWT_SECRET, JWT_CLOCK_SKEW_SECONDS: "0" }).auth;
  const bearer = async (sub: string) => `Bearer ${await hsToken({ roles: ["admin"], sub })}`;

  it("keeps as many verified tokens as its capacity, least recently used dropped first", async () => {
    const authenticate = createAuthenticator(auth, 2);
    const [a, b, c] = await Promise.all([bearer("a"), bearer("b"), bearer("c")]);
    const first = { a: await authenticate(a), b: await authenticate(b) };
    expect(await authenticate(a), "a token verified before is not verified again").to.equal(first.a);
    await authenticate(c);
    expect(await authenticate(a), "a was used after b: b was dropped, a kept").to.equal(first.a);
    const again = await authenticate(b);
    expect(again, "b is verified anew").to.not.equal(first.b);
    expect(again).to.deep.equal(first.b);
  });

  it("does not keep a token past its exp: the next request verifies it and is refused", async () => {
    const authenticate = createAuthenticator(auth);
    const exp = Math.floor(Date.now() / 1000) + 1;
    const token = `Bearer ${await hsToken({ roles: ["admin"], expiresIn: exp })}`;
    const principal = await authenticate(token);
    expect(principal.expiresAtMs).to.equal(exp * 1000);
    expect(await authenticate(token)).to.equal(principal);
    await new Promise((resolve) => setTimeout(resolve, exp * 1000 - Date.now() + 20));
    const refused = await authenticate(token).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).to.have.property("code", "UNAUTHENTICATED");
    expect(refused).to.have.property("message", "the token has expired");
  });
});
