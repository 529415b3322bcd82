import type { Registers } from "./expression-closures.js";

/** Fills the registers from a record of values (a missing or null value is NaN); false when one is not a number. */
export type RecordFill = (values: Readonly<Record<string, unknown>>, registers: Registers) => boolean;

/**
 * The fill of the registers from a record for these slots. The first eight are read each at a
 * line of its own: a property load that always sees the same name stays a direct load, where one
 * load seeing every name in turn goes through V8's megamorphic lookup, three times slower than the
 * whole evaluation (measured with bench/expression).
 */
export function recordFill(slots: readonly string[]): RecordFill {
  const n = slots.length;
  const [k0 = "", k1 = "", k2 = "", k3 = "", k4 = "", k5 = "", k6 = "", k7 = ""] = slots;
  // Each value is checked where it is read, while its type is known: a number goes on, anything else
  // (null and a missing name excepted, which are NaN) makes the fill fail.
  const at = (r: Registers, i: number, x: unknown): boolean => {
    if (typeof x === "number") {
      r[i] = x;
      return true;
    }
    if (x == null) {
      r[i] = Number.NaN;
      return true;
    }
    return false;
  };
  return (v, r) =>
    (n <= 0 || at(r, 0, v[k0])) &&
    (n <= 1 || at(r, 1, v[k1])) &&
    (n <= 2 || at(r, 2, v[k2])) &&
    (n <= 3 || at(r, 3, v[k3])) &&
    (n <= 4 || at(r, 4, v[k4])) &&
    (n <= 5 || at(r, 5, v[k5])) &&
    (n <= 6 || at(r, 6, v[k6])) &&
    (n <= 7 || at(r, 7, v[k7])) &&
    rest(v, r);
  function rest(v: Readonly<Record<string, unknown>>, r: Registers): boolean {
    for (let i = 8; i < n; i++) if (!at(r, i, v[slots[i]!])) return false;
    return true;
  }
}
