import type { FastifyRequest } from "fastify";
import type { Actor } from "../db/definition-history.js";
import { ProblemError } from "../errors.js";

const TENANT_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** The tenant of a protected route's request; the access hook has checked it before any handler runs. */
export function requireTenant(request: FastifyRequest): string {
  if (request.tenant === undefined) throw new ProblemError("MISSING_TENANT", "the X-TENANT-ID header is required");
  return request.tenant;
}

/** The tenant an `X-TENANT-ID` header (or a stream's auth message) names, checked (contract §9). */
export function readTenant(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === "") {
    throw new ProblemError("MISSING_TENANT", "the X-TENANT-ID header is required");
  }
  const tenant = value.trim();
  if (!TENANT_PATTERN.test(tenant)) {
    const message = "X-TENANT-ID must be 1 to 128 visible ASCII characters";
    throw new ProblemError("INVALID_REQUEST", message, { errors: [{ path: "headers.x-tenant-id", message }] });
  }
  return tenant;
}

/** Who makes a change, as a definition's history records it: the token's user id and name. */
export function actorOf(request: FastifyRequest): Actor {
  return { userId: request.principal?.userId, name: request.principal?.name };
}
