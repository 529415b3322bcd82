import { Ajv } from "ajv";
import ajvFormats from "ajv-formats";
import { expect } from "chai";
import fc from "fast-check";
import { arbitraryOf, type JsonSchema } from "../support/schema-arbitrary.js";
import { describeService } from "./openapi.test.js";

/** The fuzzer's schema → arbitrary converter: without hostility, what it makes is what the schema allows. */
describe("schema arbitraries of the fuzzer", function () {
  this.timeout(60_000);
  it("make only values the schema accepts when not hostile, for every parameter and body of the description", async () => {
    const doc = await describeService();
    const ajv = new Ajv({ strict: false });
    ajvFormats.default(ajv);
    let checked = 0;
    for (const item of Object.values(doc.paths)) {
      for (const op of Object.values(item)) {
        const schemas: JsonSchema[] = [...(op.parameters ?? []).map((p) => p.schema as JsonSchema), ...Object.values(op.requestBody?.content ?? {}).map((m) => m.schema as JsonSchema)];
        for (const schema of schemas) {
          const validate = ajv.compile(schema);
          fc.assert(
            fc.property(arbitraryOf(schema, { hostile: 0, hints: {} }), (value) => {
              checked++;
              expect(validate(value), JSON.stringify(validate.errors)).to.equal(true);
            }),
            { numRuns: 30, seed: 42 },
          );
        }
      }
    }
    expect(checked).to.be.greaterThan(600);
  });

  it("make values the schema refuses when hostile", () => {
    const schema: JsonSchema = { type: "object", properties: { limit: { type: "integer", minimum: 1, maximum: 10 } }, required: ["limit"], additionalProperties: false };
    const validate = new Ajv({ strict: false }).compile(schema);
    const values = fc.sample(arbitraryOf(schema, { hostile: 2, hints: {} }), { numRuns: 300, seed: 7 });
    expect(values.filter((v) => !validate(v)).length).to.be.greaterThan(20);
    expect(values.filter((v) => validate(v)).length).to.be.greaterThan(20);
  });
});
