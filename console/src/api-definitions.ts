import { call, type ProblemDetail, type Session } from "./api.js";
import { createEditor } from "./editor.js";
import { field, h } from "./dom.js";
import { historyPanel } from "./history.js";
import { jsonata } from "./jsonata-language.js";
import { graphQuery, graphSchema } from "./query-language.js";
import { statusArea } from "./status.js";
import { tabs } from "./tabs.js";
import { unsavedGuard } from "./unsaved.js";
import { resultView } from "./view.js";

interface ApiDefinition {
  name: string | null;
  externalId: string;
  version: string | null;
  active: boolean;
  data: { queryParameters?: { name: string; type?: string }[]; [key: string]: unknown };
  query: string;
  transform: string;
}

/** Parameters the caller never gives: they come from the header and the token. */
const FROM_CALLER = new Set(["tenantId", "userId"]);

const NEW_DEFINITION: ApiDefinition = {
  name: "",
  externalId: "",
  version: "1.0",
  active: true,
  data: { queryParameters: [{ name: "kind", type: "string" }] },
  query: "AccessPoint ?ap; attribute:accessPointType ${kind}.",
  transform: '{ "points": result(?ap) { ean: externalId, type: accessPointType } }',
};

export function apiDefinitionsScreen(session: Session): HTMLElement {
  const picker = h("select", { name: "definition" });
  const name = h("input", { name: "name" });
  const externalId = h("input", { name: "externalId", required: true });
  const version = h("input", { name: "version" });
  const state = h("output", { class: "state" });
  const status = statusArea("Definition status");
  const parameterForm = h("fieldset", { class: "parameters" });
  const queryHost = h("div", { class: "editor" });
  const transformHost = h("div", { class: "editor" });
  const dataHost = h("div", { class: "editor small" });
  const parameterNames = () => (readData()?.queryParameters ?? []).flatMap((p) => (typeof p?.name === "string" ? [p.name] : []));
  const query = createEditor(queryHost, "Query", { language: graphQuery(() => graphSchema(session), parameterNames) });
  const transform = createEditor(transformHost, "Transform", { language: jsonata() });
  const data = createEditor(dataHost, "Data (JSON)", { json: true, onChange: () => renderParameters() });
  const editorTabs = tabs("Definition text", [
    { title: "Query", content: queryHost },
    { title: "Transform", content: transformHost },
    { title: "Data", content: dataHost },
  ]);
  const queryOutput = resultView("Query output");
  const result = resultView("Result");
  let stored: ApiDefinition | undefined;
  const history = historyPanel(session, { base: "/api-definitions", noun: "API definition", changed: (id) => refreshList(id) });
  const values = new Map<string, string>();
  const guard = unsavedGuard(() => JSON.stringify([name.value, externalId.value, version.value, query.text(), transform.text(), data.text()]));

  const readData = (): ApiDefinition["data"] | undefined => {
    try {
      const value: unknown = JSON.parse(data.text() || "{}");
      return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as ApiDefinition["data"]) : undefined;
    } catch {
      return undefined;
    }
  };

  /** The run form, generated from `data.queryParameters`; values typed so far are kept. */
  function renderParameters(): void {
    const declared = (readData()?.queryParameters ?? []).filter((p) => typeof p?.name === "string" && !FROM_CALLER.has(p.name));
    parameterForm.replaceChildren(h("legend", {}, "Query parameters"));
    if (declared.length === 0) parameterForm.append(h("p", {}, "This definition declares no parameters to give."));
    for (const p of declared) {
      const input = h("input", { name: `param-${p.name}`, value: values.get(p.name) ?? "", "data-type": p.type ?? "string" });
      input.addEventListener("input", () => values.set(p.name, input.value));
      parameterForm.append(field(`${p.name} (${p.type ?? "string"})`, input));
    }
  }

  function parameterValues(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const input of parameterForm.querySelectorAll("input")) {
      const name = input.name.slice("param-".length);
      const type = input.dataset.type ?? "string";
      out[name] = type === "number" ? Number(input.value) : type === "boolean" ? input.value === "true" : input.value;
    }
    return out;
  }

  function show(definition: ApiDefinition, isStored: boolean): void {
    stored = isStored ? definition : undefined;
    name.value = definition.name ?? "";
    externalId.value = definition.externalId;
    version.value = definition.version ?? "";
    query.setText(definition.query);
    transform.setText(definition.transform);
    data.setText(JSON.stringify(definition.data, null, 2));
    state.value = isStored ? (definition.active ? "Active" : "Inactive") : "Not saved";
    activate.disabled = !isStored || definition.active;
    deactivate.disabled = !isStored || !definition.active;
    remove.disabled = !isStored;
    void history.load(isStored ? definition.externalId : undefined);
    query.clearMarks();
    transform.clearMarks();
    queryOutput.clear();
    result.clear();
    renderParameters();
    status.clear();
    guard.shown();
  }

  function edited(): ApiDefinition | undefined {
    const parsed = readData();
    if (parsed === undefined) {
      status.problem(new Error("Data is not a JSON object"));
      return undefined;
    }
    return { name: name.value, externalId: externalId.value.trim(), version: version.value, active: stored?.active ?? true, data: parsed, query: query.text(), transform: transform.text() };
  }

  /** Problems with a position are underlined in their editor, and that editor's tab is shown. */
  function markProblems(problems: ProblemDetail[]): void {
    const at = (path: string) => problems.filter((p) => p.path === path && typeof p.line === "number").map((p) => ({ line: p.line!, column: p.column ?? 1, message: p.message ?? "" }));
    const inQuery = at("query");
    const inTransform = at("transform");
    query.mark(inQuery);
    transform.mark(inTransform);
    if (inQuery.length > 0) editorTabs.select(0);
    else if (inTransform.length > 0) editorTabs.select(1);
  }

  async function refreshList(selected?: string): Promise<void> {
    const page = await call<{ apiDefinitions: ApiDefinition[] }>(session, "GET", "/api-definitions?limit=500");
    picker.replaceChildren(h("option", { value: "" }, "— new definition —"), ...page.apiDefinitions.map((d) => h("option", { value: d.externalId, selected: d.externalId === selected }, `${d.externalId}${d.active ? "" : " (inactive)"}`)));
    const chosen = page.apiDefinitions.find((d) => d.externalId === selected) ?? page.apiDefinitions[0];
    if (chosen === undefined) show(NEW_DEFINITION, false);
    else {
      picker.value = chosen.externalId;
      show(chosen, true);
    }
  }

  picker.addEventListener("change", () => {
    if (!guard.mayLeave(stored?.externalId ?? "the new definition")) {
      picker.value = stored?.externalId ?? "";
      return;
    }
    if (picker.value === "") show(NEW_DEFINITION, false);
    else void refreshList(picker.value).catch((err: unknown) => status.problem(err));
  });

  async function run(): Promise<void> {
    const definition = edited();
    if (definition === undefined) return;
    status.info("Running…");
    try {
      const { externalId: id, active: _active, ...rest } = definition;
      const outcome = await call<{ queryOutput: unknown; result: unknown; problems: ProblemDetail[] }>(session, "POST", "/api-definitions/test", {
        definition: { ...rest, ...(id === "" ? {} : { externalId: id }), name: rest.name ?? undefined, version: rest.version ?? undefined },
        queryParameters: parameterValues(),
      });
      markProblems(outcome.problems);
      queryOutput.show(outcome.queryOutput);
      result.show(outcome.result);
      if (outcome.problems.length > 0) status.problems("The definition has problems", outcome.problems);
      else status.info("Ran without problems.");
    } catch (err) {
      markProblems(status.problem(err));
    }
  }

  async function save(): Promise<void> {
    const definition = edited();
    if (definition === undefined) return;
    try {
      const saved =
        stored === undefined
          ? await call<ApiDefinition>(session, "POST", "/api-definitions", definition)
          : await call<ApiDefinition>(session, "PUT", `/api-definitions/${encodeURIComponent(stored.externalId)}`, definition);
      await refreshList(saved.externalId);
      status.info(`Saved ${saved.externalId}.`);
    } catch (err) {
      markProblems(status.problem(err));
    }
  }

  async function setActive(active: boolean): Promise<void> {
    if (stored === undefined) return;
    try {
      const saved = await call<ApiDefinition>(session, "PATCH", `/api-definitions/${encodeURIComponent(stored.externalId)}`, { active });
      await refreshList(saved.externalId);
      status.info(`${saved.externalId} is ${active ? "active" : "inactive"}.`);
    } catch (err) {
      status.problem(err);
    }
  }

  async function deleteStored(): Promise<void> {
    const id = stored?.externalId;
    if (id === undefined) return;
    try {
      if (await history.remove(id)) status.info(`Deleted ${id}; its history is kept below.`);
    } catch (err) {
      status.problem(err);
    }
  }

  const runButton = h("button", { type: "button" }, "Run");
  const saveButton = h("button", { type: "button" }, "Save");
  const activate = h("button", { type: "button" }, "Activate");
  const deactivate = h("button", { type: "button" }, "Deactivate");
  runButton.addEventListener("click", () => void run());
  saveButton.addEventListener("click", () => void save());
  activate.addEventListener("click", () => void setActive(true));
  deactivate.addEventListener("click", () => void setActive(false));
  const remove = h("button", { type: "button", class: "danger" }, "Delete…");
  remove.addEventListener("click", () => void deleteStored());

  void refreshList().catch((err: unknown) => status.problem(err));
  return h(
    "section",
    { class: "screen", "aria-labelledby": "api-title" },
    h("h2", { id: "api-title" }, "API Definitions"),
    h("div", { class: "row" }, field("API definition", picker), field("Name", name), field("External id", externalId), field("Version", version), h("div", { class: "field" }, h("span", {}, "State"), state)),
    editorTabs.element,
    parameterForm,
    h("div", { class: "actions" }, runButton, saveButton, activate, deactivate, remove),
    status.element,
    h("div", { class: "side-by-side" }, queryOutput.element, result.element),
    history.element,
  );
}
