import { apiDefinitionsScreen } from "./api-definitions.js";
import { loadSession, saveSession, type Session } from "./api.js";
import { calculationsScreen } from "./calculations.js";
import { h } from "./dom.js";
import { itemsScreen } from "./items.js";
import { signInScreen } from "./signin.js";
import "./style.css";

const root = document.getElementById("app")!;

const SCREENS: { title: string; build: (session: Session) => HTMLElement }[] = [
  { title: "API Definitions", build: apiDefinitionsScreen },
  { title: "Calculations", build: calculationsScreen },
  { title: "Items", build: itemsScreen },
];

function start(): void {
  const session = loadSession();
  if (session === undefined) showSignIn();
  else showConsole(session);
}

function showSignIn(): void {
  root.replaceChildren(header(), h("main", {}, signInScreen((session) => {
    saveSession(session);
    showConsole(session);
  })));
  root.querySelector("textarea")?.focus();
}

function showConsole(session: Session): void {
  const main = h("main", {});
  const buttons = SCREENS.map((screen, i) => {
    const button = h("button", { type: "button" }, screen.title);
    button.addEventListener("click", () => open(i));
    return button;
  });
  const open = (index: number) => {
    buttons.forEach((b, i) => b.setAttribute("aria-current", i === index ? "page" : "false"));
    main.replaceChildren(SCREENS[index]!.build(session));
  };
  const signOut = h("button", { type: "button", class: "sign-out" }, "Sign out");
  signOut.addEventListener("click", () => {
    saveSession(undefined);
    showSignIn();
  });
  const nav = h("nav", { "aria-label": "Console sections" }, ...buttons, h("span", { class: "who" }, `Tenant ${session.tenant}`), signOut);
  root.replaceChildren(header(), nav, main);
  open(0);
}

function header(): HTMLElement {
  return h("header", {}, h("h1", {}, "Process task backend — console"));
}

start();
