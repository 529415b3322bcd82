import type { FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { RawData, WebSocket } from "ws";
import { ProblemError, toProblemError } from "../../errors.js";
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
    "Close codes: 4400 bad request, 4401 unauthenticated, 4403 forbidden, 4404 unknown item, 4408 too slow, 1001 going away. " +
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
    subscribe(connection, request, itemIds, since).catch((err: unknown) => {
      if (err instanceof StreamRefusal) return connection.close(err.code, err.message);
      const problem = toProblemError(err);
      logger.warn("stream failed", { code: problem.code, error: err instanceof Error ? err.message : String(err) });
      connection.close(problem.status === 503 ? 1013 : CLOSE.internal, problem.status === 503 ? "the database is unavailable; try again later" : "the stream failed");
    });
  };

  /** Authenticates, checks the items, subscribes; a resume sends the stored events first. */
  const subscribe = async (connection: StreamConnection, request: FastifyRequest, itemIds: () => string[], sinceText: string | undefined) => {
    const caller = await authenticate(connection.socket, request);
    request.tenant = caller.tenant;
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
  const authenticate = async (socket: WebSocket, request: FastifyRequest): Promise<Caller> => {
    const given = request.headers.authorization !== undefined ? { authorization: request.headers.authorization, tenant: request.headers["x-tenant-id"] } : await authMessage(socket);
    let caller: Caller;
    try {
      caller = { principal: await deps.authenticate(given.authorization), tenant: readTenant(given.tenant) };
    } catch (err) {
      if (err instanceof ProblemError) throw new StreamRefusal(err.code === "UNAUTHENTICATED" ? CLOSE.unauthenticated : CLOSE.badRequest, err.message);
      throw err;
    }
    if (!mayActIn(caller.principal, caller.tenant)) throw new StreamRefusal(CLOSE.forbidden, "this token does not name the tenant");
    if (!caller.principal.roles.includes("admin")) throw new StreamRefusal(CLOSE.forbidden, "a stream needs a token whose roles claim contains admin");
    return caller;
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

/** Waits for the first message `{ "type": "auth", "token", "tenant" }`. */
function authMessage(socket: WebSocket): Promise<{ authorization: string; tenant: string | undefined }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.off("message", onMessage);
      reject(new StreamRefusal(CLOSE.unauthenticated, `no Authorization header and no auth message within ${AUTH_MESSAGE_MS / 1000} s`));
    }, AUTH_MESSAGE_MS);
    const onMessage = (data: RawData) => {
      clearTimeout(timer);
      let message: unknown;
      try {
        message = parseJson(data.toString());
      } catch {
        message = undefined;
      }
      const m = message as { type?: unknown; token?: unknown; tenant?: unknown } | undefined;
      if (m?.type !== "auth" || typeof m.token !== "string") {
        reject(new StreamRefusal(CLOSE.unauthenticated, 'the first message must be {"type":"auth","token":"<JWT>","tenant":"<tenant>"}'));
        return;
      }
      resolve({ authorization: `Bearer ${m.token}`, tenant: typeof m.tenant === "string" ? m.tenant : undefined });
    };
    socket.once("message", onMessage);
    socket.once("close", () => clearTimeout(timer));
  });
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
