import { createHash } from "node:crypto";
import type { CalculationDefinitionInput } from "../calculation/definition.js";
import type { EntityInput } from "../graph/entities.js";
import type { LinkInput } from "../graph/links.js";

/**
 * The demo's time series: a Site with a consumption and a production meter (the calculation
 * example of docs/reference/calculations.md), 15-minute data from Friday 24 to Tuesday 28 October 2025 in Brussels, across the night
 * the clocks went back (Sunday 26 October, a day of 25 hours). Everything is computed from the
 * timestamp, so every run of the demo stores the same values.
 */

/** The demo's fixed period, local days in Europe/Brussels: [2025-10-24, 2025-10-28). */
export const DEMO_PERIOD = { from: "2025-10-23T22:00:00Z", to: "2025-10-27T23:00:00Z" } as const;
/** A hole in the consumption data (a meter that did not report), so charts show a gap. */
export const CONSUMPTION_GAP = { from: "2025-10-25T08:00:00Z", to: "2025-10-25T11:00:00Z" } as const;
const QUARTER_MS = 15 * 60 * 1000;

export const SITE_KEY = "S1";
export const CONSUMPTION_KEY = "S1-CONSUMPTION";
export const PRODUCTION_KEY = "S1-PRODUCTION";
export const NET_KEY = "S1-NET";

/**
 * A stable id per (tenant, type, key): the demo's ids are the same on every machine, so the README
 * can show them, and another tenant seeded with the demo (the tests) gets ids of its own.
 */
export function demoId(tenant: string, type: string, key: string): string {
  const hex = createHash("sha256").update(`${tenant}\u0000${type}\u0000${key}`).digest("hex");
  // Shaped as a version-5-like uuid (version nibble 5, RFC 4122 variant), which the id pattern takes.
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The Site, its two metered Items, a derived Item and the ItemDefinition naming the calculation. */
export function siteGraph(tenant: string): { entities: EntityInput[]; links: LinkInput[] } {
  const entity = (type: string, key: string, attributes: Record<string, unknown>): EntityInput => ({ id: demoId(tenant, type, key), type, key, attributes });
  const ref = (type: string, key: string) => ({ type, key });
  return {
    entities: [
      entity("Site", SITE_KEY, { name: "Demo site", timeZone: "Europe/Brussels" }),
      entity("Item", CONSUMPTION_KEY, { itemAction: "INGEST", name: "S1 consumption", unit: "kWh" }),
      entity("Item", PRODUCTION_KEY, { itemAction: "INGEST", name: "S1 solar production", unit: "kWh" }),
      entity("ItemDefinition", "net-consumption", { calculationDefinition: NET_CALCULATION.externalId }),
      entity("Item", NET_KEY, { itemAction: "CALCULATE", name: "S1 net consumption", unit: "kWh" }),
    ],
    links: [
      { from: ref("Site", SITE_KEY), relation: "consumption", to: ref("Item", CONSUMPTION_KEY) },
      { from: ref("Site", SITE_KEY), relation: "production", to: ref("Item", PRODUCTION_KEY) },
      { from: ref("Item", NET_KEY), relation: "definedBy", to: ref("ItemDefinition", "net-consumption") },
    ],
  };
}

/** Quarter-hour starts of the demo period, UTC milliseconds. */
function quarterHours(): number[] {
  const starts: number[] = [];
  for (let t = Date.parse(DEMO_PERIOD.from); t < Date.parse(DEMO_PERIOD.to); t += QUARTER_MS) starts.push(t);
  return starts;
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** Energy used in a quarter hour, kWh: a base load with a morning and an evening peak (UTC hours, a smooth curve). */
function consumption(t: number): number {
  const hour = (t / 3_600_000) % 24;
  const peak = (centre: number, width: number) => Math.exp(-(((hour - centre) / width) ** 2));
  return round3(0.3 + 0.5 * peak(6.5, 1.5) + 0.8 * peak(17.5, 2) + 0.05 * Math.sin(t / 5_400_000));
}

/** Solar production in a quarter hour, kWh: zero at night, a bell around 11:30 UTC. */
function production(t: number): number {
  const hour = (t / 3_600_000) % 24;
  return hour < 6.5 || hour > 16.5 ? 0 : round3(0.9 * Math.sin(((hour - 6.5) / 10) * Math.PI) ** 2);
}

/** The events to ingest, each naming its item: 388 quarter hours per meter, the consumption gap left out. */
export function siteEvents(tenant: string): { itemId: string; timestamp: string; value: number; sourceId: string }[] {
  const consumptionId = demoId(tenant, "Item", CONSUMPTION_KEY);
  const productionId = demoId(tenant, "Item", PRODUCTION_KEY);
  const gap = [Date.parse(CONSUMPTION_GAP.from), Date.parse(CONSUMPTION_GAP.to)] as const;
  const events = [];
  for (const t of quarterHours()) {
    const timestamp = new Date(t).toISOString();
    if (t < gap[0] || t >= gap[1]) events.push({ itemId: consumptionId, timestamp, value: consumption(t), sourceId: "meter" });
    events.push({ itemId: productionId, timestamp, value: production(t), sourceId: "inverter" });
  }
  return events;
}

/** The calculation example of docs/reference/calculations.md, stored: hourly net consumption of the site over the demo period. */
export const NET_CALCULATION: CalculationDefinitionInput = {
  name: "Net consumption of site S1",
  externalId: "site-net-consumption",
  calculationType: "EXPRESSION",
  active: true,
  data: {
    inputDefinitions: [
      { name: "a", type: "ITEM" },
      { name: "b", type: "ITEM" },
      { name: "f", type: "VALUE" },
    ],
    calculation: {
      select: `Site ?site; entity:key "${SITE_KEY}"; link:consumption Item:?cons; link:production Item:?prod.`,
      expression: "(a - b) * f",
      expressionType: "TIMESERIES",
      eventDateRange: { period: "Custom range", from: "2025-10-24T00:00:00+02:00", to: "2025-10-28T00:00:00+01:00", timeZone: "Europe/Brussels" },
      queryOptions: { aggregation: { metric: "sum", interval: "Hourly" } },
      scope: {
        a: { type: "TIMESERIES", timeseries: { selectVariable: "{{?cons}}" } },
        b: { type: "TIMESERIES", timeseries: { selectVariable: "{{?prod}}" } },
        f: { type: "VALUE", value: 1 },
      },
    },
  },
} as CalculationDefinitionInput;
