/**
 * Text cells of the CSV export and upload, kept from being read as spreadsheet formulas (OWASP
 * "CSV injection"). A spreadsheet runs a cell that begins with `=`, `+`, `-` or `@` (and, in some,
 * a tab or a carriage return) as a formula; the export writes such a text cell with a leading `'`,
 * which spreadsheets show as text. To keep the escape unambiguous, a text that itself begins with
 * `'` gets one too. An upload removes exactly one leading `'` from a text cell, so every text
 * exports and uploads back as it was: `=1+1` ↔ `'=1+1`, `'quoted` ↔ `''quoted`, `plain` ↔ `plain`.
 *
 * Only the text columns (`sourceId`, `tags`) take the rule: `value` is a number (`-1.5` is a number
 * to a spreadsheet, not a formula) and the instants are the service's own ISO-8601 text with a
 * four-digit year, which begins with a digit.
 */

/** The columns whose cells are free text: escaped on export, unescaped on upload. */
export const CSV_TEXT_COLUMNS: ReadonlySet<string> = new Set(["sourceId", "tags"]);

const FORMULA_START = /^[=+\-@\t\r']/;

/** A text cell as the export writes it (before RFC 4180 quoting). */
export function neutraliseCell(text: string): string {
  return FORMULA_START.test(text) ? `'${text}` : text;
}

/** A text cell as an upload reads it (after RFC 4180 unquoting): one leading `'` removed. */
export function restoreCell(cell: string): string {
  return cell.startsWith("'") ? cell.slice(1) : cell;
}
