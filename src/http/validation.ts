import { _, Ajv, str, type ValidateFunction } from "ajv";
import ajvFormats from "ajv-formats";
import type { FastifySchemaCompiler } from "fastify";
import { validatedPart } from "./series-schemas.js";

// ajv-formats is CommonJS; its plugin is also exported as `default` of module.exports.
const addFormats = ajvFormats.default;

/** Node's byte count, as the generated validators call it (Buffer is a global of their scope too). */
const utf8BytesCode = _`Buffer.byteLength`;

function createAjv(coerceTypes: boolean | "array"): Ajv {
  const ajv = new Ajv({ allErrors: true, removeAdditional: false, useDefaults: true, coerceTypes, strict: false });
  addFormats(ajv);
  // The byte limits of indexed text (docs/reference/input-limits.md): `maxLength` counts characters, an
  // index counts UTF-8 bytes. An extension keyword, so the OpenAPI description carries it too.
  ajv.addKeyword({
    keyword: "x-maxBytes",
    type: "string",
    schemaType: "number",
    code: (cxt) => cxt.fail(_`${utf8BytesCode}(${cxt.data}) > ${cxt.schema as number}`),
    error: { message: ({ schema }) => str`must be at most ${schema as number} bytes in UTF-8`, params: ({ schema }) => _`{limit: ${schema as number}}` },
  });
  return ajv;
}

/**
 * The parts of a schema its service checks (series-schemas.ts) are compiled as plain values. Two validators: JSON bodies are checked as sent (a `5` is not a `"5"`), while the query string,
 * path parameters and headers, which are text by nature, are coerced to the declared types.
 */
export function schemaCompiler(): FastifySchemaCompiler<unknown> {
  const strict = createAjv(false);
  const coercing = createAjv("array");
  return ({ schema, httpPart, contentType }) => {
    // A body that is not JSON (NDJSON, CSV) is a stream here: its reader checks it row by row.
    if (httpPart === "body" && contentType !== undefined && contentType !== "application/json") return (data: unknown) => ({ value: data });
    const validate: ValidateFunction = (httpPart === "body" ? strict : coercing).compile(validatedPart(schema) as object);
    return (data: unknown) => (validate(data) ? { value: data } : { error: Object.assign(new Error("validation failed"), { validation: validate.errors }) });
  };
}
