import { Type } from "typebox";

/** Schemas more than one route file uses; each is defined once here. */

/** The externalId of an API or calculation definition, in a body and in a path. */
export const ExternalId = Type.String({ minLength: 1, maxLength: 200, pattern: "^[A-Za-z0-9._:~-]+$" });

/** `?limit=&offset=` of every list: 1–1000 rows, 100 by default, from row `offset`. */
export const PageQuery = {
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
  offset: Type.Integer({ minimum: 0, default: 0 }),
};

/** The page fields every list answers beside its rows. */
export const PageFields = { total: Type.Integer({ minimum: 0 }), limit: Type.Integer(), offset: Type.Integer() };

/** One bucket of an aggregated series: its start and value (null for an empty bucket without gap filling). */
export const Bucket = Type.Object({ timestamp: Type.String({ format: "date-time" }), value: Type.Union([Type.Number(), Type.Null()]) }, { additionalProperties: false });

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
  },
  { $id: "Problem", title: "Problem", additionalProperties: false },
);
