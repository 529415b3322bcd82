import { randomUUID } from "node:crypto";
import type { Socket } from "node:net";
import { Readable, Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import type { FastifyError, FastifyRequest } from "fastify";
import { callerProblem, ProblemError } from "../errors.js";
import { inputFaults } from "../input.js";

/**
 * The longest path parameter the router accepts; beyond it a request is `414`. Above every limit a
 * route's schema sets (an externalId's 200 characters), so a parameter too long for its route is
 * a `400` naming it, as the same value in a body is.
 */
export const MAX_PARAM_LENGTH = 1000;

/** The charsets a body may declare: UTF-8 (or none, which means UTF-8). */
const UTF8 = new Set(["utf-8", "utf8"]);

/** The `charset` parameter of a Content-Type, lower-cased and unquoted; undefined when absent. */
export function charsetOf(contentType: string): string | undefined {
  for (const part of contentType.split(";").slice(1)) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim().toLowerCase() !== "charset") continue;
    return part.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1").toLowerCase();
  }
  return undefined;
}

/** preParsing: a body in any charset but UTF-8 is a 415, before a byte of it is read as UTF-8. */
export async function refuseForeignCharset(request: FastifyRequest): Promise<void> {
  const contentType = request.headers["content-type"];
  if (contentType === undefined) return;
  const charset = charsetOf(contentType);
  if (charset === undefined || UTF8.has(charset)) return;
  throw new ProblemError("INVALID_REQUEST", `the body's charset "${charset}" is not supported; send it as UTF-8 (charset=utf-8, or no charset)`, {
    status: 415,
    errors: [{ path: "headers.content-type", message: `charset "${charset}" is not supported; only utf-8` }],
  });
}

/** The `Content-Encoding`s a body may be sent in, and the decoder of each. */
const DECODERS: Record<string, () => Transform> = {
  gzip: () => createGunzip(),
  "x-gzip": () => createGunzip(),
  deflate: () => createInflate(),
  br: () => createBrotliDecompress(),
};

/** A decoded body, with the bytes received as sent (fastify compares them with `Content-Length`). */
type DecodedBody = Transform & { receivedEncodedLength: number };

/**
 * preParsing: a body sent with `Content-Encoding` gzip, deflate or br (or several, in the order
 * applied) is decoded as it streams in, and `limit` holds for the *decoded* bytes, every one of
 * them (blank lines too), whatever the body's type: a small body that inflates past it (a zip bomb)
 * is a `413`, and decoding stops at the chunk that crosses it. An NDJSON or CSV upload sent as it
 * is streams without a total limit (its bytes cost its sender as much as the server); encoded, it
 * is bounded like any other body, and refused whole (its transaction rolled back). Any other
 * encoding is a `415` naming `headers.content-encoding`; text that does not decode, a `400`.
 */
export function decodeContentEncoding(limit: number) {
  return async (request: FastifyRequest, _reply: unknown, payload: Readable): Promise<Readable | undefined> => {
    const header = request.headers["content-encoding"];
    if (header === undefined || request.headers["content-type"] === undefined) return undefined;
    const codings = header.split(",").map((c) => c.trim().toLowerCase()).filter((c) => c !== "" && c !== "identity");
    if (codings.length === 0) return undefined;
    const unknown = codings.find((c) => DECODERS[c] === undefined);
    if (unknown !== undefined) {
      throw new ProblemError("INVALID_REQUEST", `the body's Content-Encoding "${unknown}" is not supported; send it as it is, or in gzip, deflate or br`, {
        status: 415,
        errors: [{ path: "headers.content-encoding", message: `"${unknown}" is not supported; only gzip, deflate and br` }],
      });
    }
    return decodedBody(payload, codings, limit);
  };
}

/** `payload` through the decoders of `codings`, last applied first decoded, cut off past `limit` decoded bytes. */
function decodedBody(payload: Readable, codings: string[], limit: number): DecodedBody {
  const decoders = codings.toReversed().map((c) => DECODERS[c]!());
  let decodedBytes = 0;
  const stop = (err: Error) => {
    payload.unpipe(decoders[0]);
    for (const d of decoders) d.destroy();
    body.destroy(err);
  };
  const body = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      decodedBytes += chunk.length;
      if (decodedBytes > limit) {
        done();
        const most = `${limit} bytes, the most BODY_LIMIT_BYTES allows`;
        stop(
          new ProblemError("INVALID_REQUEST", `the request body, decoded from its Content-Encoding, is larger than ${most}; nothing was stored`, {
            status: 413,
            errors: [{ path: "body", message: `decoded, it is larger than ${most}` }],
          }),
        );
        return;
      }
      done(null, chunk);
    },
  }) as DecodedBody;
  body.receivedEncodedLength = 0;
  // Its reader (fastify's body parser, an upload's row reader) takes its error; a body nobody reads
  // (a GET that carries one, a request refused before its body is read) must not crash the process.
  body.on("error", () => undefined);
  payload.on("data", (chunk: Buffer) => {
    body.receivedEncodedLength += chunk.length;
  });
  for (const d of decoders) {
    d.once("error", (err) => stop(new ProblemError("INVALID_REQUEST", `the body cannot be decoded as its Content-Encoding ${codings.join(", ")} says: ${err.message}`, { errors: [{ path: "headers.content-encoding", message: err.message }] })));
  }
  let last: Readable = payload;
  for (const d of decoders) last = last.pipe(d);
  last.pipe(body);
  return body;
}

/**
 * preValidation: every string the request carries — the JSON body at any depth, its keys, the
 * query string and the path parameters — checked once, before any schema or handler reads it.
 * A streamed upload (NDJSON, CSV) is checked row by row where its rows are read.
 */
export async function refuseFaultyText(request: FastifyRequest): Promise<void> {
  const faults = [
    ...inputFaults(request.params, "params"),
    ...inputFaults(request.query, "querystring"),
    ...(request.body instanceof Readable ? [] : inputFaults(request.body, "body")),
  ];
  if (faults.length === 0) return;
  const first = faults[0]!;
  throw new ProblemError("INVALID_REQUEST", `the request is not valid: ${first.path} ${first.message}`, { errors: faults });
}

/** The answers of errors fastify raises before a route is found (a bad URL encoding, a too long parameter). */
export function frameworkProblem(err: FastifyError): ProblemError {
  if (err.code === "FST_ERR_MAX_PARAM_LENGTH") {
    return new ProblemError("INVALID_REQUEST", `a path segment is longer than ${MAX_PARAM_LENGTH} characters`, { status: 414 });
  }
  if (err.code === "FST_ERR_BAD_URL") return new ProblemError("INVALID_REQUEST", "the URL holds an invalid percent-encoding");
  return new ProblemError("INVALID_REQUEST", err.message, { status: typeof err.statusCode === "number" && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400 });
}

/**
 * Node's HTTP parser refuses a request before fastify sees it (headers too large, a malformed
 * header or Content-Length, a time-out): answered here, on the socket, as problem+json.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const [status, detail] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "the request's headers are larger than the server accepts"]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "the request did not arrive in time"]
        : [400, `the request is not valid HTTP (${err.code ?? "unreadable"})`];
  const requestId = randomUUID();
  const body = JSON.stringify({ ...callerProblem(new ProblemError("INVALID_REQUEST", detail, { status })), requestId });
  const reason = status === 431 ? "Request Header Fields Too Large" : status === 408 ? "Request Timeout" : "Bad Request";
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/problem+json\r\nX-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
