/** A small element builder: the console is plain DOM, no framework. */
type Child = Node | string | null | undefined | false;
type Attributes = Record<string, string | boolean | number | EventListener | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, "").toLowerCase(), value);
    else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  append(element, ...children);
  return element;
}

export function append(parent: Element, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child);
  }
}

let nextId = 0;
/** A unique id, to tie a label to its control. */
export function uid(prefix: string): string {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

/** A labelled control: `<label for>` and the control, in one wrapper. */
export function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  if (control.id === "") control.id = uid("field");
  const wrapper = h("div", { class: "field" }, h("label", { for: control.id }, label), control);
  if (hint !== undefined) {
    const hintId = `${control.id}-hint`;
    control.setAttribute("aria-describedby", hintId);
    wrapper.append(h("small", { id: hintId }, hint));
  }
  return wrapper;
}

export function select(options: { value: string; label: string }[], value?: string): HTMLSelectElement {
  const element = h("select");
  for (const option of options) element.append(h("option", { value: option.value, selected: option.value === value }, option.label));
  return element;
}
