import { h, uid } from "./dom.js";

/** WAI-ARIA tabs: arrow keys move between tabs, Tab goes into the panel. */
export function tabs(label: string, panels: { title: string; content: HTMLElement }[]): { element: HTMLElement; select(index: number): void } {
  const list = h("div", { role: "tablist", "aria-label": label });
  const buttons: HTMLButtonElement[] = [];
  const sections: HTMLElement[] = [];
  const select = (index: number, focus = false) => {
    buttons.forEach((b, i) => {
      b.setAttribute("aria-selected", String(i === index));
      b.tabIndex = i === index ? 0 : -1;
      sections[i]!.hidden = i !== index;
    });
    if (focus) buttons[index]!.focus();
  };
  panels.forEach((panel, i) => {
    const tabId = uid("tab");
    const panelId = uid("panel");
    const button = h("button", { type: "button", role: "tab", id: tabId, "aria-controls": panelId }, panel.title);
    button.addEventListener("click", () => select(i));
    button.addEventListener("keydown", (event) => {
      const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
      if (step !== 0) select((i + step + panels.length) % panels.length, true);
    });
    buttons.push(button);
    list.append(button);
    sections.push(h("div", { role: "tabpanel", id: panelId, "aria-labelledby": tabId, class: "tabpanel" }, panel.content));
  });
  select(0);
  return { element: h("div", { class: "tabs" }, list, ...sections), select };
}
