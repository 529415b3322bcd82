import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { chromium, type Browser, type Page } from "playwright-core";
import { DEMO_TENANT } from "../../src/demo/seed.js";
import { demoServer, type DemoServer } from "../support/demo.js";

/**
 * The definitions' history in the console, in Debian's chromium through playwright-core: the
 * versions newest first, a diff of the chosen one, Restore, and Delete behind a confirmation.
 * Operated with the keyboard where a user would; screenshots in test-artifacts/console/.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARTIFACTS = join(process.cwd(), "test-artifacts", "console");
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
declare const document: { activeElement: unknown };

describe("definition history in the console", function () {
  this.timeout(120_000);
  let demo: DemoServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    demo = await demoServer();
    const base = await demo.server.app.listen({ port: 0, host: "127.0.0.1" });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${base}/console`);
    await page.getByLabel("Token", { exact: true }).fill(demo.token);
    await page.getByLabel("Tenant", { exact: true }).fill(DEMO_TENANT);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "API Definitions" }).waitFor();
  });
  after(async () => {
    await browser?.close();
    await demo?.close();
  });

  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  const history = () => page.getByRole("region", { name: /^History of / });
  const versions = () => history().getByRole("list", { name: "Versions, newest first" }).getByRole("button");
  const diff = () => history().getByLabel("Differences");
  const isFocused = (locator: ReturnType<Page["getByRole"]>) => locator.evaluate((el) => el === document.activeElement);

  it("lists an API definition's versions newest first and shows the change as a line diff", async () => {
    await page.getByLabel("API definition", { exact: true }).locator('option[value="agreement-access-points"]').waitFor({ state: "attached" });
    await history().getByRole("heading", { name: "History of agreement-access-points" }).waitFor();
    expect(await versions().allInnerTexts()).to.have.length(1);
    expect(await versions().first().innerText()).to.match(/^Version 1: create, by unknown user, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);

    await page.getByLabel("Name", { exact: true }).fill("Access points, renamed");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByRole("status", { name: "Definition status" }).getByText("Saved agreement-access-points.").waitFor();
    await versions().nth(1).waitFor();
    expect(await versions().first().innerText()).to.match(/^Version 2: update, by demo-admin, /);
    expect(await versions().first().getAttribute("aria-pressed")).to.equal("true");
    const text = await diff().innerText();
    expect(text).to.contain("--- version 1\n+++ version 2");
    expect(text).to.contain('- name: "Access points of an agreement"').and.contain('+ name: "Access points, renamed"');
    // Unchanged lines are shown, one per line of the query.
    expect(text).to.contain("\n  query: |\n    # access points of one agreement");
    await shot("10-history-diff");
  });

  it("restores an earlier version with the keyboard, compared first with the current definition", async () => {
    await versions().nth(1).focus();
    await page.keyboard.press("Enter");
    expect(await versions().nth(1).getAttribute("aria-pressed")).to.equal("true");
    const compare = history().getByLabel("Compare with");
    await compare.focus();
    await compare.selectOption("current");
    expect(await diff().innerText()).to.contain("--- current (version 2)\n+++ version 1").and.contain('+ name: "Access points of an agreement"');
    const restore = history().getByRole("button", { name: "Restore version 1" });
    await restore.focus();
    await page.keyboard.press("Enter");
    await history().getByRole("status", { name: "History status" }).getByText("Restored version 1 of agreement-access-points.").waitFor();
    expect(await page.getByLabel("Name", { exact: true }).inputValue()).to.equal("Access points of an agreement");
    expect(await versions().first().innerText()).to.match(/^Version 3: restore of version 1, by demo-admin, /);
  });

  it("deletes only after a confirmation: Escape cancels, the focus starts on Cancel; the history stays and restores it", async () => {
    const picker = page.getByLabel("API definition", { exact: true });
    await page.getByRole("button", { name: "Delete…" }).first().click();
    const dialog = page.getByRole("dialog", { name: "Delete API definition agreement-access-points?" });
    await dialog.waitFor();
    expect(await isFocused(dialog.getByRole("button", { name: "Cancel" }))).to.equal(true);
    await shot("11-delete-confirmation");
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    expect(await picker.locator('option[value="agreement-access-points"]').count()).to.equal(1);

    await page.getByRole("button", { name: "Delete…" }).first().click();
    await dialog.getByRole("button", { name: "Delete agreement-access-points" }).click();
    await page.getByRole("status", { name: "Definition status" }).getByText("Deleted agreement-access-points; its history is kept below.").waitFor();
    expect(await picker.locator('option[value="agreement-access-points"]').count()).to.equal(0);
    await history().getByRole("heading", { name: "History of agreement-access-points (deleted)" }).waitFor();
    expect(await versions().first().innerText()).to.match(/^Version 4: delete, by demo-admin, /);
    await versions().nth(1).click();
    // Still compared with the current definition, which there is none of now.
    expect(await diff().innerText()).to.contain("--- deleted\n+++ version 3");
    await history().getByRole("button", { name: "Restore version 3" }).click();
    await history().getByRole("status", { name: "History status" }).getByText("Restored version 3 of agreement-access-points.").waitFor();
    expect(await picker.inputValue()).to.equal("agreement-access-points");
    expect(await versions().first().innerText()).to.match(/^Version 5: restore of version 3, /);
  });

  it("does the same for a calculation definition, and every control has an accessible name", async () => {
    await page.getByRole("button", { name: "Calculations" }).click();
    const picker = page.getByLabel("Calculation definition", { exact: true });
    await picker.locator('option[value="site-net-consumption"]').waitFor({ state: "attached" });
    await history().getByRole("heading", { name: "History of site-net-consumption" }).waitFor();
    await page.getByRole("button", { name: "Delete…" }).click();
    const dialog = page.getByRole("dialog", { name: "Delete calculation definition site-net-consumption?" });
    await dialog.getByRole("button", { name: "Delete site-net-consumption" }).click();
    await page.getByRole("status", { name: "Calculation status" }).getByText("Deleted site-net-consumption; its history is kept below.").waitFor();
    expect(await picker.locator('option[value="site-net-consumption"]').count()).to.equal(0);
    await history().getByRole("button", { name: "Restore version 2" }).waitFor();
    // Version 2 is the delete: it holds the definition as it was removed.
    await history().getByRole("button", { name: "Restore version 2" }).click();
    await history().getByRole("status", { name: "History status" }).getByText("Restored version 2 of site-net-consumption.").waitFor();
    expect(await picker.inputValue()).to.equal("site-net-consumption");
    expect(await versions().allInnerTexts()).to.have.length(3);
    await shot("12-calculation-history");
    const unnamed = await page.locator("input, select, textarea, button").evaluateAll((els) =>
      els.filter((el) => (el as unknown as { labels: { length: number } | null }).labels?.length === 0 && !el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby") && (el.tagName !== "BUTTON" || (el.textContent ?? "").trim() === "")).map((el) => el.outerHTML.slice(0, 100)),
    );
    expect(unnamed).to.deep.equal([]);
  });
});
