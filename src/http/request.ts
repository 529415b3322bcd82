import type { FastifyRequest } from "fastify";
import { ProblemError } from "../errors.js";

/** The tenant of a protected route's request; the access hook has checked it before any handler runs. */
export function requireTenant(request: FastifyRequest): string {
  if (request.tenant === undefined) throw new ProblemError("MISSING_TENANT", "the X-TENANT-ID header is required");
  return request.tenant;
}
