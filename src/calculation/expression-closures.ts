import type { MathNode } from "mathjs";

/**
 * Compiles a checked expression (see expression.ts: numbers, booleans, operators, comparisons,
 * conditionals, allowed pure functions, constants and known names only) into a tree of plain
 * JavaScript closures. No text is ever evaluated: each node becomes a closure over its children.
 *
 * The closures give exactly what mathjs's own evaluation gives. Values stay what mathjs would
 * hold: numbers and booleans (JavaScript's arithmetic on booleans is mathjs's conversion of a
 * boolean to 0 or 1). The hot operators and functions are written out with mathjs's number
 * semantics (relative tolerance in comparisons, real domains of sqrt, log and pow); the others call
 * the mathjs function itself with the same arguments, so they cannot differ. Where mathjs would
 * leave the real numbers (the root or logarithm of a negative number gives a complex number) or
 * read something else than a number, a closure throws {@link LeavesRealNumbers} and the caller
 * evaluates that one call with mathjs instead.
 */

/** What an expression computes along the way, as mathjs holds it. */
export type Value = number | boolean;
/** The value of each name the expression reads, by slot (see {@link ClosureProgram.slots}). */
export type Registers = number[];
export type Closure = (registers: Registers) => Value;

/** Thrown where mathjs would go on with something else than a number or a boolean. */
export class LeavesRealNumbers extends Error {
  constructor() {
    super("the expression leaves the real numbers here; mathjs evaluates it");
  }
}
/** One instance, thrown as is: nothing is allocated on the way out. */
const LEAVES = new LeavesRealNumbers();

export interface ClosureProgram {
  run: Closure;
  /** The names read from the scope, in slot order: registers[i] holds slots[i]. */
  slots: string[];
  /**
   * Names mathjs would first look up in the scope although the expression does not read them as
   * variables: the constants and the called functions. While the scope holds one of them, mathjs
   * would take the scope's value, so the caller evaluates with mathjs.
   */
  shadowable: string[];
}

/** The mathjs namespace an expression is compiled against: functions with their transforms, constants, config. */
export interface MathNamespace {
  /** What mathjs's evaluation calls: the functions with their expression transforms, and the constants. */
  transforms: Readonly<Record<string, unknown>>;
  /** The instance's own functions, without transforms. */
  plain: Readonly<Record<string, unknown>>;
  relTol: number;
  absTol: number;
}

type Node = MathNode & Record<string, unknown>;

function mathFunction(namespace: Readonly<Record<string, unknown>>, name: string): (...args: Value[]) => unknown {
  const fn = namespace[name];
  if (typeof fn !== "function") throw new Error(`mathjs has no function ${name}`);
  return fn as (...args: Value[]) => unknown;
}

/** A value mathjs computed, to go on with: a number or a boolean, else mathjs evaluates the whole expression. */
function real(value: unknown): Value {
  if (typeof value === "number" || typeof value === "boolean") return value;
  throw LEAVES;
}

/** mathjs's power of two numbers where it stays real: an integer exponent or a base not negative. */
function pow(x: number, y: number): number {
  if (!(Number.isFinite(y) && y === Math.round(y)) && !(x >= 0)) throw LEAVES;
  // x^Infinity is 0 for -1 < x < 1 (and x^-Infinity for |x| > 1), where Math.pow gives the same or NaN.
  if ((x * x < 1 && y === Infinity) || (x * x > 1 && y === -Infinity)) return 0;
  return Math.pow(x, y);
}

export function compileToClosures(root: MathNode, known: ReadonlySet<string>, math: MathNamespace): ClosureProgram {
  const slots: string[] = [];
  // Which closures read a register or give a number constant: their parents read those directly.
  const shapes = new Map<Closure, Shape>();
  const slotOf = new Map<string, number>();
  const shadowable = new Set<string>();
  const { relTol, absTol } = math;

  /** mathjs's nearlyEqual for numbers, with the instance's tolerances. */
  const nearlyEqual = (a: number, b: number): boolean => {
    if (Number.isNaN(a) || Number.isNaN(b)) return false;
    if (!Number.isFinite(a) || !Number.isFinite(b)) return a === b;
    if (a === b) return true;
    return Math.abs(a - b) <= Math.max(relTol * Math.max(Math.abs(a), Math.abs(b)), absTol);
  };

  /** A call of the mathjs function itself; what it returns must be a number or a boolean to go on. */
  const delegate = (name: string, args: Closure[]): Closure => {
    const fn = mathFunction(math.transforms, name);
    switch (args.length) {
      case 0:
        return () => real(fn());
      case 1: {
        const [a] = args as [Closure];
        return (r) => real(fn(a(r)));
      }
      case 2: {
        const [a, b] = args as [Closure, Closure];
        return (r) => real(fn(a(r), b(r)));
      }
      default:
        return (r) => real(fn(...args.map((arg) => arg(r))));
    }
  };

  const compile = (node: Node): Closure => {
    switch (node.type) {
      case "ParenthesisNode":
        return compile(node.content as Node);
      case "ConstantNode": {
        const value = node.value as Value;
        const constant = () => value;
        if (typeof value === "number") shapes.set(constant, { constant: value });
        return constant;
      }
      case "SymbolNode":
        return symbol(node.name as string);
      case "ConditionalNode": {
        const condition = compile(node.condition as Node);
        const whenTrue = compile(node.trueExpr as Node);
        const whenFalse = compile(node.falseExpr as Node);
        // mathjs tests a number or a boolean by its truthiness: 0, NaN and false are false.
        // A branch that is a number constant or reads a register is read in place (see ARITHMETIC).
        const yes = shapes.get(whenTrue);
        const no = shapes.get(whenFalse);
        if (yes !== undefined && "constant" in yes && no !== undefined && "slot" in no) {
          const [k, j] = [yes.constant, no.slot];
          return (r) => (condition(r) ? k : r[j]!);
        }
        if (yes !== undefined && "slot" in yes && no !== undefined && "constant" in no) {
          const [i, k] = [yes.slot, no.constant];
          return (r) => (condition(r) ? r[i]! : k);
        }
        return (r) => (condition(r) ? whenTrue(r) : whenFalse(r));
      }
      case "OperatorNode":
        return call(node.fn as string, node.args as Node[]);
      case "FunctionNode": {
        const name = (node.fn as Node).name as string;
        shadowable.add(name);
        return call(name, node.args as Node[]);
      }
      default:
        throw new Error(`${node.type} is not compiled: the checker refuses it`);
    }
  };

  const symbol = (name: string): Closure => {
    if (known.has(name)) {
      let slot = slotOf.get(name);
      if (slot === undefined) {
        slot = slots.length;
        slots.push(name);
        slotOf.set(name, slot);
      }
      const i = slot;
      const read: Closure = (r) => r[i]!;
      shapes.set(read, { slot: i });
      return read;
    }
    // A constant (pi, e …): mathjs reads it from its namespace unless the scope holds the name.
    shadowable.add(name);
    const value = math.transforms[name];
    if (typeof value !== "number") throw new Error(`mathjs has no number ${name}`);
    return () => value;
  };

  /** An operator or a function call: written out where it is hot, else the mathjs function. */
  const call = (name: string, argNodes: Node[]): Closure => {
    const lazy = lazyCall(name, argNodes);
    if (lazy !== undefined) return lazy;
    const args = argNodes.map(compile);
    const [a, b] = args as [Closure, Closure];
    if (args.length === 2) {
      if (Object.hasOwn(ARITHMETIC, name)) return specialise(ARITHMETIC[name]!, a, shapes.get(a), b, shapes.get(b));
      switch (name) {
        case "equal": {
          const right = shapes.get(b);
          // Equal to 0 (a frequent test): nearlyEqual(x, 0) is x === 0 or |x| within the absolute tolerance.
          if (right !== undefined && "constant" in right && right.constant === 0) {
            const left = shapes.get(a);
            if (left !== undefined && "slot" in left) {
              const i = left.slot;
              return (r) => r[i] === 0 || Math.abs(r[i]!) <= absTol;
            }
            return (r) => {
              const x = +a(r);
              return x === 0 || Math.abs(x) <= absTol;
            };
          }
          return (r) => nearlyEqual(+a(r), +b(r));
        }
        case "unequal":
          return (r) => !nearlyEqual(+a(r), +b(r));
        case "smaller":
          return (r) => {
            const x = +a(r);
            const y = +b(r);
            return x < y && !nearlyEqual(x, y);
          };
        case "larger":
          return (r) => {
            const x = +a(r);
            const y = +b(r);
            return x > y && !nearlyEqual(x, y);
          };
        case "smallerEq":
          return (r) => {
            const x = +a(r);
            const y = +b(r);
            return x <= y || nearlyEqual(x, y);
          };
        case "largerEq":
          return (r) => {
            const x = +a(r);
            const y = +b(r);
            return x >= y || nearlyEqual(x, y);
          };
        case "pow":
          return (r) => pow(+a(r), +b(r));
      }
    }
    if (args.length === 1) {
      switch (name) {
        case "unaryMinus":
          return (r) => -(a(r) as number);
        case "unaryPlus":
          return (r) => +a(r);
        case "not":
          return (r) => !a(r);
        case "abs":
          return (r) => Math.abs(+a(r));
        case "exp":
          return (r) => Math.exp(+a(r));
        case "sqrt":
          return (r) => {
            const x = +a(r);
            if (Number.isNaN(x)) return Number.NaN;
            if (x >= 0) return Math.sqrt(x);
            throw LEAVES;
          };
        case "log":
          return (r) => {
            const x = +a(r);
            if (x >= 0) return Math.log(x);
            throw LEAVES;
          };
      }
    }
    return delegate(name, args);
  };

  /**
   * The functions mathjs gives its argument nodes unevaluated (and, or, bitAnd, bitOr, nullish):
   * they evaluate the second only when the first does not decide. Extra arguments are ignored; a
   * missing one is an error (null) once it is needed, as in mathjs.
   */
  const lazyCall = (name: string, argNodes: Node[]): Closure | undefined => {
    if (!["and", "or", "bitAnd", "bitOr", "nullish"].includes(name)) return undefined;
    const args = argNodes.map(compile);
    const missing: Closure = () => {
      throw new TypeError(`function ${name} needs two arguments`);
    };
    const first = args[0] ?? missing;
    const second = args[1] ?? missing;
    switch (name) {
      case "and":
        return (r) => !!first(r) && !!second(r);
      case "or":
        return (r) => !!first(r) || !!second(r);
      case "nullish":
        // A number or a boolean is never null: the first argument is the answer.
        return first;
      case "bitAnd": {
        const bitAnd = mathFunction(math.plain, "bitAnd");
        return (r) => {
          const x = first(r);
          if (Number.isNaN(+x)) return Number.NaN;
          if (x === 0 || x === false) return 0;
          return real(bitAnd(x, second(r)));
        };
      }
      default: {
        const bitOr = mathFunction(math.plain, "bitOr");
        return (r) => {
          const x = first(r);
          if (Number.isNaN(+x)) return Number.NaN;
          if (x === -1) return -1;
          if (x === true) return 1;
          return real(bitOr(x, second(r)));
        };
      }
    }
  };

  return { run: compile(root as Node), slots, shadowable: [...shadowable] };
}

type Shape = { slot: number } | { constant: number };

/**
 * The four arithmetic operators, each written out for the shapes of its operands: an operand that
 * reads a register or is a number constant is read in place, not called. V8 does not inline a
 * closure into a closure of the same source (a + inside a +), so every call saved counts.
 */
interface Arithmetic {
  any(a: Closure, b: Closure): Closure;
  slots(i: number, j: number): Closure;
  slotLeft(i: number, b: Closure): Closure;
  slotRight(a: Closure, j: number): Closure;
  constantLeft(k: number, b: Closure): Closure;
  constantRight(a: Closure, k: number): Closure;
  slotConstant(i: number, k: number): Closure;
}

const num = (v: Value) => v as number;

const ARITHMETIC: Readonly<Record<string, Arithmetic>> = {
  add: {
    any: (a, b) => (r) => num(a(r)) + num(b(r)),
    slots: (i, j) => (r) => r[i]! + r[j]!,
    slotLeft: (i, b) => (r) => r[i]! + num(b(r)),
    slotRight: (a, j) => (r) => num(a(r)) + r[j]!,
    constantLeft: (k, b) => (r) => k + num(b(r)),
    constantRight: (a, k) => (r) => num(a(r)) + k,
    slotConstant: (i, k) => (r) => r[i]! + k,
  },
  subtract: {
    any: (a, b) => (r) => num(a(r)) - num(b(r)),
    slots: (i, j) => (r) => r[i]! - r[j]!,
    slotLeft: (i, b) => (r) => r[i]! - num(b(r)),
    slotRight: (a, j) => (r) => num(a(r)) - r[j]!,
    constantLeft: (k, b) => (r) => k - num(b(r)),
    constantRight: (a, k) => (r) => num(a(r)) - k,
    slotConstant: (i, k) => (r) => r[i]! - k,
  },
  multiply: {
    any: (a, b) => (r) => num(a(r)) * num(b(r)),
    slots: (i, j) => (r) => r[i]! * r[j]!,
    slotLeft: (i, b) => (r) => r[i]! * num(b(r)),
    slotRight: (a, j) => (r) => num(a(r)) * r[j]!,
    constantLeft: (k, b) => (r) => k * num(b(r)),
    constantRight: (a, k) => (r) => num(a(r)) * k,
    slotConstant: (i, k) => (r) => r[i]! * k,
  },
  divide: {
    any: (a, b) => (r) => num(a(r)) / num(b(r)),
    slots: (i, j) => (r) => r[i]! / r[j]!,
    slotLeft: (i, b) => (r) => r[i]! / num(b(r)),
    slotRight: (a, j) => (r) => num(a(r)) / r[j]!,
    constantLeft: (k, b) => (r) => k / num(b(r)),
    constantRight: (a, k) => (r) => num(a(r)) / k,
    slotConstant: (i, k) => (r) => r[i]! / k,
  },
};

function specialise(op: Arithmetic, a: Closure, left: Shape | undefined, b: Closure, right: Shape | undefined): Closure {
  if (left !== undefined && "slot" in left) {
    if (right !== undefined && "slot" in right) return op.slots(left.slot, right.slot);
    if (right !== undefined) return op.slotConstant(left.slot, right.constant);
    return op.slotLeft(left.slot, b);
  }
  if (left !== undefined) return op.constantLeft(left.constant, b);
  if (right !== undefined && "slot" in right) return op.slotRight(a, right.slot);
  if (right !== undefined) return op.constantRight(a, right.constant);
  return op.any(a, b);
}
