import { expect } from "chai";
import type { Browser, Page } from "playwright-core";
import { DEMO_TENANT } from "../../src/demo/seed.js";
import { CONSUMPTION_KEY, demoId } from "../../src/demo/series.js";
import { launchBrowser, shot, signIn, unlabelledControls } from "../support/browser.js";
import { demoServer, type DemoServer } from "../support/demo.js";

/**
 * The Items screen in a real browser: every gap strategy and algorithm, filled buckets drawn apart
 * from measured ones, raw-event lines broken at gaps, times in the request's zone, events entered,
 * changed and deleted by hand through the events API, and the live view of the WebSocket stream.
 */
describe("items and events in a browser", function () {
  this.timeout(120_000);
  let demo: DemoServer;
  let browser: Browser;
  let page: Page;
  const consumption = "S1-CONSUMPTION — S1 consumption (INGEST)";
  const itemId = () => demoId(DEMO_TENANT, "Item", CONSUMPTION_KEY);

  before(async () => {
    demo = await demoServer();
    const base = await demo.server.app.listen({ port: 0, host: "127.0.0.1" });
    ({ browser, page } = await launchBrowser());
    await signIn(page, base, demo.token, DEMO_TENANT);
    await page.getByRole("button", { name: "Items" }).click();
    await page.getByLabel("Item", { exact: true }).getByRole("option", { name: consumption }).waitFor({ state: "attached" });
  });
  after(async () => {
    await browser?.close();
    await demo?.close();
  });

  const status = (name: string) => page.getByRole("status", { name });
  const caption = () => page.getByRole("figure").filter({ has: page.locator("figcaption") }).locator("figcaption").innerText();
  async function customRange(from: string, to: string): Promise<void> {
    await page.getByLabel("Period", { exact: true }).selectOption("Custom range");
    await page.getByLabel("From", { exact: true }).fill(from);
    await page.getByLabel("To", { exact: true }).fill(to);
    await page.getByLabel("Time zone", { exact: true }).fill("Europe/Brussels");
  }
  const query = async (said: string | RegExp) => {
    await page.getByRole("button", { name: "Query events" }).click();
    await status("Events status").getByText(said).waitFor();
  };
  const api = (method: "POST" | "GET", url: string, payload?: unknown) =>
    demo.server.app.inject({ method, url, payload: payload as object, headers: { authorization: `Bearer ${demo.token}`, "x-tenant-id": DEMO_TENANT } });

  it("opens on Last week, offers every gap strategy and interpolation algorithm, and draws filled buckets apart", async () => {
    expect(await page.getByLabel("Period", { exact: true }).inputValue()).to.equal("Last week");
    expect(await page.getByLabel("From", { exact: true }).isDisabled()).to.equal(true);
    expect(await page.getByLabel("Gap strategy", { exact: true }).locator("option").allInnerTexts()).to.deep.equal(["none", "push", "pull", "meet", "interpolate"]);
    await page.getByLabel("Gap strategy", { exact: true }).selectOption("interpolate");
    expect(await page.getByLabel("Algorithm", { exact: true }).locator("option").allInnerTexts()).to.deep.equal(["linear", "spline", "akimaSpline", "loess", "neville", "dividedDifference"]);
    await page.getByLabel("Item", { exact: true }).selectOption({ label: consumption });
    await customRange("2025-10-25T00:00:00+02:00", "2025-10-26T00:00:00+02:00");
    await page.getByLabel("Interval", { exact: true }).selectOption("Hourly");
    await page.getByLabel("Algorithm", { exact: true }).selectOption("spline");
    await query("24 buckets.");
    // The meter's 3-hour hole (10:00–13:00 Brussels) is filled, and drawn as filled.
    expect(await caption()).to.include("0 empty (gaps in the line), 3 filled by the gap strategy (dashed); times in Europe/Brussels");
    const rows = JSON.parse(await page.getByLabel("Events as JSON").innerText()) as { timestamp: string; value: number }[];
    expect(rows.filter((r) => r.value === null)).to.have.length(0);
    // Values are rounded in the table, never in the JSON.
    await page.getByRole("region", { name: "Events" }).getByLabel("Table").check();
    const cells = await page.getByRole("region", { name: "Events" }).getByRole("cell").allInnerTexts();
    for (const cell of cells.filter((c) => /^-?\d/.test(c) && !c.includes("T"))) expect(cell.replace(/^-/, "").replace(".", "").length, cell).to.be.at.most(11);
    await page.getByRole("region", { name: "Events" }).getByLabel("JSON").check();
    await shot(page, "20-items-filled-buckets");

    await page.getByLabel("Gap strategy", { exact: true }).selectOption("meet");
    await page.getByLabel("Meet at", { exact: true }).fill("0");
    await query("24 buckets.");
    expect(await caption()).to.include("3 filled by the gap strategy");
    expect(await unlabelledControls(page)).to.deep.equal([]);
  });

  it("draws times in the request's zone, ISO-like and 24-hour, and breaks raw-event lines at the hole", async () => {
    await page.getByLabel("Gap strategy", { exact: true }).selectOption("");
    await page.getByLabel("Interval", { exact: true }).selectOption("");
    await query("96 events.".replace("96", "84"));
    expect(await caption()).to.match(/84 points, 0 empty \(gaps in the line\), 1 break\(s\) where events are further apart than usual; times in Europe\/Brussels/);
    // The legend names the time under the pointer, in the zone: ISO-like, 24-hour.
    const over = (await page.locator(".u-over").first().boundingBox())!;
    await page.mouse.move(over.x + over.width * 0.9, over.y + over.height / 2);
    const time = await page.locator(".u-legend .u-series").first().locator(".u-value").innerText();
    expect(time).to.match(/^2025-10-25 (1[3-9]|2[0-3]):[0-5]\d:00$/);
    await shot(page, "21-items-raw-broken");
  });

  it("enters events by hand in the chosen zone, changes a value and deletes an event and a range, the chart refreshed at once", async () => {
    await customRange("2025-10-30T00:00:00+01:00", "2025-10-31T00:00:00+01:00");
    await query("0 events.");
    await page.getByLabel("Timestamp of row 1").fill("2025-10-30T08:00:00");
    await page.getByLabel("Value of row 1").fill("1.5");
    await page.getByLabel("Source of row 1").fill("by-hand");
    await page.getByLabel("Tags of row 1 (comma-separated)").fill("manual, check");
    await page.getByRole("button", { name: "Add row" }).click();
    await page.getByLabel("Timestamp of row 2").fill("2025-10-30T09:00:00");
    await page.getByLabel("Value of row 2").fill("2.5");
    await page.getByRole("button", { name: "Store events" }).click();
    await status("Event entry status").getByText("Stored 2 event(s).").waitFor();
    await status("Events status").getByText("2 events.").waitFor();
    const stored = JSON.parse(await page.getByLabel("Events as JSON").innerText()) as { timestamp: string; value: number; sourceId?: string; tags?: string[] }[];
    // 08:00 in Brussels (CET after the clocks went back) is 07:00 UTC.
    expect(stored.map((e) => [e.timestamp, e.value])).to.deep.equal([
      ["2025-10-30T07:00:00.000Z", 1.5],
      ["2025-10-30T08:00:00.000Z", 2.5],
    ]);
    expect(stored[0]).to.deep.include({ sourceId: "by-hand", tags: ["manual", "check"] });
    expect(await unlabelledControls(page)).to.deep.equal([]);
    await shot(page, "22-events-by-hand");

    // The API's own checks: a value that is not a number is its 400.
    await page.getByLabel("Timestamp of row 3").fill("2025-10-30T10:00:00");
    await page.getByRole("button", { name: "Store events" }).click();
    await status("Event entry status").getByText(/400 INVALID_REQUEST/).waitFor();
    await page.getByRole("button", { name: "Remove row 3" }).click();

    await page.getByLabel("Value at 2025-10-30 08:00:00.000").fill("7.25");
    await page.getByRole("button", { name: "Save value at 2025-10-30 08:00:00.000" }).click();
    await status("Event entry status").getByText("Changed the value at 2025-10-30 08:00:00.000.").waitFor();
    const changed = JSON.parse(await page.getByLabel("Events as JSON").innerText()) as { value: number; sourceId?: string; tags?: string[] }[];
    expect(changed[0]).to.deep.include({ value: 7.25, sourceId: "by-hand", tags: ["manual", "check"] });
    expect(changed).to.have.length(2);

    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("button", { name: "Delete event at 2025-10-30 09:00:00.000" }).click();
    await status("Events status").getByText("1 events.").waitFor();
    await page.getByLabel("Delete from", { exact: true }).fill("2025-10-30T00:00:00");
    await page.getByLabel("Delete to", { exact: true }).fill("2025-10-31T00:00:00");
    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("button", { name: "Delete events in range" }).click();
    await status("Event entry status").getByText("Deleted 1 event(s).").waitFor();
    await status("Events status").getByText("0 events.").waitFor();
  });

  it("appends the events pushed on the item's WebSocket stream to the live chart as they arrive", async () => {
    await page.getByRole("button", { name: "Start live view" }).click();
    await status("Live view status").getByText("Live: waiting for events.").waitFor();
    for (const [i, value] of [3, 4.5].entries()) {
      const res = await api("POST", `/items/${itemId()}/events`, { events: [{ timestamp: `2025-11-01T10:0${i}:00Z`, value }] });
      expect(res.statusCode, res.body).to.equal(200);
      await status("Live view status").getByText(`Live: ${i + 1} point(s) received, the last ${value} at 2025-11-01T10:0${i}:00`).waitFor();
    }
    await shot(page, "23-live-view");
    await page.getByRole("button", { name: "Stop live view" }).click();
    await status("Live view status").getByText("Live view stopped.").waitFor();
  });
});
