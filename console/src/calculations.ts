import { call, type ProblemDetail, type Session } from "./api.js";
import { chartOf, type Point } from "./chart.js";
import { createEditor } from "./editor.js";
import { field, h } from "./dom.js";
import { historyPanel } from "./history.js";
import type { Model } from "./model-graph.js";
import { modeler } from "./modeler.js";
import { statusArea } from "./status.js";
import { unsavedGuard } from "./unsaved.js";
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
  // The JSON and the visual model edit one definition: each edit of one is drawn in the other.
  let fromModel = false;
  const model = modeler({
    onChange(next) {
      fromModel = true;
      definition.setText(JSON.stringify(next, null, 2));
      fromModel = false;
    },
    onRun: () => void run(),
  });
  const definition = createEditor(definitionHost, "Calculation definition (JSON)", {
    json: true,
    onChange() {
      if (fromModel) return;
      try {
        const value: unknown = JSON.parse(definition.text());
        if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error("not an object");
        model.setModel(value as Model);
        model.setInvalid(undefined);
      } catch (err) {
        model.setInvalid(err instanceof Error ? err.message : String(err));
      }
    },
  });
  const request = createEditor(requestHost, "Run request (JSON)", { json: true, text: "{}" });
  const status = statusArea("Calculation status");
  const chart = h("div", { class: "chart-area" });
  const values = resultView("Buckets");
  let stored: string | undefined;
  const history = historyPanel(session, { base: "/calculation-definitions", noun: "calculation definition", changed: (id) => refreshList(id) });
  const guard = unsavedGuard(() => definition.text());

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
    model.showProblems([]);
    status.clear();
    guard.shown();
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
      model.showProblems(status.problem(err));
    }
  }

  /** Runs the editor's text, saved or not, through POST /calculation-definitions/test. */
  async function run(): Promise<void> {
    const body = parsed(request.text() || "{}", "The run request");
    const unsaved = parsed(definition.text(), "The definition");
    if (body === undefined || unsaved === undefined) return;
    const title = typeof unsaved.externalId === "string" && unsaved.externalId !== "" ? unsaved.externalId : "unsaved calculation";
    status.info("Calculating…");
    chart.replaceChildren();
    values.clear();
    try {
      const answer = await call<{ buckets?: Point[]; value?: number | null; problems: ProblemDetail[] }>(session, "POST", "/calculation-definitions/test", { ...body, definition: unsaved });
      model.showProblems(answer.problems);
      if (answer.problems.length > 0) status.problems("The definition has problems", answer.problems);
      else if (answer.buckets !== undefined) {
        const range = (body.eventDateRange ?? (unsaved.data as { calculation?: { eventDateRange?: unknown } } | undefined)?.calculation?.eventDateRange) as { timeZone?: string } | undefined;
        chart.replaceChildren(chartOf(answer.buckets, title, { zone: range?.timeZone }));
        values.show(answer.buckets);
        status.info(`${answer.buckets.length} buckets.`);
      } else {
        chart.replaceChildren(h("p", { class: "value" }, `Value: ${String(answer.value)}`));
        values.show({ value: answer.value });
        status.info("One value.");
      }
    } catch (err) {
      model.showProblems(status.problem(err));
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
    if (!guard.mayLeave(stored ?? "the new calculation")) {
      picker.value = stored ?? "";
      return;
    }
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
    model.element,
    chart,
    values.element,
    history.element,
  );
}
