/**
 * The size limits of an expression, checked by one linear scan before mathjs parses it. mathjs
 * parses, checks, compiles and evaluates by recursion: a deep enough expression overflows the
 * stack (a RangeError, not an answer). Two measures bound that recursion:
 * - the length: a flat chain `1+1+…` nests one node per operator (left-deep), so the characters
 *   bound how deep such chains go;
 * - the depth the scan counts: every open group (parentheses, function call, matrix, object),
 *   every unary, power or postfix operator still applying (`- - x`, `a^b^c`, `x!!`), and every
 *   `?` or `=` until its group closes. The parser recurses once per such level; nothing else
 *   makes it recurse.
 */

export interface ExpressionLimits {
  /** EXPRESSION_MAX_LENGTH: most characters of one expression. */
  maxLength: number;
  /** EXPRESSION_MAX_DEPTH: deepest nesting the scan counts. */
  maxDepth: number;
}

/**
 * The largest limits the configuration accepts: at these, no expression that passes them
 * overflows the stack, even with half the stack already used (test/calculation/
 * expression-limits.test.ts checks random ones there). Measured on Node 20 with half the stack
 * used: mathjs overflows from about 1,500 chained terms (3,000 characters) and a few hundred
 * nested parentheses.
 */
export const EXPRESSION_LIMIT_CEILINGS: ExpressionLimits = { maxLength: 2500, maxDepth: 100 };

export interface ExpressionSizeProblem {
  message: string;
  /** 1-based column where the limit is passed. */
  column: number;
}

/** The first limit the expression passes, or undefined. */
export function expressionSizeProblem(text: string, limits: ExpressionLimits): ExpressionSizeProblem | undefined {
  if (text.length > limits.maxLength) {
    return { message: `the expression is ${text.length} characters long; at most ${limits.maxLength} are allowed (EXPRESSION_MAX_LENGTH)`, column: limits.maxLength + 1 };
  }
  const deepest = nestingDepth(text, limits.maxDepth);
  if (deepest.depth > limits.maxDepth) {
    return {
      message: `the expression nests deeper than ${limits.maxDepth} levels (parentheses, function calls, unary, power and conditional operators; EXPRESSION_MAX_DEPTH)`,
      column: deepest.column,
    };
  }
  return undefined;
}

interface Group {
  /** `?` and `=` seen in this group: each nests what follows until the group closes. */
  open: number;
  /** Unary, power and postfix operators still applying: the next lower-precedence operator ends them. */
  chain: number;
}

const BINARY = new Set(["+", "-", "*", "/", "%", "&", "|", "<", ">", ":", ".*", "./", "==", "!=", "<=", ">=", "<<", ">>", ">>>", ".", "and", "or", "xor", "mod", "to", "in"]);
const UNARY = new Set(["-", "+", "~", "not"]);
const WORD = /[A-Za-z_$\u00C0-\uFFFF]/;
const WORD_OR_DIGIT = /[A-Za-z0-9_$\u00C0-\uFFFF]/;

/**
 * The deepest nesting of the expression as counted above, and the column where it is first
 * reached; the scan stops once it passes `stopAbove`. Linear: every character is looked at once.
 */
export function nestingDepth(text: string, stopAbove = Number.POSITIVE_INFINITY): { depth: number; column: number } {
  const groups: Group[] = [{ open: 0, chain: 0 }];
  let depth = 0;
  let deepest = { depth: 0, column: 0 };
  // After an operand an operator follows; elsewhere an operand (so `-` there is unary).
  let afterOperand = false;
  const deeper = (group: Group, key: "open" | "chain", at: number) => {
    group[key]++;
    depth++;
    if (depth > deepest.depth) deepest = { depth, column: at + 1 };
  };
  const endChain = (group: Group) => {
    depth -= group.chain;
    group.chain = 0;
  };
  let i = 0;
  while (i < text.length && deepest.depth <= stopAbove) {
    const c = text[i]!;
    const group = groups[groups.length - 1]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
    } else if (c === "#") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (c === '"' || (c === "'" && !afterOperand)) {
      i = endOfString(text, i);
      afterOperand = true;
    } else if (c === "(" || c === "[" || c === "{") {
      groups.push({ open: 0, chain: 0 });
      depth++;
      if (depth > deepest.depth) deepest = { depth, column: i + 1 };
      afterOperand = false;
      i++;
    } else if (c === ")" || c === "]" || c === "}") {
      if (groups.length > 1) {
        groups.pop();
        depth -= 1 + group.open + group.chain;
      }
      afterOperand = true;
      i++;
    } else if (c === "," || c === ";") {
      depth -= group.open + group.chain;
      group.open = 0;
      group.chain = 0;
      afterOperand = false;
      i++;
    } else if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(text[i + 1] ?? ""))) {
      i = endOfNumber(text, i);
      afterOperand = true;
    } else if (WORD.test(c)) {
      let end = i + 1;
      while (end < text.length && WORD_OR_DIGIT.test(text[end]!)) end++;
      const word = text.slice(i, end);
      if (!afterOperand && UNARY.has(word)) deeper(group, "chain", i);
      else if (afterOperand && BINARY.has(word)) {
        endChain(group);
        afterOperand = false;
      } else afterOperand = true;
      i = end;
    } else {
      const operator = operatorAt(text, i);
      i += operator.length;
      if (!afterOperand) {
        // A unary operator (or a stray one, which mathjs refuses): it nests what follows.
        deeper(group, "chain", i - operator.length);
      } else if (operator === "^" || operator === ".^") {
        deeper(group, "chain", i - operator.length);
        afterOperand = false;
      } else if (operator === "!" || operator === "'") {
        deeper(group, "chain", i - operator.length);
      } else if (operator === "?" || operator === "=") {
        endChain(group);
        deeper(group, "open", i - operator.length);
        afterOperand = false;
      } else {
        endChain(group);
        afterOperand = false;
      }
    }
  }
  return deepest;
}

const OPERATORS = [">>>", "<<", ">>", "==", "!=", "<=", ">=", ".*", "./", ".^"];

function operatorAt(text: string, i: number): string {
  for (const operator of OPERATORS) if (text.startsWith(operator, i)) return operator;
  return text[i]!;
}

/** The index after a number: digits, a decimal point, an exponent with its sign, or a 0x/0b/0o literal. */
function endOfNumber(text: string, i: number): number {
  let end = i;
  while (end < text.length) {
    const c = text[end]!;
    if ((c === "e" || c === "E") && /[+-]/.test(text[end + 1] ?? "") && /[0-9]/.test(text[end + 2] ?? "")) end += 2;
    else if (/[0-9A-Za-z_.]/.test(c)) end++;
    else break;
  }
  return end;
}

/** The index after a quoted string (backslash escapes), or the end of the text when it is not closed. */
function endOfString(text: string, i: number): number {
  const quote = text[i];
  let end = i + 1;
  while (end < text.length && text[end] !== quote) end += text[end] === "\\" ? 2 : 1;
  return Math.min(end + 1, text.length);
}
