import { call, type Session } from "./api.js";
import { chartOf, type Point } from "./chart.js";
import { field, h, select } from "./dom.js";
import { statusArea } from "./status.js";
import { resultView } from "./view.js";

interface Entity {
  id: string;
  key: string;
  name?: string;
  itemAction?: string;
}

const PERIODS = ["Custom range", "Today", "Yesterday", "This week", "Last week", "7 days till now", "14 days till now", "This month", "Last month", "This year", "Last year", "Year till now"];
const INTERVALS = ["", "5 minute", "10 minute", "15 minute", "30 minute", "Hourly", "Daily", "Weekly", "Monthly", "Quarterly", "Yearly"];
const METRICS = ["avg", "sum", "min", "max", "count", "diff", "cardinality", "open", "close"];
const GAPS = ["", "push", "pull", "interpolate"];

/** An item's events for a date range: buckets charted (gaps stay gaps) and listed, or the raw events. */
export function itemsScreen(session: Session): HTMLElement {
  const item = h("select", { name: "item" });
  const period = select(PERIODS.map((p) => ({ value: p, label: p })), "Custom range");
  const from = h("input", { name: "from", placeholder: "2025-10-24T00:00:00+02:00" });
  const to = h("input", { name: "to", placeholder: "2025-10-28T00:00:00+01:00" });
  const zone = h("input", { name: "timeZone", placeholder: "server default" });
  const interval = select(INTERVALS.map((i) => ({ value: i, label: i === "" ? "none (raw events)" : i })), "Hourly");
  const metric = select(METRICS.map((m) => ({ value: m, label: m })), "avg");
  const gap = select(GAPS.map((g) => ({ value: g, label: g === "" ? "none" : g === "interpolate" ? "interpolate (linear)" : g })), "");
  const limit = h("input", { name: "limit", type: "number", min: 1, max: 10000, value: 1000 });
  const status = statusArea("Events status");
  const chart = h("div", { class: "chart-area" });
  const values = resultView("Events");

  const sync = () => {
    from.disabled = to.disabled = period.value !== "Custom range";
  };
  period.addEventListener("change", sync);

  function request(): Record<string, unknown> {
    const eventDateRange: Record<string, unknown> = { period: period.value };
    if (period.value === "Custom range") Object.assign(eventDateRange, { from: from.value.trim(), to: to.value.trim() });
    if (zone.value.trim() !== "") eventDateRange.timeZone = zone.value.trim();
    const queryOptions: Record<string, unknown> = { pagination: { limit: Number(limit.value) || 1000 } };
    if (interval.value !== "") {
      const aggregation: Record<string, unknown> = { metric: metric.value, interval: interval.value };
      if (gap.value === "interpolate") aggregation.gapStrategy = { type: "interpolate", config: { algorithm: "linear" } };
      else if (gap.value !== "") aggregation.gapStrategy = { type: gap.value };
      queryOptions.aggregation = aggregation;
    }
    return { eventDateRange, queryOptions };
  }

  async function run(): Promise<void> {
    if (item.value === "") return;
    status.info("Querying…");
    try {
      const answer = await call<{ buckets?: Point[]; events?: Point[] }>(session, "POST", `/items/${encodeURIComponent(item.value)}/events/query`, request());
      const points = answer.buckets ?? answer.events ?? [];
      const title = item.selectedOptions[0]?.textContent ?? item.value;
      chart.replaceChildren(points.length > 1 ? chartOf(points, title) : h("p", {}, "Nothing to draw."));
      values.show(points);
      status.info(`${points.length} ${answer.buckets !== undefined ? "buckets" : "events"}.`);
    } catch (err) {
      status.problem(err);
    }
  }

  async function loadItems(): Promise<void> {
    const page = await call<{ entities: Entity[] }>(session, "GET", "/graph/entities?type=Item&limit=1000");
    item.replaceChildren(...page.entities.map((e) => h("option", { value: e.id }, `${e.key}${e.name !== undefined ? ` — ${e.name}` : ""} (${e.itemAction ?? "?"})`)));
  }

  const runButton = h("button", { type: "submit" }, "Query events");
  const form = h(
    "form",
    { class: "row", "aria-label": "Events query" },
    field("Item", item),
    field("Period", period),
    field("From", from, "ISO-8601, or {{now}} / {{today}}"),
    field("To", to),
    field("Time zone", zone),
    field("Interval", interval),
    field("Metric", metric),
    field("Gap strategy", gap),
    field("Limit", limit),
    h("div", { class: "actions" }, runButton),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void run();
  });
  sync();
  void loadItems().catch((err: unknown) => status.problem(err));
  return h("section", { class: "screen", "aria-labelledby": "items-title" }, h("h2", { id: "items-title" }, "Items and events"), form, status.element, chart, values.element);
}
