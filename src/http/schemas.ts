import { Type } from "typebox";
import { EXTERNAL_ID_MAX_LENGTH, EXTERNAL_ID_PATTERN, MAX_OFFSET, UUID_PATTERN } from "../input.js";

/** Schemas more than one route file uses, each defined once: the input limits (docs/reference/input-limits.md) and the answers. */

/** A plain uuid: no `urn:uuid:` prefix (which the `uuid` format alone lets through), no braces. */
export const Uuid = Type.String({ format: "uuid", pattern: UUID_PATTERN });

/** An API or calculation definition's externalId, the same in a body and as a path parameter. */
export const ExternalId = Type.String({ minLength: 1, maxLength: EXTERNAL_ID_MAX_LENGTH, pattern: EXTERNAL_ID_PATTERN });

/** The `offset` of a paged list. */
export const Offset = Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 });

/** `?limit=&offset=` of every list: 1–1000 rows, 100 by default, from row `offset`. */
export const PageQuery = {
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
  offset: Offset,
};

/** The page fields every list answers beside its rows. */
export const PageFields = { total: Type.Integer({ minimum: 0 }), limit: Type.Integer(), offset: Type.Integer() };

/** One bucket of an aggregated series: its start and value (null for an empty bucket without gap filling). */
export const Bucket = Type.Object({ timestamp: Type.String({ format: "date-time" }), value: Type.Union([Type.Number(), Type.Null()]) }, { additionalProperties: false });

export { DateRangeBody, QueryOptionsBody } from "./series-schemas.js";

/** A 204 answer: no content. */
export const NoContent = Type.Null({ description: "No content" });

/** Contract §7: every error, `application/problem+json`; registered once as the component `Problem`. */
export const Problem = Type.Object(
  {
    type: Type.String({ description: "urn:problem:<code in kebab case>" }),
    title: Type.String(),
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    code: Type.String({ description: "contract §7 code, e.g. INVALID_REQUEST" }),
    detail: Type.String(),
    errors: Type.Optional(
      Type.Array(
        Type.Object(
          { path: Type.Optional(Type.String()), message: Type.String(), line: Type.Optional(Type.Integer()), column: Type.Optional(Type.Integer()) },
          { additionalProperties: true },
        ),
        { description: "every problem of a body, definition or upload" },
      ),
    ),
    requestId: Type.Optional(Type.String({ description: "the request's id, as in the X-Request-Id answer header; the service log names it" })),
  },
  { $id: "Problem", title: "Problem", additionalProperties: false },
);
