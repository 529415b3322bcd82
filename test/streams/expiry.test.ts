import { expect } from "chai";
import { TOKEN_EXPIRED } from "../../src/http/stream-connection.js";
import { backend, randomTenant } from "../support/backends.js";
import { testServer, type TestServer } from "../support/server.js";
import { call, createItem, eventsFrom, StreamClient } from "../support/streams.js";
import { adminToken, hsToken, userToken } from "../support/tokens.js";

const T0 = Date.UTC(2025, 0, 1);
/** JWT_CLOCK_SKEW_SECONDS of the server under test. */
const SKEW_SECONDS = 1;

/** An admin token whose `exp` is `seconds` (2 or more) from now, in whole seconds as JWTs have it. */
async function shortToken(seconds: number, options: { tenants?: string[] } = {}): Promise<{ token: string; exp: number }> {
  const exp = Math.floor(Date.now() / 1000) + seconds;
  return { token: await hsToken({ roles: ["admin"], expiresIn: exp, ...options }), exp };
}

const sleepUntil = (epochMs: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, epochMs - Date.now())));

/**
 * Issue 24 item 3: a live stream lives no longer than its token (contract §10). Real tokens whose
 * `exp` is a few seconds ahead; the waits are those seconds, nothing is asserted on speed.
 */
describe("live streams: a stream lives no longer than its token", function () {
  this.timeout(30_000);
  let server: TestServer;
  let base: string;
  let ws: string;
  let admin: string;
  let tenant: string;
  let item: string;
  const clients: StreamClient[] = [];
  const client = (token: string | undefined) => {
    const c = new StreamClient(`${ws}/items/${item}/stream`, token === undefined ? {} : { token, tenant });
    clients.push(c);
    return c;
  };

  before(async () => {
    server = await testServer(await backend("postgres"), { JWT_CLOCK_SKEW_SECONDS: String(SKEW_SECONDS) });
    base = await server.app.listen({ port: 0, host: "127.0.0.1" });
    ws = base.replace("http", "ws");
    admin = await adminToken();
  });
  beforeEach(async () => {
    tenant = randomTenant();
    item = await createItem(base, admin, tenant);
  });
  afterEach(() => clients.splice(0).forEach((c) => c.close()));
  after(() => server.app.close());

  it("closes the stream with 4401 once exp plus the clock skew has passed, as REST then refuses the token", async () => {
    const { token, exp } = await shortToken(2);
    const sub = client(token);
    await sub.subscribed();
    await call(base, admin, tenant, "POST", `/items/${item}/events`, { events: eventsFrom(T0, 1, 1) });
    await sub.until((c) => c.events.length === 1, "the event posted while the token is valid");

    const closed = await Promise.race([sub.closed, sleepUntil((exp + SKEW_SECONDS) * 1000 + 5000).then(() => "still open 5 s after exp plus the skew")]);
    const closedAt = Date.now();
    expect(closed).to.deep.equal({ code: 4401, reason: TOKEN_EXPIRED });
    // Not before exp plus the skew: the skew holds for a stream as for REST.
    expect(closedAt).to.be.at.least((exp + SKEW_SECONDS) * 1000);
    expect((await call(base, token, tenant, "GET", `/items/${item}/events/latest`)).status).to.equal(401);
    expect(sub.events.map((e) => e.value)).to.deep.equal([1]);
  });

  it("stays open past the first token's exp when a browser renews it with a new auth message", async () => {
    const first = await shortToken(2);
    const sub = client(undefined);
    // A browser cannot set headers: the first message authenticates ...
    sub.send({ type: "auth", token: first.token, tenant });
    await sub.subscribed();
    // ... and a later one, before exp, renews; the answer says the new deadline.
    const renewed = await shortToken(600);
    sub.send({ type: "auth", token: renewed.token, tenant });
    await sub.until((c) => c.messages.some((m) => m.type === "reauthenticated"), "reauthenticated");
    expect(sub.messages.find((m) => m.type === "reauthenticated")).to.deep.equal({ type: "reauthenticated", expiresAt: new Date((renewed.exp + SKEW_SECONDS) * 1000).toISOString() });

    await sleepUntil((first.exp + SKEW_SECONDS) * 1000 + 500);
    await call(base, admin, tenant, "POST", `/items/${item}/events`, { events: eventsFrom(T0, 1, 2) });
    await sub.until((c) => c.events.length === 1, "an event after the first token's exp");
    expect(sub.socket.readyState).to.equal(sub.socket.OPEN);
  });

  it("renews a stream authenticated by headers too, and ignores messages that are not auth messages", async () => {
    const first = await shortToken(2);
    const sub = client(first.token);
    await sub.subscribed();
    sub.socket.send("not json");
    sub.send({ type: "hello" });
    sub.send({ type: "auth", token: await adminToken() });
    await sub.until((c) => c.messages.some((m) => m.type === "reauthenticated"), "reauthenticated");
    await sleepUntil((first.exp + SKEW_SECONDS) * 1000 + 500);
    await call(base, admin, tenant, "POST", `/items/${item}/events`, { events: eventsFrom(T0, 1, 3) });
    await sub.until((c) => c.events.length === 1, "an event after the first token's exp");
  });

  it("handles a renewal sent before the server said subscribed, in the order sent (first message or headers)", async () => {
    const first = await shortToken(2);
    const renewed = await shortToken(600);
    // A browser sends its auth message and, at once, a renewal: both before `subscribed`.
    const browser = client(undefined);
    browser.send({ type: "auth", token: first.token, tenant });
    browser.send({ type: "auth", token: renewed.token, tenant });
    // Opened with headers: the renewal is the first message, sent as soon as the socket opens.
    const headers = client(first.token);
    headers.send({ type: "auth", token: renewed.token });
    const expiresAt = new Date((renewed.exp + SKEW_SECONDS) * 1000).toISOString();
    for (const sub of [browser, headers]) {
      await sub.subscribed();
      await sub.until((c) => c.messages.some((m) => m.type === "reauthenticated"), "reauthenticated");
      expect(sub.messages.find((m) => m.type === "reauthenticated")).to.deep.equal({ type: "reauthenticated", expiresAt });
    }
    await sleepUntil((first.exp + SKEW_SECONDS) * 1000 + 500);
    await call(base, admin, tenant, "POST", `/items/${item}/events`, { events: eventsFrom(T0, 1, 4) });
    for (const sub of [browser, headers]) {
      await sub.until((c) => c.events.length === 1, "an event after the first token's exp");
      expect(sub.socket.readyState).to.equal(sub.socket.OPEN);
    }
  });

  it("closes the stream with 4401 naming the problem when an auth message is malformed: no token, a token or tenant that is not text; before or after subscribed", async () => {
    const shape = 'send {"type":"auth","token":"<JWT>","tenant":"<tenant>"}';
    const malformed = [
      [{ type: "auth" }, `the auth message has no token; ${shape}`],
      [{ type: "auth", token: 42, tenant }, `the auth message has a token that is not a JWT string; ${shape}`],
      [{ type: "auth", token: "" }, `the auth message has a token that is not a JWT string; ${shape}`],
      [{ type: "auth", token: { jwt: admin } }, `the auth message has a token that is not a JWT string; ${shape}`],
      [{ type: "auth", token: admin, tenant: [tenant] }, `the auth message has a tenant that is not a string; ${shape}`],
    ] as const;
    const open = (sub: StreamClient) => Promise.race([sub.closed, new Promise((resolve) => setTimeout(() => resolve("still open after 5 s"), 5000))]);
    // After `subscribed`, on a stream opened with headers.
    const after = malformed.map(() => client(admin));
    await Promise.all(after.map((s) => s.subscribed()));
    after.forEach((s, i) => s.send(malformed[i]![0]));
    // Before it: sent right behind a valid first message; and as the first message itself.
    const before = malformed.map(([message]) => {
      const sub = client(undefined);
      sub.send({ type: "auth", token: admin, tenant });
      sub.send(message);
      return sub;
    });
    const asFirst = malformed.map(([message]) => {
      const sub = client(undefined);
      sub.send(message);
      return sub;
    });
    const expected = malformed.map(([, reason]) => ({ code: 4401, reason }));
    expect(await Promise.all(after.map(open))).to.deep.equal(expected);
    expect(await Promise.all(before.map(open))).to.deep.equal(expected);
    expect(await Promise.all(asFirst.map(open))).to.deep.equal(expected);
    expect(after.every((s) => s.messages.every((m) => m.type === "subscribed"))).to.equal(true);
    expect(asFirst.every((s) => s.messages.length === 0)).to.equal(true);
  });

  it("closes the stream when a renewal is refused: another tenant, a token not naming it or without admin (4403), a bad or expired token (4401)", async () => {
    const expired = await hsToken({ roles: ["admin"], expiresIn: Math.floor(Date.now() / 1000) - 3600 });
    const renewals = [
      { type: "auth", token: admin, tenant: randomTenant() },
      { type: "auth", token: await hsToken({ roles: ["admin"], tenants: ["someone-else"] }), tenant },
      { type: "auth", token: await userToken(), tenant },
      { type: "auth", token: `${admin}x`, tenant },
      { type: "auth", token: expired },
    ];
    const subs = renewals.map(() => client(admin));
    await Promise.all(subs.map((s) => s.subscribed()));
    subs.forEach((s, i) => s.send(renewals[i]));
    const closes = await Promise.all(subs.map((s) => s.closed));
    expect(closes).to.deep.equal([
      { code: 4403, reason: "a stream keeps its tenant: open a new stream for another tenant" },
      { code: 4403, reason: "this token does not name the tenant" },
      { code: 4403, reason: "a stream needs a token whose roles claim contains admin" },
      { code: 4401, reason: "the token's signature is not valid" },
      { code: 4401, reason: "the token has expired" },
    ]);
    expect(subs.every((s) => s.messages.every((m) => m.type === "subscribed"))).to.equal(true);
  });
});
