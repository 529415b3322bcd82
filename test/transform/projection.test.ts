import { expect } from "chai";
import fc from "fast-check";
import { EXAMPLE_DEFINITION } from "../../src/demo/seed.js";
import { compileProjection, DECLINED } from "../../src/transform/projection.js";
import { TransformPool } from "../../src/transform/pool.js";
import type { TransformInput } from "../../src/transform/protocol.js";
import { compileValid, problemOf } from "../support/transforms.js";

const LIMITS = { timeoutMs: 0, maxDepth: 500, maxSequence: 1_000_000 };
const compile = (text: string) => compileValid(text, LIMITS);

/** A template of the projection grammar, as text. */
type Template = { text: string };

const LABELS = ["a", "b", "c", "constructorX"];
const FIELDS = ["id", "externalId", "x", "y", "and", "n"];
const PARAMS = ["p", "q", "tenantId"];

/** Whitespace or a comment between tokens: JSONata skips both. */
const gap = fc.constantFrom("", " ", "\n  ", " /* c */ ", "\t");
/** A JSONata string literal for a text: JSON's escapes are JSONata's; single quotes too. */
const quoted = (s: string, single: boolean) => (single ? `'${JSON.stringify(s).slice(1, -1).replace(/\\"/g, '"').replace(/'/g, "\\u0027")}'` : JSON.stringify(s));
const anyText = fc.oneof(fc.string({ unit: "grapheme", maxLength: 8 }), fc.string({ unit: "binary", maxLength: 4 }), fc.constantFrom("", "id", "a b", "é", "😀", "\u0000", '"', "\\"));
const key = anyText.filter((k) => k !== "__proto__");

const literal: fc.Arbitrary<Template> = fc.oneof(
  fc.tuple(anyText, fc.boolean()).map(([s, single]) => ({ text: quoted(s, single) })),
  // A literal number is never negative (`-1` is JSONata's unary minus, not in the grammar).
  fc.double({ noNaN: true, noDefaultInfinity: true, min: 0 }).map((n) => ({ text: JSON.stringify(Object.is(n, -0) ? 0 : n) })),
  fc.integer({ min: 0, max: 10_000 }).map((n) => ({ text: String(n) })),
  fc.constantFrom({ text: "true" }, { text: "false" }, { text: "null" }),
);
const param: fc.Arbitrary<Template> = fc.tuple(fc.constantFrom(...PARAMS), gap).map(([name, g]) => ({ text: `\${${g}${name}${g}}` }));
/** An alias as written, and the key it gives. */
const alias = fc.oneof(
  fc.constantFrom("alias", "usage", "or", "k_1").map((name) => ({ text: name, value: name })),
  fc.tuple(key, fc.boolean()).map(([s, single]) => ({ text: quoted(s, single), value: s })),
);
const result: fc.Arbitrary<Template> = fc
  .tuple(
    fc.constantFrom(...LABELS),
    fc.uniqueArray(fc.tuple(fc.constantFrom(...FIELDS), fc.option(alias, { nil: undefined })), { maxLength: 5, selector: ([f, a]) => a?.value ?? f }),
    gap,
    fc.boolean(),
  )
  .map(([label, fields, g, trailingComma]) => {
    const list = fields.map(([field, a]) => (a === undefined ? field : `${a.text}${g}:${g}${field}`)).join(`,${g}`);
    return { text: `result(?${label})${g}{${g}${list}${trailingComma && fields.length > 0 ? "," : ""}${g}}` };
  });
const { object } = fc.letrec<{ object: Template; value: Template }>((tie) => ({
  object: fc
    .tuple(fc.uniqueArray(fc.tuple(key, fc.boolean(), tie("value")), { maxLength: 5, selector: ([k]) => k }), gap)
    .map(([pairs, g]) => ({ text: `{${g}${pairs.map(([k, single, v]) => `${quoted(k, single)}${g}:${g}${v.text}`).join(`${g},${g}`)}${g}}` })),
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, literal, param, result, tie("object")),
}));
const template = fc.oneof(object, result);

/** Entities as a query gives them: an id, and any subset of fields with any JSON value (nested, null, unicode). */
const entity = fc
  .record(
    { id: fc.constantFrom("id-1", "id-2", "id-3"), externalId: fc.jsonValue({ maxDepth: 2 }), x: fc.jsonValue({ maxDepth: 2 }), y: fc.constantFrom(null, 0, "", "ü"), and: fc.string(), n: fc.double({ noNaN: true, noDefaultInfinity: true }) },
    { requiredKeys: [] },
  )
  .map((e) => ({ ...e, type: "T", key: "k" }));
const input = fc.record({
  // 0, 1 or many entities per label; a label may be missing.
  queryOutput: fc.dictionary(fc.constantFrom(...LABELS), fc.oneof(fc.constant([]), fc.array(entity, { minLength: 1, maxLength: 1 }), fc.array(entity, { maxLength: 5 }))),
  params: fc.dictionary(fc.constantFrom(...PARAMS), fc.oneof(fc.string({ unit: "grapheme" }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean())),
  timelines: fc.option(
    fc.constant(
      new Map([
        [
          "usage",
          new Map<string, unknown>([
            ["id-1", [{ timestamp: "2024-01-01T00:00:00.000Z", value: 1.5 }]],
            ["id-2", []],
          ]),
        ],
      ]),
    ),
    { nil: undefined },
  ),
}) as fc.Arbitrary<TransformInput>;


describe("pure projections (evaluated by the service, without a transform process)", function () {
  this.timeout(120_000);
  const pools: TransformPool[] = [];
  const pool = (maxResultBytes?: number) => {
    const created = new TransformPool({ processes: 2, timeoutMs: 10_000, ...(maxResultBytes !== undefined ? { maxResultBytes } : {}) });
    pools.push(created);
    return created;
  };
  after(() => Promise.all(pools.map((p) => p.close())));

  it("gives exactly what JSONata gives in a transform process, on random projections and query outputs", async () => {
    const p = pool();
    await fc.assert(
      fc.asyncProperty(template, input, async ({ text }, given) => {
        const transform = compile(text);
        expect(transform.projection, text).to.be.a("function");
        const projected = transform.projection!(given);
        expect(projected).to.not.equal(DECLINED);
        // What a client receives is the JSON text: key order, omitted keys, numbers, unicode. It is
        // compared as the child wrote it: Node 24's JSON.parse can misread an escaped key (after
        // `{"\\": 1}`, it reads `{"\"": 1}` as `{"\\": 1}`), which the projection never parses.
        const inChild = await p.evaluateInChildAsJson(transform, given);
        expect(JSON.stringify(projected), text).to.equal(inChild);
        expect(JSON.stringify(await p.evaluate(transform, given))).to.equal(inChild);
      }),
      { numRuns: 400 },
    );
  });

  it("projects the specification's example: an array for 0, 1 and 2 access points alike", async () => {
    const transform = compile(EXAMPLE_DEFINITION.transform!);
    const ap = (n: number) => ({ id: `id-${n}`, type: "AccessPoint", key: `k${n}`, externalId: `E${n}`, publicId: `P${n}`, accessPointType: n === 1 ? "GAS" : undefined });
    const p = pool();
    for (const rows of [[], [ap(1)], [ap(1), ap(2)]]) {
      const given = { queryOutput: { accessPoint: rows, agreement: [{ id: "g", type: "Agreement", key: "a" }] }, params: { publicId: "AGR-1", tenantId: "t" } };
      const projected = transform.projection!(given);
      expect(projected).to.deep.equal({
        accessPoints: rows.map((r) => ({ externalId: r.externalId, publicId: r.publicId, id: r.id, accessPointType: r.accessPointType ?? null })),
      });
      expect(JSON.stringify(projected)).to.equal(await p.evaluateInChildAsJson(transform, given));
    }
  });

  it("leaves every other text to JSONata", () => {
    for (const text of [
      "1",
      '"text"',
      "${p}",
      "-1",
      '{ "a": -1 }',
      '{ "a": 1 + 1 }',
      '{ "a": $x }',
      '{ "a": $ }',
      '{ "a": a }',
      '{ a: 1 }',
      '{ "a": 1 }.a',
      '{ "a": 1 }{ "b": 2 }',
      '{ "a": 1, "a": 2 }',
      '{ "__proto__": { "polluted": true } }',
      '{ "a": result(?x) { __proto__: id } }',
      "result(?x) { id }[0]",
      "result(?x) { id }.id",
      '{ "a": result(?x) { id } ~> $count }',
      '{ "a": [1] }',
      '{ "a": ${"n": 1} }',
      '{ "a": (1) }',
      '{ "a": /re/ }',
      "{ \"a\": 'unclosed }",
    ]) {
      expect(compileProjection(text), text).to.equal(undefined);
    }
  });

  it("declines input that is not a query's plain data; the transform process then answers as before", async () => {
    const p = pool();
    const fromPrototype = compile('{ "a": result(?constructor) { id } }');
    const given = { queryOutput: {}, params: {} };
    expect(fromPrototype.projection!(given)).to.equal(DECLINED);
    const childErr = await problemOf(p.evaluateInChild(fromPrototype, given));
    const err = await problemOf(p.evaluate(fromPrototype, given));
    expect({ code: err.code, message: err.message }).to.deep.equal({ code: childErr.code, message: childErr.message });

    const notEntities = compile('{ "a": result(?x) { id } }');
    const strings = { queryOutput: { x: ["s"] }, params: {} };
    expect(notEntities.projection!(strings)).to.equal(DECLINED);
    expect(await p.evaluate(notEntities, strings)).to.deep.equal(await p.evaluateInChild(notEntities, strings));

    const inherited = compile('{ "a": ${toString} }');
    expect(inherited.projection!({ queryOutput: {}, params: {} })).to.equal(DECLINED);
    expect(inherited.projection!({ queryOutput: {}, params: { toString: "mine" } })).to.deep.equal({ a: "mine" });
  });

  it("does not start a transform process for a projection", async () => {
    const p = pool();
    expect(await p.evaluate(compile('{ "n": 1 }'), { queryOutput: {}, params: {} })).to.deep.equal({ n: 1 });
    expect(p.processIds()).to.deep.equal([]);
  });

  it("keeps TRANSFORM_MAX_RESULT_BYTES, counted in UTF-8 bytes, with the transform process's error", async () => {
    const p = pool(10_000);
    const transform = compile('{ "a": result(?x) { v } }');
    // {"a":[{"v":"é…"}]}: 16 bytes besides the value, 2 bytes per "é": 4,992 make 10,000 bytes, the limit.
    const sized = (n: number) => ({ queryOutput: { x: [{ id: "1", v: "é".repeat(n) }] }, params: {} });
    expect(await p.evaluate(transform, sized(4992))).to.deep.equal({ a: [{ v: "é".repeat(4992) }] });
    const err = await problemOf(p.evaluate(transform, sized(4993)));
    const childErr = await problemOf(p.evaluateInChild(transform, sized(4993)));
    expect(err.code).to.equal("TRANSFORM_FAILED");
    expect(err.status).to.equal(422);
    expect(err.message).to.equal("the transform's result is larger than 10000 bytes (TRANSFORM_MAX_RESULT_BYTES)");
    expect({ message: err.message, errors: err.errors }).to.deep.equal({ message: childErr.message, errors: childErr.errors });
    expect(await p.evaluateInChild(transform, sized(4992))).to.deep.equal({ a: [{ v: "é".repeat(4992) }] });
  });
});
