import { DateTime, IANAZone } from "luxon";
import { invalidRequest } from "../errors.js";
import { INSTANT_RANGE_TEXT, instantInRange } from "../input.js";
import { rangeBoundMillis } from "./events.js";

export const PERIODS = [
  "This hour",
  "Last hour",
  "Today",
  "Yesterday",
  "This week",
  "Last week",
  "7 days till now",
  "14 days till now",
  "This month",
  "Last month",
  "This year",
  "Last year",
  "Year till now",
  "Custom range",
] as const;

export type Period = (typeof PERIODS)[number];

/** Spec §2.3. */
export interface EventDateRange {
  /** The date field; only `timestamp` exists today. */
  type?: string;
  /** Default `This week`. */
  period?: Period;
  /** ISO-8601 instant, `{{now}}` or `{{today}}`; `Custom range` only. */
  from?: string;
  to?: string;
  /** IANA zone; default the configured DEFAULT_TIME_ZONE. */
  timeZone?: string;
}

/** A half-open range `[from, to)` and the zone its calendar is read in. */
export interface ResolvedRange {
  from: DateTime;
  to: DateTime;
  zone: string;
}


/** Checks an IANA zone name, refusing it with a 400 that names where it came from. */
export function checkZone(zone: unknown, path = "eventDateRange.timeZone"): string {
  if (typeof zone !== "string") throw invalidRequest("the time zone must be text, an IANA name such as Europe/Brussels", path);
  if (!IANAZone.isValidZone(zone)) throw invalidRequest(`unknown time zone "${zone}"; use an IANA name such as Europe/Brussels`, path);
  return zone;
}

/**
 * Resolves an event date range to `[from, to)` (shared/SEMANTICS.md): every period is read in
 * the range's zone, weeks start on Monday, "This …" runs to the end of the period, "N days till
 * now" and "Year till now" end at `now`. `now` is passed in, taken once per request.
 */
export function resolveEventDateRange(given: EventDateRange | null | undefined, now: Date, defaultZone: string): ResolvedRange {
  if (given !== undefined && given !== null && (typeof given !== "object" || Array.isArray(given))) throw invalidRequest("eventDateRange must be an object", "eventDateRange");
  const range = given ?? undefined;
  const zone = checkZone(range?.timeZone ?? defaultZone);
  if (range?.type !== undefined && range.type !== "timestamp") {
    throw invalidRequest(`eventDateRange.type "${range.type}" is not supported; the only date field is "timestamp"`, "eventDateRange.type");
  }
  const period = range?.period ?? "This week";
  if (typeof period !== "string" || !(PERIODS as readonly string[]).includes(period)) {
    throw invalidRequest(`unknown period "${period}"; one of: ${PERIODS.join(", ")}`, "eventDateRange.period");
  }
  const local = DateTime.fromJSDate(now, { zone });
  const span = (from: DateTime, to: DateTime): ResolvedRange => ({ from, to, zone });
  switch (period) {
    case "This hour":
      return span(local.startOf("hour"), local.startOf("hour").plus({ hours: 1 }));
    case "Last hour":
      return span(local.startOf("hour").minus({ hours: 1 }), local.startOf("hour"));
    case "Today":
      return span(local.startOf("day"), local.startOf("day").plus({ days: 1 }));
    case "Yesterday":
      return span(local.startOf("day").minus({ days: 1 }), local.startOf("day"));
    case "This week":
      return span(local.startOf("week"), local.startOf("week").plus({ weeks: 1 }));
    case "Last week":
      return span(local.startOf("week").minus({ weeks: 1 }), local.startOf("week"));
    case "7 days till now":
      return span(local.minus({ days: 7 }), local);
    case "14 days till now":
      return span(local.minus({ days: 14 }), local);
    case "This month":
      return span(local.startOf("month"), local.startOf("month").plus({ months: 1 }));
    case "Last month":
      return span(local.startOf("month").minus({ months: 1 }), local.startOf("month"));
    case "This year":
      return span(local.startOf("year"), local.startOf("year").plus({ years: 1 }));
    case "Last year":
      return span(local.startOf("year").minus({ years: 1 }), local.startOf("year"));
    case "Year till now":
      return span(local.startOf("year"), local);
    case "Custom range": {
      if (range?.from === undefined || range.to === undefined) {
        throw invalidRequest("a Custom range needs both from and to", range?.from === undefined ? "eventDateRange.from" : "eventDateRange.to");
      }
      const from = instant(range.from, local, "eventDateRange.from");
      const to = instant(range.to, local, "eventDateRange.to");
      if (from.toMillis() >= to.toMillis()) {
        throw invalidRequest(`from (${from.toUTC().toISO()}) must be before to (${to.toUTC().toISO()})`, "eventDateRange.from");
      }
      return span(from, to);
    }
  }
}

/** An ISO-8601 instant (UTC unless it carries an offset), `{{now}}` or `{{today}}` (local midnight). */
function instant(text: unknown, now: DateTime, path: string): DateTime {
  if (typeof text !== "string") throw invalidRequest(`must be text: an ISO-8601 date-time, {{now}} or {{today}}; got ${JSON.stringify(text)}`, path);
  const token = text.trim();
  if (token === "{{now}}") return now;
  if (token === "{{today}}") return now.startOf("day");
  const parsed = DateTime.fromISO(token, { zone: "utc", setZone: true });
  if (!parsed.isValid) throw invalidRequest(`"${text}" is not an ISO-8601 date-time, {{now}} or {{today}}`, path);
  if (!instantInRange(parsed.toMillis(), path.endsWith(".to"))) throw invalidRequest(`"${text}" is outside the accepted dates, ${INSTANT_RANGE_TEXT}`, path);
  return DateTime.fromMillis(rangeBoundMillis(token, parsed.toMillis()), { zone: now.zone });
}
