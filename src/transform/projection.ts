/**
 * Pure projections: the transforms the service evaluates itself, without the hop to a transform
 * process. A transform is user-written JSONata and never runs in the service's process (a regex,
 * `$distinct` or `$pad` can freeze or end it: see pool.ts); but most definitions only reshape the
 * query output, as the specification's example does:
 *
 *   { "accessPoints": result(?accessPoint) { externalId, publicId, id, accessPointType } }
 *
 * Such a text is recognised here, from its tokens (read as JSONata reads them, lexer.ts), against a
 * grammar that has no loop, no call, no operator and no name lookup:
 *
 *   projection := object | result
 *   object     := "{" [ pair { "," pair } ] "}"          keys distinct, none "__proto__"
 *   pair       := string ":" value
 *   value      := object | result | ${name} | string | number | true | false | null
 *   result     := result(?label) { field | alias: field, … }   (result-construct.ts; no alias "__proto__")
 *
 * Anything else, down to a comment-free `-1` (JSONata's unary minus), stays JSONata and goes to the
 * processes. What a recognised text does is then plain JavaScript made of closures (no text is
 * ever compiled or evaluated as code): its work and its output are linear in the query output and
 * the length of the text, both bounded already, and it calls nothing the text names.
 *
 * It gives what JSONata gives, checked against the processes on random inputs
 * (test/transform/projection.test.ts): an object's keys in the order written, a pair whose value is
 * undefined (a parameter without a value) left out, `result()` an array whatever its length (the
 * bound function answers a plain array, not a JSONata sequence, so 0 and 1 entities stay `[]` and
 * `[{…}]`), its objects built by the same function the processes use ({@link resultObjects}).
 * Where the input is not the plain data a query gives (a label that is not an array, an entity
 * that is not an object, a label or parameter named like a member of Object.prototype), the
 * projection declines and the processes evaluate the text as before.
 */
import { isOperator, tokenize, type Token } from "./lexer.js";
import { opensResult, readResultConstruct, SIMPLE_NAME } from "./result-construct.js";
import { isParameter } from "./rewrite.js";
import { resultObjects } from "./result-objects.js";
import type { TransformInput } from "./protocol.js";

/** A projection's value for one input, or {@link DECLINED}: the processes evaluate it. */
export type Projection = (input: TransformInput) => unknown;

/** What a projection answers for an input it does not handle exactly as JSONata would. */
export const DECLINED: unique symbol = Symbol("declined");

/** The deepest nesting of objects a projection is made of; deeper texts stay JSONata. */
const MAX_DEPTH = 64;

type Node = (input: TransformInput) => unknown;

class Declined extends Error {}
const declined = new Declined();

/** The projection a transform text is, or undefined when it is not one (then it is evaluated as JSONata). */
export function compileProjection(text: string): Projection | undefined {
  const { tokens, error } = tokenize(text);
  if (error !== undefined || tokens.length === 0) return undefined;
  const reader = new Reader(tokens, text);
  let node: Node | undefined;
  if (opensResult(tokens, 0)) node = reader.result();
  else if (isOperator(tokens[0], "{")) node = reader.object(0);
  if (node === undefined || reader.at !== tokens.length) return undefined;
  const root = node;
  return (input) => {
    try {
      return root(input);
    } catch (err) {
      if (err === declined) return DECLINED;
      throw err;
    }
  };
}

class Reader {
  at = 0;
  constructor(
    private readonly tokens: readonly Token[],
    private readonly text: string,
  ) {}

  /** `{ "key": value, … }` from `{` at the current token. */
  object(depth: number): Node | undefined {
    if (depth > MAX_DEPTH) return undefined;
    this.at++;
    const pairs: [string, Node][] = [];
    if (isOperator(this.tokens[this.at], "}")) {
      this.at++;
      return () => ({});
    }
    for (;;) {
      const key = this.tokens[this.at];
      // JSONata refuses one key twice (D1009); `__proto__` would set the object's prototype.
      if (key?.kind !== "string" || key.value === "__proto__" || pairs.some(([k]) => k === key.value)) return undefined;
      if (!isOperator(this.tokens[this.at + 1], ":")) return undefined;
      this.at += 2;
      const value = this.value(depth);
      if (value === undefined) return undefined;
      pairs.push([key.value, value]);
      const next = this.tokens[this.at];
      this.at++;
      if (isOperator(next, "}")) break;
      if (!isOperator(next, ",")) return undefined;
    }
    return (input) => {
      const result: Record<string, unknown> = {};
      for (const [key, value] of pairs) {
        const v = value(input);
        if (v !== undefined) result[key] = v;
      }
      return result;
    };
  }

  private value(depth: number): Node | undefined {
    const token = this.tokens[this.at];
    if (token === undefined) return undefined;
    if (token.kind === "string" || token.kind === "number" || token.kind === "value") {
      this.at++;
      const literal = token.value;
      return () => literal;
    }
    if (isParameter(this.tokens, this.at)) {
      const nameToken = this.tokens[this.at + 2]!;
      const name = this.text.slice(nameToken.start, nameToken.end);
      if (!SIMPLE_NAME.test(name)) return undefined;
      this.at += 4;
      return (input) => {
        // The processes receive a copy of the parameters with Object.prototype behind it.
        if (!Object.hasOwn(input.params, name)) {
          if (name in Object.prototype) throw declined;
          return undefined;
        }
        const v = input.params[name];
        if (v !== null && v !== undefined && typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean") throw declined;
        return v;
      };
    }
    if (opensResult(this.tokens, this.at)) return this.result();
    if (isOperator(token, "{")) return this.object(depth + 1);
    return undefined;
  }

  /** `result(?label) { … }` from `result` at the current token. */
  result(): Node | undefined {
    const read = readResultConstruct(this.tokens, this.at, this.text, undefined);
    if (read.use === undefined || read.problems.length > 0) return undefined;
    const { label } = read.use;
    const fields = read.use.fields.map((f) => [f.alias, f.field] as const);
    if (fields.some(([alias]) => alias === "__proto__")) return undefined;
    this.at = read.next;
    return (input) => {
      const output = input.queryOutput;
      let entities: unknown;
      if (Object.hasOwn(output, label)) entities = output[label];
      else if (label in Object.prototype) throw declined;
      if (entities === undefined || entities === null) entities = [];
      if (!Array.isArray(entities)) throw declined;
      for (const entity of entities) if (typeof entity !== "object" || entity === null || Array.isArray(entity)) throw declined;
      return resultObjects(entities, fields, input.timelines ?? new Map());
    };
  }
}
