import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { DEMO_TENANT } from "../../src/demo/seed.js";
import { demoServer, type DemoServer } from "./demo.js";

/**
 * The console in a real browser: Debian's chromium, driven by playwright-core (never a browser
 * playwright downloads). Screenshots go to test-artifacts/console/.
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const ARTIFACTS = join(process.cwd(), "test-artifacts", "console");
export const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/** The little of the DOM the functions run in the page use: the tests compile without the DOM library. */
interface PageElement {
  tagName: string;
  textContent: string | null;
  outerHTML: string;
  labels?: { length: number } | null;
  getAttribute(name: string): string | null;
}
declare const document: { activeElement: unknown; querySelectorAll(selector: string): Iterable<PageElement> };
export { type PageElement };

export async function launchBrowser(): Promise<{ browser: Browser; page: Page }> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  return { browser, page };
}

export function shot(page: Page, name: string): Promise<Buffer> {
  return page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Every control on the page has an accessible name (a label, aria-label or text). */
export async function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const controls = [...document.querySelectorAll("input, select, textarea, button, [contenteditable='true'], [role='button']")];
    const named = (el: PageElement) =>
      (el.labels?.length ?? 0) > 0 ||
      (el.getAttribute("aria-label") ?? "").trim() !== "" ||
      el.getAttribute("aria-labelledby") !== null ||
      (el.tagName === "BUTTON" && (el.textContent ?? "").trim() !== "");
    return controls.filter((el) => !named(el)).map((el) => el.outerHTML.slice(0, 120));
  });
}

/** Replaces an editor's text as a paste would (no auto-closed brackets). */
export async function setEditor(page: Page, label: string, text: string): Promise<void> {
  const editor = page.getByRole("textbox", { name: label, exact: true });
  await editor.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Delete");
  await page.keyboard.insertText(text);
}

/** Signs in through the sign-in form. */
export async function signIn(page: Page, base: string, token: string, tenant: string): Promise<void> {
  await page.goto(`${base}/console`);
  await page.getByLabel("Token", { exact: true }).fill(token);
  await page.getByLabel("Tenant", { exact: true }).fill(tenant);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "API Definitions" }).waitFor();
}

export interface DemoConsole {
  demo: DemoServer;
  browser: Browser;
  page: Page;
  base: string;
}

/**
 * Registers the hooks of a suite on the demo: a server seeded with it and a browser signed in to
 * its console before the suite, both closed after it. The fields are set once the hooks have run.
 */
export function demoConsole(): DemoConsole {
  const ctx = {} as DemoConsole;
  before(async () => {
    ctx.demo = await demoServer();
    ctx.base = await ctx.demo.server.app.listen({ port: 0, host: "127.0.0.1" });
    ({ browser: ctx.browser, page: ctx.page } = await launchBrowser());
    await signIn(ctx.page, ctx.base, ctx.demo.token, DEMO_TENANT);
  });
  after(async () => {
    await ctx.browser?.close();
    await ctx.demo?.close();
  });
  return ctx;
}
