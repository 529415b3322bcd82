import { join } from "node:path";
import { expect } from "chai";
import type { Browser, Page } from "playwright-core";
import { DEMO_TENANT } from "../../src/demo/seed.js";
import { demoServer, type DemoServer } from "../support/demo.js";
import { ARTIFACTS, launchBrowser, setEditor as setEditorOn, shot as shotOf, unlabelledControls as unlabelledOn } from "../support/browser.js";

/**
 * The console in a real browser (test/support/browser.ts) against a server seeded with the demo.
 * A screenshot of every screen is kept in test-artifacts/console/.
 */
declare const document: { activeElement: unknown };

describe("admin console in a browser", function () {
  this.timeout(120_000);
  let demo: DemoServer;
  let browser: Browser;
  let page: Page;
  let base: string;

  before(async () => {
    demo = await demoServer({ TRANSFORM_TIMEOUT_MS: "1500" });
    base = await demo.server.app.listen({ port: 0, host: "127.0.0.1" });
    ({ browser, page } = await launchBrowser());
  });
  after(async () => {
    await browser?.close();
    await demo?.close();
  });

  const shot = (name: string) => shotOf(page, name);
  const status = (label: string) => page.getByRole("status", { name: label });
  const unlabelledControls = () => unlabelledOn(page);
  const setEditor = (label: string, text: string) => setEditorOn(page, label, text);

  it("serves the page without a token and signs in with the keyboard alone", async () => {
    const plain = await fetch(`${base}/console`);
    expect(plain.status).to.equal(200);
    expect(plain.headers.get("content-type")).to.match(/^text\/html/);
    expect(plain.headers.get("content-security-policy")).to.include("default-src 'self'");
    await page.goto(`${base}/console`);
    expect(await page.getByRole("heading", { name: "Sign in" }).isVisible()).to.equal(true);
    const token = page.getByLabel("Token", { exact: true });
    expect(await token.evaluate((el) => el === document.activeElement)).to.equal(true);
    await page.keyboard.insertText(demo.token);
    await page.keyboard.press("Tab");
    expect(await page.getByLabel("Tenant", { exact: true }).evaluate((el) => el === document.activeElement)).to.equal(true);
    await page.keyboard.press("Control+A");
    await page.keyboard.insertText(DEMO_TENANT);
    await page.keyboard.press("Tab");
    expect(await page.getByRole("button", { name: "Sign in" }).evaluate((el) => el === document.activeElement)).to.equal(true);
    expect(await unlabelledControls()).to.deep.equal([]);
    await shot("01-sign-in");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "API Definitions" }).waitFor();
    const session = await page.evaluate(() => sessionStorage.getItem("console.session"));
    expect(JSON.parse(session!)).to.deep.equal({ token: demo.token, tenant: DEMO_TENANT });
    expect(await page.evaluate(() => localStorage.length)).to.equal(0);
  });

  it("refuses a token the server does not accept, saying why", async () => {
    const other = await browser.newPage();
    await other.goto(`${base}/console/`);
    await other.getByLabel("Token", { exact: true }).fill("not-a-jwt");
    await other.getByRole("button", { name: "Sign in" }).click();
    await other.getByRole("status", { name: "Sign-in status" }).getByText("401 UNAUTHENTICATED").waitFor();
    await other.close();
  });

  it("runs the example definition from a form made of its parameters: query output and result, as JSON and as a table", async () => {
    // The list is read after the screen opens: wait for the stored definition's option.
    await page.getByLabel("API definition", { exact: true }).locator('option[value="agreement-access-points"]').waitFor({ state: "attached" });
    expect(await page.getByLabel("API definition", { exact: true }).inputValue()).to.equal("agreement-access-points");
    // tenantId comes from the header: only publicId is asked for.
    expect(await page.getByLabel(/^tenantId/).count()).to.equal(0);
    await page.getByLabel("publicId (string)").fill("AGR-1001");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await status("Definition status").getByText("Ran without problems.").waitFor();
    const result = page.getByRole("region", { name: "Result" });
    const json = JSON.parse(await result.getByLabel("Result as JSON").innerText()) as { accessPoints: { externalId: string; accessPointType: string }[] };
    expect(json.accessPoints.map((p) => [p.externalId, p.accessPointType])).to.deep.equal([
      ["541448820000000011", "ELECTRICITY"],
      ["541448820000000028", "GAS"],
    ]);
    const output = JSON.parse(await page.getByLabel("Query output as JSON").innerText()) as Record<string, unknown[]>;
    expect(Object.keys(output).sort()).to.deep.equal(["accessPoint", "agreement", "arrangement", "indexSet", "product", "relation", "tenant"]);
    await result.getByLabel("Table").check();
    const table = result.getByRole("table");
    expect(await table.getByRole("columnheader").allInnerTexts()).to.deep.equal(["externalId", "publicId", "id", "accessPointType"]);
    expect(await table.getByRole("row").count()).to.equal(3);
    expect(await table.getByRole("cell", { name: "AP-0028" }).count()).to.equal(1);
    expect(await unlabelledControls()).to.deep.equal([]);
    await shot("02-api-definition-run");
  });

  it("marks a transform syntax error at its line and column, and names an undeclared variable", async () => {
    // The tabs work from the keyboard: arrow keys move between them.
    await page.getByRole("tab", { name: "Query" }).focus();
    await page.keyboard.press("ArrowRight");
    expect(await page.getByRole("tab", { name: "Transform" }).getAttribute("aria-selected")).to.equal("true");
    expect(await page.getByRole("tabpanel", { name: "Transform" }).isVisible()).to.equal(true);
    expect(await page.getByRole("tabpanel", { name: "Query" }).isHidden()).to.equal(true);
    await setEditor("Transform", '{\n  "points": result(?accessPoint) { externalId } +\n}');
    await page.getByRole("button", { name: "Run", exact: true }).click();
    const problems = status("Definition status");
    await problems.getByText("The definition has problems").waitFor();
    const text = await problems.innerText();
    expect(text).to.match(/transform \(line 3, column 1\)/);
    const transformPanel = page.getByRole("tabpanel", { name: "Transform" });
    await transformPanel.locator(".cm-lintRange-error").first().waitFor();
    const marked = await transformPanel.locator(".cm-lintRange-error").first().evaluate((el) => {
      const line = el.closest(".cm-line");
      return [...(line?.parentElement?.children ?? [])].indexOf(line!) + 1;
    });
    expect(marked).to.equal(3);
    await shot("03-transform-error");

    await setEditor("Transform", '{ "points": result(?accessPoint) { externalId }, "who": ${customer} }');
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await problems.getByText(/customer/).waitFor();
    expect(await problems.innerText()).to.match(/transform \(line 1, column \d+\): .*customer/);
    expect(await transformPanel.locator(".cm-lintRange-error").count()).to.equal(1);
  });

  it("says which limit a transform reached", async () => {
    await setEditor("Transform", "($f := function($n) { $n > 0 ? $f($n - 1) + $f($n - 1) : 1 }; $f(40))");
    await page.getByRole("button", { name: "Run", exact: true }).click();
    await status("Definition status").getByText("limit TRANSFORM_TIMEOUT_MS").waitFor({ timeout: 30_000 });
  });

  it("saves a new definition, then deactivates and activates it", async () => {
    // The transform was edited: leaving it asks first; dismissed, nothing changes.
    page.once("dialog", (dialog) => void dialog.dismiss());
    await page.getByLabel("API definition", { exact: true }).selectOption("");
    expect(await page.getByLabel("API definition", { exact: true }).inputValue()).to.equal("agreement-access-points");
    expect(await status("Definition status").innerText()).to.match(/TRANSFORM_TIMEOUT_MS/);
    let asked = "";
    page.once("dialog", (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.getByLabel("API definition", { exact: true }).selectOption("");
    expect(asked).to.equal("Discard the unsaved changes to agreement-access-points?");
    // The previous definition's problems are gone with it.
    expect(await status("Definition status").innerText()).to.equal("");
    await page.getByLabel("External id").fill("console-points");
    await page.getByLabel("Name", { exact: true }).fill("Points by type, from the console");
    await page.getByRole("button", { name: "Save" }).click();
    await status("Definition status").getByText("Saved console-points.").waitFor();
    expect(await page.getByLabel("API definition", { exact: true }).inputValue()).to.equal("console-points");
    await page.getByRole("button", { name: "Deactivate", exact: true }).click();
    await status("Definition status").getByText("console-points is inactive.").waitFor();
    const stored = await demo.server.app.inject({ method: "GET", url: "/api-definitions/console-points", headers: { authorization: `Bearer ${demo.token}`, "x-tenant-id": DEMO_TENANT } });
    expect(stored.json()).to.include({ externalId: "console-points", name: "Points by type, from the console", active: false });
    expect(await page.getByRole("button", { name: "Deactivate", exact: true }).isDisabled()).to.equal(true);
    await shot("04-saved-and-deactivated");
    await page.getByRole("button", { name: "Activate", exact: true }).click();
    await status("Definition status").getByText("console-points is active.").waitFor();
  });

  it("runs the stored calculation and charts its buckets, the gap left empty", async () => {
    await page.getByRole("button", { name: "Calculations" }).click();
    await page.getByLabel("Calculation definition", { exact: true }).locator('option[value="site-net-consumption"]').waitFor({ state: "attached" });
    expect(await page.getByLabel("Calculation definition", { exact: true }).inputValue()).to.equal("site-net-consumption");
    await page.getByRole("button", { name: "Calculate" }).click();
    await status("Calculation status").getByText("97 buckets.").waitFor();
    const figure = page.getByRole("figure");
    expect(await figure.locator("canvas").count()).to.be.at.least(1);
    expect(await figure.locator("figcaption").innerText()).to.equal("site-net-consumption: 97 points, 3 empty (gaps in the line); times in Europe/Brussels");
    // The README's picture (docs/console.png): the whole screen, the modeler and the chart uncut.
    await page.screenshot({ path: join(ARTIFACTS, "console.png"), fullPage: true });
    await page.getByRole("region", { name: "Buckets" }).getByLabel("Table").check();
    expect(await page.getByRole("region", { name: "Buckets" }).getByRole("row").count()).to.equal(98);
    expect(await unlabelledControls()).to.deep.equal([]);
    await shot("05-calculation-chart");
  });

  it("queries an item's events for a date range as buckets and as raw events", async () => {
    await page.getByRole("button", { name: "Items" }).click();
    const consumption = "S1-CONSUMPTION — S1 consumption (INGEST)";
    await page.getByLabel("Item", { exact: true }).getByRole("option", { name: consumption }).waitFor({ state: "attached" });
    await page.getByLabel("Item", { exact: true }).selectOption({ label: consumption });
    await page.getByLabel("Period").selectOption("Custom range");
    await page.getByLabel("Time zone").fill("Europe/Brussels");
    await page.getByLabel("From", { exact: true }).fill("2025-10-26T00:00:00+02:00");
    await page.getByLabel("To", { exact: true }).fill("2025-10-27T00:00:00+01:00");
    await page.getByLabel("Interval").selectOption("Hourly");
    await page.getByLabel("Metric").selectOption("count");
    await page.getByRole("button", { name: "Query events" }).click();
    // The 25-hour Sunday: 25 hourly buckets of 4 quarter hours each.
    await status("Events status").getByText("25 buckets.").waitFor();
    const rows = JSON.parse(await page.getByLabel("Events as JSON").innerText()) as { value: number }[];
    expect(rows.map((r) => r.value)).to.deep.equal(Array(25).fill(4));
    expect(await unlabelledControls()).to.deep.equal([]);
    await shot("06-item-buckets");
    await page.getByLabel("Interval").selectOption("");
    await page.getByLabel("Limit").fill("3");
    await page.getByRole("button", { name: "Query events" }).click();
    await status("Events status").getByText("3 events.").waitFor();
  });
});
