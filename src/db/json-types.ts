import pg from "pg";
import { parseJson } from "../json.js";

/** PostgreSQL's type OIDs of `json` and `jsonb`. */
const JSON_OID = 114;
const JSONB_OID = 3802;

/**
 * pg's type parsers, with `json` and `jsonb` read by {@link parseJson} instead of `JSON.parse`
 * (README "Known defect of the runtime"): the `types` of every connection the pools open. Given
 * per connection, so pg's process-wide parsers stay as they are.
 */
export const pgTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    (oid === JSON_OID || oid === JSONB_OID) && format !== "binary"
      ? parseJson
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig["getTypeParser"],
};

/** The same for the embedded database: PGlite's `parsers` option (the rest stay PGlite's own). */
export const pgliteParsers: Record<number, (text: string) => unknown> = {
  [JSON_OID]: parseJson,
  [JSONB_OID]: parseJson,
};
