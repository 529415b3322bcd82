/**
 * Calendar periods as whole numbers, by integer arithmetic on the proleptic Gregorian calendar
 * (as JavaScript dates and PostgreSQL use). A period's index says which day, week, month,
 * quarter or year a local wall-clock time falls in; consecutive periods have consecutive
 * indexes, so counting the periods of a range is one subtraction.
 */

export type CalendarUnit = "day" | "week" | "month" | "quarter" | "year";

export const DAY_MS = 86_400_000;

/** Day number (0 = 1970-01-01) of a civil date; `month` 1–12. H. Hinnant's days_from_civil. */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** The civil date of a day number; `month` 1–12. H. Hinnant's civil_from_days. */
export function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const mp = Math.floor((5 * dayOfYear + 2) / 153);
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day: dayOfYear - Math.floor((153 * mp + 2) / 5) + 1 };
}

/** Index of the period holding a local wall-clock time (milliseconds as if the wall clock were UTC). */
export function periodIndex(localMs: number, unit: CalendarUnit): number {
  const days = Math.floor(localMs / DAY_MS);
  if (unit === "day") return days;
  // Day 0 is a Thursday: day −3, 1969-12-29, is the Monday that starts week 0.
  if (unit === "week") return Math.floor((days + 3) / 7);
  const { year, month } = civilFromDays(days);
  if (unit === "month") return year * 12 + month - 1;
  if (unit === "quarter") return year * 4 + Math.floor((month - 1) / 3);
  return year;
}

/** Local midnight (wall-clock milliseconds) that starts the period of this index. */
export function periodStartLocal(index: number, unit: CalendarUnit): number {
  const floorDiv = (a: number, b: number) => Math.floor(a / b);
  const mod = (a: number, b: number) => a - floorDiv(a, b) * b;
  switch (unit) {
    case "day":
      return index * DAY_MS;
    case "week":
      return (index * 7 - 3) * DAY_MS;
    case "month":
      return daysFromCivil(floorDiv(index, 12), mod(index, 12) + 1, 1) * DAY_MS;
    case "quarter":
      return daysFromCivil(floorDiv(index, 4), mod(index, 4) * 3 + 1, 1) * DAY_MS;
    case "year":
      return daysFromCivil(index, 1, 1) * DAY_MS;
  }
}
