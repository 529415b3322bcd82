import type { FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { RawData, WebSocket } from "ws";
import { errorText, ProblemError, toProblemError } from "../../errors.js";
import { UUID } from "../../input.js";
import { instant } from "../../timeseries/events.js";
import { mayActIn, type Principal } from "../auth.js";
import { readTenant } from "../request.js";
import { CLOSE, StreamConnection } from "../stream-connection.js";
import type { App, ServerDeps } from "../types.js";
import { Uuid } from "../schemas.js";
import { parseJson } from "../../json.js";

/** How long a connection without an Authorization header has to send its auth message. */
export const AUTH_MESSAGE_MS = 5000;
/** Most items of one `GET /streams` subscription. */
export const MAX_STREAM_ITEMS = 100;
/** The answer to an upgrade: the WebSocket. */
const SWITCHING = { 101: { type: "null", description: "Switching Protocols: the WebSocket; messages and close codes as described" } };

/** How long a closed or dropped socket has to complete the close handshake before it is ended. */
const CLOSE_GRACE_MS = 5000;

interface Caller {
  principal: Principal;
  tenant: string;
}

/** A refusal that ends a stream with a close code (contract §10). */
class StreamRefusal extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Live streams (contract §10): `GET /items/{itemId}/stream` and `GET /streams?itemIds=…` upgrade to
 * a WebSocket. The token and tenant are checked as on REST, by the same authenticator, from the
 * headers or from a first `auth` message; a refusal closes the socket with a 44xx code (a browser
 * sees no HTTP status of a failed upgrade). A plain GET is answered 426.
 *
 * A stream lives no longer than its token: closed with 4401 when `exp` plus the clock skew passes.
 * Any later `auth` message renews it: a token of the same tenant, held to the same rules, moves the
 * deadline to its own (answered `reauthenticated`); one refused closes the stream as at the start.
 */
export function streamRoutes(app: App, deps: ServerDeps): void {
  const { services, config, logger } = deps;
  const connections = new Set<StreamConnection>();
  const pings = setInterval(() => pingRound(connections), config.streams.pingMs);
  pings.unref();
  app.addHook("onClose", async () => clearInterval(pings));
  app.addHook("preClose", async () => {
    for (const c of connections) c.close(CLOSE.goingAway, "the server is shutting down");
  });

  const tags = ["live streams"];
  const Since = Type.Optional(Type.String({ description: "ISO-8601 instant: the stored events from then on are sent first, in timestamp order" }));
  const description =
    "Upgrades to a WebSocket (GET with Upgrade: websocket). Authenticate with the Authorization and X-TENANT-ID headers, " +
    'or by a first message {"type":"auth","token":"<JWT>","tenant":"<tenant>"} within 5 s. The token needs the admin role. ' +
    'Server messages: {"type":"event","itemId","event"} and, for a CALCULATE item, {"type":"bucket","itemId","bucket"}. ' +
    "A stream is closed with 4401 when its token's exp (plus the clock skew) passes, unless renewed before by a further " +
    '{"type":"auth","token":"<JWT>"} message, sent at any time after the first (answered {"type":"reauthenticated","expiresAt"}; ' +
    "a token of another tenant closes it with 4403, a malformed auth message or a refused token with 4401). " +
    "Close codes: 4400 bad request, 4401 unauthenticated or expired, 4403 forbidden, 4404 unknown item, 4408 too slow, 1001 going away. " +
    "Without an upgrade: 426.";
  const upgradeRequired = async () => {
    throw new ProblemError("INVALID_REQUEST", "this endpoint is a WebSocket: send the request with Upgrade: websocket", { status: 426 });
  };

  const open = (socket: WebSocket, request: FastifyRequest, itemIds: () => string[], since: string | undefined) => {
    const connection = new StreamConnection(socket, config.streams.bufferBytes, CLOSE_GRACE_MS, (reason) =>
      logger.warn("stream subscriber dropped", { reason, tenant: request.tenant ?? null }),
    );
    connections.add(connection);
    socket.once("close", () => connections.delete(connection));
    // Every message is read from the upgrade on, in the order sent: without an Authorization
    // header the first is the auth message; each later auth message is a renewal, handled once the
    // stream is authenticated — before `subscribed` too — one after the other.
    let first: ((message: ClientMessage) => void) | undefined;
    const firstMessage = request.headers.authorization === undefined ? new Promise<ClientMessage>((resolve) => (first = resolve)) : undefined;
    let authenticated!: (tenant: string) => void;
    const tenant = new Promise<string>((resolve) => (authenticated = resolve));
    let renewing = Promise.resolve();
    socket.on("message", (data: RawData) => {
      const message = readClientMessage(data);
      if (first !== undefined) {
        first(message);
        first = undefined;
      } else if (message.kind !== "other") {
        // A stream whose authentication failed is closed: its renewals wait for nothing.
        renewing = renewing.then(() => tenant).then((t) => renew(connection, t, message));
      }
    });
    subscribe(connection, request, firstMessage, authenticated, itemIds, since).catch((err: unknown) => {
      if (err instanceof StreamRefusal) return connection.close(err.code, err.message);
      const problem = toProblemError(err);
      logger.warn("stream failed", { code: problem.code, error: errorText(err) });
      connection.close(problem.status === 503 ? 1013 : CLOSE.internal, problem.status === 503 ? "the database is unavailable; try again later" : "the stream failed");
    });
  };

  /** Authenticates, checks the items, subscribes; a resume sends the stored events first. */
  const subscribe = async (
    connection: StreamConnection,
    request: FastifyRequest,
    firstMessage: Promise<ClientMessage> | undefined,
    authenticated: (tenant: string) => void,
    itemIds: () => string[],
    sinceText: string | undefined,
  ) => {
    const caller = await authenticate(connection.socket, request, firstMessage);
    request.tenant = caller.tenant;
    connection.expireAt(caller.principal.expiresAtMs);
    authenticated(caller.tenant);
    const ids = itemIds();
    const since = sinceText === undefined ? undefined : instant(sinceText);
    if (since === null || (sinceText !== undefined && since === undefined)) throw new StreamRefusal(CLOSE.badRequest, "since must be an ISO-8601 instant");
    const actions = await services.timeSeries.itemActions(caller.tenant, ids);
    const missing = ids.filter((id) => !actions.has(id));
    if (missing.length > 0) throw new StreamRefusal(CLOSE.unknownItem, `there is no Item ${missing.join(", ")} in this tenant`);
    await services.streams.ready();
    const unwatch = await services.streams.watchTenant(caller.tenant);
    connection.socket.once("close", unwatch);
    if (!connection.open) return unwatch();
    if (since !== undefined) connection.hold();
    const stops = ids.map((id) =>
      actions.get(id) === "CALCULATE" ? services.streams.subscribeDerived(caller.tenant, id, connection) : services.streams.subscribe(caller.tenant, [id], connection),
    );
    connection.socket.once("close", () => stops.forEach((stop) => stop()));
    // Events committed from now on reach this subscriber: a client may start writing.
    connection.socket.send(JSON.stringify({ type: "subscribed", itemIds: ids }));
    if (since !== undefined) {
      const stored = ids.filter((id) => actions.get(id) !== "CALCULATE");
      for await (const { itemId, event } of services.timeSeries.eventsSince(caller.tenant, stored, since)) {
        if (!(await connection.sendPaced(JSON.stringify({ type: "event", itemId, event })))) return;
      }
      connection.release();
    }
  };

  /** The caller, from the headers or the first message, held to the same rules as REST (contract §9). */
  const authenticate = async (socket: WebSocket, request: FastifyRequest, firstMessage: Promise<ClientMessage> | undefined): Promise<Caller> => {
    const given = firstMessage === undefined ? { authorization: request.headers.authorization, tenant: request.headers["x-tenant-id"] } : await authMessage(socket, firstMessage);
    let caller: Caller;
    try {
      caller = { principal: await deps.authenticate(given.authorization), tenant: readTenant(given.tenant) };
    } catch (err) {
      if (err instanceof ProblemError) throw new StreamRefusal(refusalCode(err, CLOSE.badRequest), err.message);
      throw err;
    }
    permitted(caller.principal, caller.tenant);
    return caller;
  };

  /** The stream's rules for a verified token: it names the tenant and carries the admin role. */
  const permitted = (principal: Principal, tenant: string): void => {
    if (!mayActIn(principal, tenant)) throw new StreamRefusal(CLOSE.forbidden, "this token does not name the tenant");
    if (!principal.roles.includes("admin")) throw new StreamRefusal(CLOSE.forbidden, "a stream needs a token whose roles claim contains admin");
  };

  /**
   * A renewal (a later `auth` message; they are handled in the order sent) moves the stream's
   * deadline to its token's `exp` (plus the clock skew) and is answered `reauthenticated`. A stream
   * keeps its tenant: a message naming another, or a token that does not name it, closes it (4403);
   * a malformed message or a token refused closes it as at the start (4401).
   */
  const renew = async (connection: StreamConnection, tenant: string, given: Exclude<ClientMessage, { kind: "other" }>): Promise<void> => {
    if (!connection.open) return;
    try {
      if (given.kind === "malformed") throw new StreamRefusal(CLOSE.unauthenticated, given.problem);
      if (given.tenant !== undefined && given.tenant.trim() !== tenant) {
        throw new StreamRefusal(CLOSE.forbidden, "a stream keeps its tenant: open a new stream for another tenant");
      }
      let principal: Principal;
      try {
        principal = await deps.authenticate(`Bearer ${given.token}`);
      } catch (err) {
        if (err instanceof ProblemError) throw new StreamRefusal(refusalCode(err, CLOSE.unauthenticated), err.message);
        throw err;
      }
      permitted(principal, tenant);
      if (!connection.open) return;
      connection.expireAt(principal.expiresAtMs);
      const expiresAt = principal.expiresAtMs === undefined ? null : new Date(principal.expiresAtMs).toISOString();
      connection.socket.send(JSON.stringify({ type: "reauthenticated", expiresAt }));
    } catch (err) {
      if (err instanceof StreamRefusal) return connection.close(err.code, err.message);
      logger.warn("stream renewal failed", { error: errorText(err) });
      connection.close(CLOSE.internal, "the stream failed");
    }
  };

  app.route({
      method: "GET",
      url: "/items/:itemId/stream",
      config: { access: "stream" },
      schema: { operationId: "streamItem", summary: "Live events of one item (WebSocket)", description, tags, params: Type.Object({ itemId: Uuid }), querystring: Type.Object({ since: Since }), response: SWITCHING },
      handler: upgradeRequired,
      wsHandler: (socket: WebSocket, request: FastifyRequest) => {
        const { itemId } = request.params as { itemId: string };
        open(socket, request, () => [itemId.toLowerCase()], (request.query as { since?: string }).since);
      },
  });

  app.route({
      method: "GET",
      url: "/streams",
      config: { access: "stream" },
      schema: {
        operationId: "streamItems",
        summary: `Live events of several items (WebSocket), at most ${MAX_STREAM_ITEMS}`,
        description,
        tags,
        querystring: Type.Object({ itemIds: Type.String({ description: "comma-separated item ids" }), since: Since }),
        response: SWITCHING,
      },
      handler: upgradeRequired,
      wsHandler: (socket: WebSocket, request: FastifyRequest) => {
        const query = request.query as { itemIds: string; since?: string };
        open(socket, request, () => parseItemIds(query.itemIds), query.since);
      },
  });
}

/** `itemIds` of `GET /streams`: 1 to MAX_STREAM_ITEMS uuids, comma-separated. */
function parseItemIds(text: string): string[] {
  const ids = [...new Set(text.split(",").map((id) => id.trim().toLowerCase()).filter((id) => id !== ""))];
  if (ids.length === 0 || ids.length > MAX_STREAM_ITEMS) throw new StreamRefusal(CLOSE.badRequest, `itemIds must name 1 to ${MAX_STREAM_ITEMS} items`);
  const bad = ids.find((id) => !UUID.test(id));
  if (bad !== undefined) throw new StreamRefusal(CLOSE.badRequest, `itemIds: ${bad.slice(0, 40)} is not an item uuid`);
  return ids;
}

/** The auth message a client sends: first, or later to renew. */
const AUTH_MESSAGE = '{"type":"auth","token":"<JWT>","tenant":"<tenant>"}';

/** A client's message: an auth message, one that means to be one (`type` auth) but is malformed, or any other. */
type ClientMessage = { kind: "auth"; token: string; tenant: string | undefined } | { kind: "malformed"; problem: string } | { kind: "other" };

/** Waits for the first message, which must be `{ "type": "auth", "token", "tenant" }`. */
function authMessage(socket: WebSocket, first: Promise<ClientMessage>): Promise<{ authorization: string; tenant: string | undefined }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new StreamRefusal(CLOSE.unauthenticated, `no Authorization header and no auth message within ${AUTH_MESSAGE_MS / 1000} s`));
    }, AUTH_MESSAGE_MS);
    socket.once("close", () => clearTimeout(timer));
    void first.then((given) => {
      clearTimeout(timer);
      if (given.kind === "auth") resolve({ authorization: `Bearer ${given.token}`, tenant: given.tenant });
      else reject(new StreamRefusal(CLOSE.unauthenticated, given.kind === "malformed" ? given.problem : `the first message must be ${AUTH_MESSAGE}`));
    });
  });
}

/** What a message is: `{ "type": "auth", "token", "tenant"? }` with a token and a tenant (if any) that are text, or malformed, or another. */
function readClientMessage(data: RawData): ClientMessage {
  let message: unknown;
  try {
    message = parseJson(data.toString());
  } catch {
    return { kind: "other" };
  }
  const m = message as { type?: unknown; token?: unknown; tenant?: unknown } | null;
  if (m === null || typeof m !== "object" || m.type !== "auth") return { kind: "other" };
  const malformed = (problem: string): ClientMessage => ({ kind: "malformed", problem: `the auth message ${problem}; send ${AUTH_MESSAGE}` });
  if (m.token === undefined) return malformed("has no token");
  if (typeof m.token !== "string" || m.token === "") return malformed("has a token that is not a JWT string");
  if (m.tenant !== undefined && typeof m.tenant !== "string") return malformed("has a tenant that is not a string");
  return { kind: "auth", token: m.token, tenant: m.tenant };
}

/** Ends the connections that did not answer the last ping, and pings the others. */
function pingRound(connections: Set<StreamConnection>): void {
  for (const c of connections) {
    if (c.awaitingPong) {
      c.socket.terminate();
      continue;
    }
    c.awaitingPong = true;
    c.socket.ping();
  }
}

/** The close code of a refused token: 4401, or 1013 (try again later) while the identity provider's keys cannot be fetched. */
function refusalCode(err: ProblemError, otherwise: number): number {
  if (err.code === "UNAVAILABLE") return 1013;
  return err.code === "UNAUTHENTICATED" ? CLOSE.unauthenticated : otherwise;
}
