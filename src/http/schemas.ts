import { Type } from "typebox";
import { EXTERNAL_ID_MAX_LENGTH, EXTERNAL_ID_PATTERN, MAX_OFFSET, UUID_PATTERN } from "../input.js";

/** The schemas of the input limits (README "Input limits"), shared by every route that takes them. */

/** A plain uuid: no `urn:uuid:` prefix (which the `uuid` format alone lets through), no braces. */
export const Uuid = Type.String({ format: "uuid", pattern: UUID_PATTERN });

/** An API or calculation definition's externalId, the same in a body and as a path parameter. */
export const ExternalId = Type.String({ minLength: 1, maxLength: EXTERNAL_ID_MAX_LENGTH, pattern: EXTERNAL_ID_PATTERN });

/** The `offset` of a paged list. */
export const Offset = Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 });
