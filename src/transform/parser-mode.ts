import type { Token } from "./scanner.js";

/**
 * Follows JSONata's parser (jsonata 2.2) just far enough to know how it reads the next token: a
 * `/` is a regular expression where the parser reads a token in prefix position
 * (`advance()` without `infix`), division elsewhere. That is mostly "an operand is expected", with
 * the parser's own exceptions, each reproduced here:
 *
 * - The token right after the first token of an operand is read in infix position, even when that
 *   first token is a prefix `(`, `[`, `{`, `|` or `-`: `(/a/)`, `[/a/]` and `-/a/` divide.
 * - The token after `)` of an order-by `^(…)`, after `]` of an empty filter `a[]`, after `}` of a
 *   function body, after the `|` of a transform, and inside and after a function signature `<…>`
 *   is read in prefix position: `a[] / 2` starts a regular expression.
 * - `and`, `or` and `in` are names where an operand is expected; a `?` first in an argument list
 *   (partial application) and a `<` or `>` first in an order-by term are read in prefix position.
 *
 * test/transform/lexer.test.ts holds it to JSONata's own parser, token by token.
 */

type Opener = "block" | "call" | "lambdaArgs" | "orderBy" | "array" | "filter" | "object" | "grouping" | "lambdaBody";
type Frame = { kind: Opener } | { kind: "transform"; updating: boolean } | { kind: "signature"; depth: number };

/** What the previous token leaves the parser waiting for, beyond operand or operator. */
type Pending = "lambdaName" | "caret" | "lambdaArgsClosed" | "signatureClosed" | "argumentStart" | "sortTermStart" | undefined;

const CLOSES: Record<string, readonly Opener[]> = {
  ")": ["block", "call", "lambdaArgs", "orderBy"],
  "]": ["array", "filter"],
  "}": ["object", "grouping", "lambdaBody"],
};
/** Closers JSONata reads past with `advance(id)` rather than `advance(id, true)`. */
const PREFIX_AFTER_CLOSE: readonly Opener[] = ["orderBy", "lambdaBody"];
const PREFIX_OPENERS: Record<string, Opener> = { "(": "block", "[": "array", "{": "object" };
const INFIX_OPENERS: Record<string, Opener> = { "(": "call", "[": "filter", "{": "grouping" };

export class ParserMode {
  /** Whether the parser reads the next token in prefix position: a `/` there starts a regular expression. */
  regexAllowed = true;
  /** Whether the next token starts an operand (JSONata's `nud`) rather than continuing one (`led`). */
  private operandExpected = true;
  private readonly frames: Frame[] = [];
  private pending: Pending;
  /** The frame the previous token opened: `]` right after a filter's `[` makes an empty filter. */
  private justOpened: Frame | undefined;

  /** Takes the token just read. */
  advance(token: Token): void {
    const pending = this.pending;
    const justOpened = this.justOpened;
    this.pending = undefined;
    this.justOpened = undefined;
    const top = this.frames.at(-1);
    const op = token.kind === "operator" ? token.value : undefined;

    if (top?.kind === "signature") return this.inSignature(top, op);
    if (pending === "caret" && op === "(") return this.open({ kind: "orderBy" }, true);
    if (pending === "lambdaName" && op === "(") return this.open({ kind: "lambdaArgs" }, true);
    if (pending === "lambdaArgsClosed" && op === "<") return this.open({ kind: "signature", depth: 1 }, true);
    if ((pending === "lambdaArgsClosed" || pending === "signatureClosed") && op === "{") return this.open({ kind: "lambdaBody" }, true);

    if (op !== undefined && op in CLOSES) return this.close(op, justOpened, this.operandExpected);
    // Read with advance('?'), advance('<') and advance('>'), not as the start of an expression.
    if (pending === "argumentStart" && op === "?") return this.set(false, true);
    if (pending === "sortTermStart" && (op === "<" || op === ">")) return this.set(true, true);
    if (this.operandExpected) this.startOperand(token, op);
    else this.continueOperand(op);
  }

  /**
   * JSONata reads the token after the first token of an expression in infix position before it
   * looks at that first token at all, so whatever it is, the next `/` divides.
   */
  private startOperand(token: Token, op: string | undefined): void {
    if (op === undefined || op === "and" || op === "or" || op === "in") {
      // A name, variable, literal or regular expression: the operand is complete.
      this.set(false, false);
      if (token.kind === "name" && (token.value === "function" || token.value === "λ")) this.pending = "lambdaName";
    } else if (op === "*" || op === "**" || op === "%") this.set(false, false);
    else if (op in PREFIX_OPENERS) this.open({ kind: PREFIX_OPENERS[op]! }, false);
    else if (op === "|") this.open({ kind: "transform", updating: false }, false);
    else this.set(true, false);
  }

  private continueOperand(op: string | undefined): void {
    if (op === undefined) this.set(false, false);
    else if (op in INFIX_OPENERS) this.open({ kind: INFIX_OPENERS[op]! }, true);
    else if (op === "|") {
      const top = this.frames.at(-1);
      if (top?.kind === "transform" && top.updating) {
        this.frames.pop();
        this.set(false, true);
      } else {
        if (top?.kind === "transform") top.updating = true;
        this.set(true, true);
      }
    } else {
      if (op === "^") this.pending = "caret";
      const top = this.frames.at(-1)?.kind;
      if (op === "," && (top === "call" || top === "lambdaArgs")) this.pending = "argumentStart";
      if (op === "," && top === "orderBy") this.pending = "sortTermStart";
      this.set(true, true);
    }
  }

  /**
   * `asOperand`: the closer came where an operand was expected (`^()`, `^(a,)`): JSONata's
   * expression() takes it as an operand's first token and reads the next one in infix position
   * before it fails, so the closer's own prefix rule does not apply.
   */
  private close(op: string, justOpened: Frame | undefined, asOperand: boolean): void {
    const top = this.frames.at(-1);
    if (top === undefined || !(CLOSES[op]! as readonly string[]).includes(top.kind)) return this.set(false, false);
    this.frames.pop();
    const kind = top.kind as Opener;
    if (kind === "lambdaArgs") this.pending = "lambdaArgsClosed";
    const emptyFilter = kind === "filter" && top === justOpened;
    const prefixAfter = PREFIX_AFTER_CLOSE.includes(kind) && !(kind === "orderBy" && asOperand);
    this.set(false, emptyFilter || prefixAfter);
  }

  /** Every token of a signature is read in prefix position, up to the `>` that balances its `<`. */
  private inSignature(frame: { kind: "signature"; depth: number }, op: string | undefined): void {
    if (op === "<") frame.depth++;
    if (op === ">") frame.depth--;
    if (frame.depth === 0) {
      this.frames.pop();
      this.pending = "signatureClosed";
    } else if (op === "{") {
      // JSONata gives up on the signature here; what follows is read as the body.
      this.frames.pop();
      return this.open({ kind: "lambdaBody" }, true);
    }
    this.set(false, true);
  }

  private open(frame: Frame, regexAllowed: boolean): void {
    this.frames.push(frame);
    this.justOpened = frame;
    if (frame.kind === "call" || frame.kind === "lambdaArgs") this.pending = "argumentStart";
    if (frame.kind === "orderBy") this.pending = "sortTermStart";
    this.set(true, regexAllowed);
  }

  private set(operandExpected: boolean, regexAllowed: boolean): void {
    this.operandExpected = operandExpected;
    this.regexAllowed = regexAllowed;
  }
}
