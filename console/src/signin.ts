import { call, type Session } from "./api.js";
import { field, h } from "./dom.js";
import { statusArea } from "./status.js";

/** Token and tenant, checked by one admin call before the console opens. */
export function signInScreen(onSignedIn: (session: Session) => void): HTMLElement {
  const token = h("textarea", { name: "token", rows: 3, required: true, autocomplete: "off", spellcheck: "false" });
  const tenant = h("input", { name: "tenant", required: true, autocomplete: "off", value: "demo" });
  const status = statusArea("Sign-in status");
  const form = h(
    "form",
    { class: "signin", "aria-labelledby": "signin-title" },
    h("h2", { id: "signin-title" }, "Sign in"),
    h("p", {}, "An admin token (JWT) of the tenant, as `npm run demo` prints one. Both are kept for this tab only."),
    field("Token", token),
    field("Tenant", tenant),
    h("button", { type: "submit" }, "Sign in"),
    status.element,
  );
  // Enter in the token field submits too (it is a textarea, where Enter would add a line).
  token.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const session = { token: token.value.trim(), tenant: tenant.value.trim() };
    status.info("Checking the token…");
    call(session, "GET", "/api-definitions?limit=1").then(
      () => onSignedIn(session),
      (err: unknown) => status.problem(err),
    );
  });
  return form;
}
