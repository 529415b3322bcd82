import { call, type Session } from "./api.js";
import { chartOf, type Point } from "./chart.js";
import { createEditor } from "./editor.js";
import { field, h } from "./dom.js";
import { historyPanel } from "./history.js";
import { statusArea } from "./status.js";
import { resultView } from "./view.js";

interface CalculationDefinition {
  externalId: string;
  name: string;
  calculationType: string;
  active: boolean;
  data: unknown;
}

const NEW_CALCULATION = {
  externalId: "",
  name: "",
  calculationType: "EXPRESSION",
  active: true,
  data: { calculation: { expression: "a * 2", expressionType: "TIMESERIES", eventDateRange: { period: "Yesterday" }, queryOptions: { aggregation: { metric: "avg", interval: "Hourly" } }, scope: { a: { type: "VALUE", value: 1 } } } },
};

/** A Calculation Definition edited as JSON, saved and run; buckets charted and listed. */
export function calculationsScreen(session: Session): HTMLElement {
  const picker = h("select", { name: "calculation" });
  const definitionHost = h("div", { class: "editor" });
  const requestHost = h("div", { class: "editor small" });
  const definition = createEditor(definitionHost, "Calculation definition (JSON)", { json: true });
  const request = createEditor(requestHost, "Run request (JSON)", { json: true, text: "{}" });
  const status = statusArea("Calculation status");
  const chart = h("div", { class: "chart-area" });
  const values = resultView("Buckets");
  let stored: string | undefined;
  const history = historyPanel(session, { base: "/calculation-definitions", noun: "calculation definition", changed: (id) => refreshList(id) });

  const parsed = (text: string, what: string): Record<string, unknown> | undefined => {
    try {
      const value: unknown = JSON.parse(text);
      if (value !== null && typeof value === "object" && !Array.isArray(value)) return value as Record<string, unknown>;
    } catch {
      // reported below
    }
    status.problem(new Error(`${what} is not a JSON object`));
    return undefined;
  };

  function show(value: object, isStored: string | undefined): void {
    stored = isStored;
    definition.setText(JSON.stringify(value, null, 2));
    chart.replaceChildren();
    values.clear();
    remove.disabled = isStored === undefined;
    void history.load(isStored);
  }

  async function refreshList(selected?: string): Promise<void> {
    const page = await call<{ calculationDefinitions: CalculationDefinition[] }>(session, "GET", "/calculation-definitions?limit=500");
    picker.replaceChildren(h("option", { value: "" }, "— new calculation —"), ...page.calculationDefinitions.map((d) => h("option", { value: d.externalId, selected: d.externalId === selected }, d.externalId)));
    const chosen = page.calculationDefinitions.find((d) => d.externalId === selected) ?? page.calculationDefinitions[0];
    if (chosen === undefined) show(NEW_CALCULATION, undefined);
    else {
      picker.value = chosen.externalId;
      const { externalId, name, calculationType, active, data } = chosen;
      show({ externalId, name, calculationType, active, data }, externalId);
    }
  }

  async function save(): Promise<void> {
    const body = parsed(definition.text(), "The definition");
    if (body === undefined) return;
    try {
      const saved =
        stored === undefined
          ? await call<CalculationDefinition>(session, "POST", "/calculation-definitions", body)
          : await call<CalculationDefinition>(session, "PUT", `/calculation-definitions/${encodeURIComponent(stored)}`, body);
      await refreshList(saved.externalId);
      status.info(`Saved ${saved.externalId}.`);
    } catch (err) {
      status.problem(err);
    }
  }

  async function run(): Promise<void> {
    const body = parsed(request.text() || "{}", "The run request");
    if (body === undefined) return;
    if (stored === undefined) {
      status.problem(new Error("Save the calculation before running it"));
      return;
    }
    status.info("Calculating…");
    try {
      const answer = await call<{ buckets?: Point[]; value?: number | null }>(session, "POST", `/calculation-definitions/${encodeURIComponent(stored)}/calculate`, body);
      if (answer.buckets !== undefined) {
        chart.replaceChildren(chartOf(answer.buckets, stored));
        values.show(answer.buckets);
        status.info(`${answer.buckets.length} buckets.`);
      } else {
        chart.replaceChildren(h("p", { class: "value" }, `Value: ${String(answer.value)}`));
        values.show(answer);
        status.info("One value.");
      }
    } catch (err) {
      status.problem(err);
    }
  }

  async function deleteStored(): Promise<void> {
    const id = stored;
    if (id === undefined) return;
    try {
      if (await history.remove(id)) status.info(`Deleted ${id}; its history is kept below.`);
    } catch (err) {
      status.problem(err);
    }
  }

  picker.addEventListener("change", () => {
    if (picker.value === "") show(NEW_CALCULATION, undefined);
    else void refreshList(picker.value).catch((err: unknown) => status.problem(err));
  });
  const saveButton = h("button", { type: "button" }, "Save calculation");
  const runButton = h("button", { type: "button" }, "Calculate");
  saveButton.addEventListener("click", () => void save());
  runButton.addEventListener("click", () => void run());
  const remove = h("button", { type: "button", class: "danger" }, "Delete…");
  remove.addEventListener("click", () => void deleteStored());
  void refreshList().catch((err: unknown) => status.problem(err));
  return h(
    "section",
    { class: "screen", "aria-labelledby": "calc-title" },
    h("h2", { id: "calc-title" }, "Calculation Definitions"),
    field("Calculation definition", picker),
    h("div", { class: "two" }, h("div", {}, h("h3", {}, "Definition"), definitionHost), h("div", {}, h("h3", {}, "Run request: eventDateRange, queryOptions, inputs (override the definition)"), requestHost)),
    h("div", { class: "actions" }, runButton, saveButton, remove),
    status.element,
    chart,
    values.element,
    history.element,
  );
}
