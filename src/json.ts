/**
 * `JSON.parse`, made safe from a defect of Node 24's V8 (nodejs/node#63785,
 * docs/decisions/2026-11-23-json-parser-for-escaped-keys.md). When V8 parses an object key it first tries the key of the transition that
 * objects with the same keys so far already took, and compares that key's *decoded* characters
 * with the key's *raw* characters in the text. A key holding an escape can then be taken for an
 * earlier key holding a backslash: after `{"a\\": 1}`, the text `{"a\"": 1}` gives the key `a\`.
 *
 * Only a key written with an escape can be misread (without one, raw and decoded characters are
 * the same, so the comparison is right), and only one whose object started with the same keys as
 * a live object that has a key holding a backslash. String values are never affected.
 *
 * So: a text with no backslash, or none inside a key, goes to `JSON.parse` as it is. Any other is
 * read by a strict parser of our own, which builds every object itself.
 */
export function parseJson(text: string): unknown {
  if (text.indexOf("\\") === -1 || !hasEscapedKey(text)) return JSON.parse(text) as unknown;
  return parseJsonStrictly(text);
}

/** Always the strict parser of {@link parseJson}, whatever the text holds (for the tests and the bench). */
export function parseJsonStrictly(text: string): unknown {
  try {
    return new StrictParser(text).parse();
  } catch (err) {
    if (!(err instanceof NotJson)) throw err;
    // The text is not JSON: JSON.parse says so too, in its own words (the same class and message).
    JSON.parse(text);
    // Unreachable unless the two disagree (the property tests say they do not): refuse, as we would.
    throw new SyntaxError(`${err.message} in JSON at position ${err.position}`, { cause: err });
  }
}

/**
 * True when some object key in `text` holds a backslash. Exact for any JSON text: outside its
 * strings JSON has neither `"` nor `\`, so each `"` found outside one opens a string, which ends
 * at the next `"` that follows an even number of backslashes; a string followed (after white
 * space) by `:` is a key. For a text that is not JSON, either answer is fine: JSON.parse and the
 * strict parser both refuse it. Linear: each run of backslashes is counted once.
 */
export function hasEscapedKey(text: string): boolean {
  let backslash = text.indexOf("\\");
  let from = 0;
  while (backslash !== -1) {
    const open = text.indexOf('"', from);
    if (open === -1) return false;
    let close = open;
    for (;;) {
      close = text.indexOf('"', close + 1);
      if (close === -1) return false;
      let before = close - 1;
      while (before > open && text.charCodeAt(before) === BACKSLASH) before--;
      if ((close - 1 - before) % 2 === 0) break;
    }
    if (backslash < open) backslash = text.indexOf("\\", open);
    if (backslash !== -1 && backslash < close) {
      let next = close + 1;
      while (isWhiteSpace(text.charCodeAt(next))) next++;
      if (text.charCodeAt(next) === COLON) return true;
      backslash = text.indexOf("\\", close);
    }
    from = close + 1;
  }
  return false;
}

const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

/** JSON's white space: space, tab, line feed, carriage return (not U+FEFF, not U+00A0). */
function isWhiteSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

/** The value of one hexadecimal digit, or -1. */
function hexValue(c: number): number {
  if (c >= ZERO && c <= NINE) return c - ZERO;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10; // a-f
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10; // A-F
  return -1;
}

/** The characters the one-letter escapes stand for, by the letter's code. */
const SIMPLE_ESCAPES: ReadonlyMap<number, string> = new Map([
  [QUOTE, '"'],
  [BACKSLASH, "\\"],
  [0x2f, "/"],
  [0x62, "\b"],
  [0x66, "\f"],
  [0x6e, "\n"],
  [0x72, "\r"],
  [0x74, "\t"],
]);

/** Thrown inside the strict parser; {@link parseJson} turns it into JSON.parse's own SyntaxError. */
class NotJson extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message);
  }
}

type Container = unknown[] | Record<string, unknown>;

/**
 * RFC 8259 exactly as JSON.parse reads it (lone surrogates in strings allowed, numbers as doubles,
 * a repeated key keeps its first place and its last value, `__proto__` an own property). Nesting
 * is kept on an explicit stack, not the call stack: any depth the body limit lets in is read.
 */
class StrictParser {
  private pos = 0;

  constructor(private readonly text: string) {}

  parse(): unknown {
    const text = this.text;
    const containers: Container[] = [];
    const keys: string[] = []; // the pending key of each open object ("" for arrays)
    let value: unknown;
    value: for (;;) {
      this.skipWhiteSpace();
      const c = text.charCodeAt(this.pos);
      if (c === OPEN_BRACE) {
        this.pos++;
        this.skipWhiteSpace();
        if (text.charCodeAt(this.pos) === CLOSE_BRACE) {
          this.pos++;
          value = {};
        } else {
          containers.push({});
          keys.push(this.readKey());
          continue value;
        }
      } else if (c === OPEN_BRACKET) {
        this.pos++;
        this.skipWhiteSpace();
        if (text.charCodeAt(this.pos) === CLOSE_BRACKET) {
          this.pos++;
          value = [];
        } else {
          containers.push([]);
          keys.push("");
          continue value;
        }
      } else if (c === QUOTE) {
        value = this.readString();
      } else if (c === MINUS || isDigit(c)) {
        value = this.readNumber();
      } else if (text.startsWith("true", this.pos)) {
        this.pos += 4;
        value = true;
      } else if (text.startsWith("false", this.pos)) {
        this.pos += 5;
        value = false;
      } else if (text.startsWith("null", this.pos)) {
        this.pos += 4;
        value = null;
      } else {
        throw this.unexpected();
      }
      // A value is complete: it goes into the innermost open container, which may then close too.
      for (;;) {
        this.skipWhiteSpace();
        const top = containers.at(-1);
        if (top === undefined) {
          if (this.pos !== text.length) throw this.unexpected();
          return value;
        }
        const next = text.charCodeAt(this.pos);
        if (Array.isArray(top)) {
          top.push(value);
          if (next === COMMA) {
            this.pos++;
            continue value;
          }
          if (next !== CLOSE_BRACKET) throw this.unexpected();
        } else {
          const key = keys[keys.length - 1]!;
          // As JSON.parse: `__proto__` is an own property, not the prototype's setter.
          if (key === "__proto__") Object.defineProperty(top, key, { value, writable: true, enumerable: true, configurable: true });
          else top[key] = value;
          if (next === COMMA) {
            this.pos++;
            this.skipWhiteSpace();
            keys[keys.length - 1] = this.readKey();
            continue value;
          }
          if (next !== CLOSE_BRACE) throw this.unexpected();
        }
        this.pos++;
        value = containers.pop();
        keys.pop();
      }
    }
  }

  private skipWhiteSpace(): void {
    while (isWhiteSpace(this.text.charCodeAt(this.pos))) this.pos++;
  }

  /** A key and its colon, and the white space after it. */
  private readKey(): string {
    if (this.text.charCodeAt(this.pos) !== QUOTE) throw this.unexpected();
    const key = this.readString();
    this.skipWhiteSpace();
    if (this.text.charCodeAt(this.pos) !== COLON) throw this.unexpected();
    this.pos++;
    return key;
  }

  /** A string from its opening quote, at `pos`, to its closing one; escapes decoded. */
  private readString(): string {
    const text = this.text;
    let i = this.pos + 1;
    let chunkStart = i;
    let decoded = "";
    for (;;) {
      const c = text.charCodeAt(i); // NaN past the end
      if (c === QUOTE) break;
      if (c === BACKSLASH) {
        decoded += text.slice(chunkStart, i);
        const letter = text.charCodeAt(i + 1);
        const simple = SIMPLE_ESCAPES.get(letter);
        if (simple !== undefined) {
          decoded += simple;
          i += 2;
        } else if (letter === 0x75) {
          let code = 0;
          for (let k = 2; k < 6; k++) {
            const digit = hexValue(text.charCodeAt(i + k));
            if (digit < 0) throw this.unexpected(i + k);
            code = code * 16 + digit;
          }
          decoded += String.fromCharCode(code);
          i += 6;
        } else {
          throw this.unexpected(i + 1);
        }
        chunkStart = i;
        continue;
      }
      if (!(c >= 0x20)) throw this.unexpected(i); // a control character, or the end of the text
      i++;
    }
    this.pos = i + 1;
    return decoded + text.slice(chunkStart, i);
  }

  /** `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, as a double (JSON.parse's rounding). */
  private readNumber(): number {
    const text = this.text;
    const start = this.pos;
    let i = start;
    if (text.charCodeAt(i) === MINUS) i++;
    if (text.charCodeAt(i) === ZERO) i++;
    else if (isDigit(text.charCodeAt(i))) while (isDigit(text.charCodeAt(i))) i++;
    else throw this.unexpected(i);
    if (text.charCodeAt(i) === DOT) {
      i++;
      if (!isDigit(text.charCodeAt(i))) throw this.unexpected(i);
      while (isDigit(text.charCodeAt(i))) i++;
    }
    const e = text.charCodeAt(i);
    if (e === 0x65 || e === 0x45) {
      i++;
      const sign = text.charCodeAt(i);
      if (sign === PLUS || sign === MINUS) i++;
      if (!isDigit(text.charCodeAt(i))) throw this.unexpected(i);
      while (isDigit(text.charCodeAt(i))) i++;
    }
    this.pos = i;
    return Number(text.slice(start, i));
  }

  private unexpected(at = this.pos): NotJson {
    return new NotJson(at >= this.text.length ? "Unexpected end of JSON input" : `Unexpected character ${JSON.stringify(this.text[at])}`, at);
  }
}
