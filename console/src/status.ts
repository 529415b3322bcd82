import { ApiProblem, type ProblemDetail } from "./api.js";
import { h } from "./dom.js";

/** A live region that says what happened: announced by screen readers, read by the tests. */
export interface StatusArea {
  element: HTMLElement;
  info(text: string): void;
  /** Says nothing: what it said was about something no longer shown. */
  clear(): void;
  /** Shows what an API call threw; answers the problem's details (for marking positions). */
  problem(err: unknown): ProblemDetail[];
  problems(title: string, list: ProblemDetail[]): void;
}

export function statusArea(label: string): StatusArea {
  const element = h("div", { class: "status", role: "status", "aria-live": "polite", "aria-label": label });
  return {
    element,
    info(text) {
      element.className = "status ok";
      element.replaceChildren(text);
    },
    clear() {
      element.className = "status";
      element.replaceChildren();
    },
    problem(err) {
      element.className = "status error";
      if (!(err instanceof ApiProblem)) {
        element.replaceChildren(err instanceof Error ? err.message : String(err));
        return [];
      }
      element.replaceChildren(h("strong", {}, `${err.status} ${err.code}`), ` ${err.detail}`, problemList(err.errors));
      return err.errors;
    },
    problems(title, list) {
      element.className = "status error";
      element.replaceChildren(h("strong", {}, title), problemList(list));
    },
  };
}

export function problemList(problems: ProblemDetail[]): HTMLElement {
  return h(
    "ul",
    { class: "problems" },
    ...problems.map((p) => {
      const where = p.line !== undefined ? ` (line ${p.line}, column ${p.column ?? 1})` : "";
      const limit = typeof p.limit === "string" ? ` — limit ${p.limit}` : "";
      return h("li", {}, h("code", {}, p.path ?? ""), `${where}: ${p.message ?? ""}${limit}`);
    }),
  );
}
