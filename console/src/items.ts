import { call, type Session } from "./api.js";
import { chartOf, type Point } from "./chart.js";
import { field, h, select } from "./dom.js";
import { eventsEditor, type RawEvent } from "./events-editor.js";
import { liveView } from "./live.js";
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
/** Every gap strategy and interpolation algorithm of the API (docs/reference/semantics.md). */
const GAPS = ["", "push", "pull", "meet", "interpolate"];
const ALGORITHMS = ["linear", "spline", "akimaSpline", "loess", "neville", "dividedDifference"];

/** An item's events for a date range: buckets charted (gaps stay gaps) and listed, or the raw events. */
export function itemsScreen(session: Session): HTMLElement {
  const item = h("select", { name: "item" });
  const period = select(PERIODS.map((p) => ({ value: p, label: p })), "Last week");
  const from = h("input", { name: "from" });
  const to = h("input", { name: "to" });
  const zone = h("input", { name: "timeZone", value: Intl.DateTimeFormat().resolvedOptions().timeZone });
  const interval = select(INTERVALS.map((i) => ({ value: i, label: i === "" ? "none (raw events)" : i })), "Hourly");
  const metric = select(METRICS.map((m) => ({ value: m, label: m })), "avg");
  const gap = select(GAPS.map((g) => ({ value: g, label: g === "" ? "none" : g })), "");
  const algorithm = select(ALGORITHMS.map((a) => ({ value: a, label: a })), "linear");
  const meet = h("input", { name: "meet", type: "number", min: 0, max: 1, step: 0.1, value: 0.5 });
  const algorithmField = field("Algorithm", algorithm);
  const meetField = field("Meet at", meet, "0 (pull) to 1 (push)");
  const limit = h("input", { name: "limit", type: "number", min: 1, max: 10000, value: 1000 });
  const status = statusArea("Events status");
  const chart = h("div", { class: "chart-area" });
  const values = resultView("Events");

  const sync = () => {
    from.disabled = to.disabled = period.value !== "Custom range";
    algorithmField.hidden = gap.value !== "interpolate";
    meetField.hidden = gap.value !== "meet";
  };
  period.addEventListener("change", sync);
  gap.addEventListener("change", sync);
  const zoneName = () => zone.value.trim() || Intl.DateTimeFormat().resolvedOptions().timeZone;
  const title = () => item.selectedOptions[0]?.textContent ?? item.value;
  const editor = eventsEditor(session, { itemId: () => item.value, zone: zoneName, changed: () => run() });
  const live = liveView(session, { itemId: () => item.value, title, zone: zoneName });
  item.addEventListener("change", () => live.stop());

  function request(): Record<string, unknown> {
    const eventDateRange: Record<string, unknown> = { period: period.value };
    if (period.value === "Custom range") Object.assign(eventDateRange, { from: from.value.trim(), to: to.value.trim() });
    if (zone.value.trim() !== "") eventDateRange.timeZone = zone.value.trim();
    const queryOptions: Record<string, unknown> = { pagination: { limit: Number(limit.value) || 1000 } };
    if (interval.value !== "") {
      const aggregation: Record<string, unknown> = { metric: metric.value, interval: interval.value };
      if (gap.value === "interpolate") aggregation.gapStrategy = { type: "interpolate", config: { algorithm: algorithm.value } };
      else if (gap.value === "meet") aggregation.gapStrategy = { type: "meet", config: { meet: Number(meet.value) } };
      else if (gap.value !== "") aggregation.gapStrategy = { type: gap.value };
      queryOptions.aggregation = aggregation;
    }
    return { eventDateRange, queryOptions };
  }

  async function run(): Promise<void> {
    if (item.value === "") return;
    status.info("Querying…");
    try {
      const body = request();
      const path = `/items/${encodeURIComponent(item.value)}/events/query`;
      const answer = await call<{ buckets?: Point[]; events?: RawEvent[] }>(session, "POST", path, body);
      const points = answer.buckets ?? answer.events ?? [];
      // Which buckets the gap strategy filled: those empty without it.
      const aggregation = (body.queryOptions as { aggregation?: Record<string, unknown> }).aggregation;
      let filled: boolean[] | undefined;
      if (answer.buckets !== undefined && aggregation?.gapStrategy !== undefined) {
        const { gapStrategy: _, ...plain } = aggregation;
        const measured = await call<{ buckets: Point[] }>(session, "POST", path, { ...body, queryOptions: { ...(body.queryOptions as object), aggregation: plain } });
        const empty = new Set(measured.buckets.filter((b) => b.value === null).map((b) => b.timestamp));
        filled = points.map((p) => p.value !== null && empty.has(p.timestamp));
      }
      const zoneOf = typeof (body.eventDateRange as { timeZone?: string }).timeZone === "string" ? (body.eventDateRange as { timeZone: string }).timeZone : zoneName();
      chart.replaceChildren(points.length > 1 ? chartOf(points, title(), { zone: zoneOf, filled, raw: answer.events !== undefined }) : h("p", {}, "Nothing to draw."));
      values.show(points);
      editor.showEvents(answer.events);
      status.info(`${points.length} ${answer.buckets !== undefined ? "buckets" : "events"}.`);
    } catch (err) {
      chart.replaceChildren();
      values.clear();
      editor.showEvents(undefined);
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
    field("From", from, "ISO-8601 (2025-10-24T00:00:00+02:00), or {{now}} / {{today}}"),
    field("To", to, "ISO-8601, for a Custom range"),
    field("Time zone", zone),
    field("Interval", interval),
    field("Metric", metric),
    field("Gap strategy", gap),
    algorithmField,
    meetField,
    field("Limit", limit),
    h("div", { class: "actions" }, runButton),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void run();
  });
  sync();
  void loadItems().catch((err: unknown) => status.problem(err));
  return h("section", { class: "screen", "aria-labelledby": "items-title" }, h("h2", { id: "items-title" }, "Items and events"), form, status.element, chart, values.element, editor.element, live.element);
}
