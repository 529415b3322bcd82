import { expect } from "chai";
import { demoConsole, setEditor, shot, unlabelledControls, type DemoConsole } from "../support/browser.js";
import { DEMO_TENANT } from "../../src/demo/seed.js";

/**
 * The Calculations screen in a real browser: Calculate runs the editor's unsaved text through
 * POST /calculation-definitions/test, and the visual modeler edits the same definition as a graph.
 */
describe("calculation modeler in a browser", function () {
  this.timeout(120_000);
  const ctx = demoConsole();
  let page: DemoConsole["page"];

  before(async () => {
    page = ctx.page;
    await page.getByRole("button", { name: "Calculations" }).click();
    await page.getByLabel("Calculation definition", { exact: true }).locator('option[value="site-net-consumption"]').waitFor({ state: "attached" });
  });

  const status = () => page.getByRole("status", { name: "Calculation status" });
  const node = (name: string | RegExp) => page.getByRole("button", { name });
  const definitionJson = async () => JSON.parse(await page.getByRole("textbox", { name: "Calculation definition (JSON)", exact: true }).innerText()) as {
    calculationType: string;
    data: { calculation: { expression?: string; output?: string; steps?: { name: string; expression: string }[]; scope: Record<string, { value?: number }> } };
  };
  const stored = async () => {
    const res = await ctx.demo.server.app.inject({ method: "GET", url: "/calculation-definitions/site-net-consumption", headers: { authorization: `Bearer ${ctx.demo.token}`, "x-tenant-id": DEMO_TENANT } });
    return res.json() as { data: { calculation: { expression: string } } };
  };

  it("Calculate runs the editor's unsaved text: an unknown name is a problem on its node, a changed expression is what is charted", async () => {
    const text = JSON.stringify((await stored()) as object);
    const edited = JSON.parse(text) as { data: { calculation: { expression: string } } } & Record<string, unknown>;
    for (const key of ["id", "createdAt", "updatedAt"]) delete edited[key];
    edited.data.calculation.expression = "(a - b) * g";
    await setEditor(page, "Calculation definition (JSON)", JSON.stringify(edited, null, 2));
    await page.getByRole("button", { name: "Calculate" }).click();
    await status().getByText("The definition has problems").waitFor();
    expect(await status().innerText()).to.match(/data\.calculation\.expression.*\bg\b/s);
    // The problem is drawn on the expression's node, and named in its accessible name.
    const expression = node(/^Step expression: \(a - b\) \* g/);
    expect(await expression.getAttribute("class")).to.include("has-problem");
    expect(await expression.getAttribute("aria-label")).to.match(/1 problem\(s\):.*\bg\b/);
    await shot(page, "10-modeler-problem");

    edited.data.calculation.expression = "(a - b) * 2";
    await setEditor(page, "Calculation definition (JSON)", JSON.stringify(edited, null, 2));
    await page.getByRole("button", { name: "Calculate" }).click();
    await status().getByText("97 buckets.").waitFor();
    expect(await node(/^Step expression/).getAttribute("class")).to.not.include("has-problem");
    // Nothing was saved.
    expect((await stored()).data.calculation.expression).to.equal("(a - b) * f");
  });

  it("draws inputs, the expression and the output as a graph laid out left to right, with an edge per reference", async () => {
    await setEditor(page, "Calculation definition (JSON)", JSON.stringify({ ...(await definitionJson()), data: { ...(await definitionJson()).data, calculation: { ...(await definitionJson()).data.calculation, expression: "(a - b) * f" } } }, null, 2));
    const graph = page.getByRole("group", { name: "Calculation graph" });
    await node(/^Step expression: \(a - b\) \* f/).waitFor();
    expect(await graph.getByRole("button").count()).to.equal(5);
    expect(await graph.locator("path.model-edge").count()).to.equal(4);
    expect(await node(/^Step expression/).getAttribute("aria-label")).to.include("reads a, b, f");
    const x = async (name: RegExp) => (await node(name).boundingBox())!.x;
    expect(await x(/^Input a:/)).to.be.below(await x(/^Step expression/));
    expect(await x(/^Step expression/)).to.be.below(await x(/^Output/));
    expect(await unlabelledControls(page)).to.deep.equal([]);
  });

  it("edits a node from the keyboard, and the JSON follows; steps are added, connected and run unsaved", async () => {
    // Tab to the input f and open it with Enter.
    await node(/^Input a:/).focus();
    for (let i = 0; i < 5 && !(await node(/^Input f:/).evaluate((el) => el === (el.ownerDocument.activeElement as unknown))); i++) await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    const panel = page.getByRole("region", { name: "Selected node" });
    await panel.getByLabel("Value (number)").fill("3");
    await panel.getByRole("button", { name: "Apply" }).click();
    expect((await definitionJson()).data.calculation.scope.f!.value).to.equal(3);
    expect(await node(/^Input f: VALUE = 3/).count()).to.equal(1);

    // To steps: the expression becomes the step "result"; a second step reads it and f.
    await page.getByRole("button", { name: "Use steps (CALCULATION)" }).click();
    expect((await definitionJson()).calculationType).to.equal("CALCULATION");
    await page.getByRole("button", { name: "Add step" }).click();
    await panel.getByLabel("Name").fill("quarter");
    await panel.getByLabel("Expression").fill("result / 4");
    await panel.getByRole("button", { name: "Apply" }).click();
    await node(/^Output output/).click();
    await panel.getByLabel("Output step").selectOption("quarter");
    await panel.getByRole("button", { name: "Apply" }).click();
    // Connect f to quarter: from f's panel, then the target node by keyboard.
    await node(/^Input f:/).click();
    await panel.getByRole("button", { name: "Connect f to…" }).click();
    await node(/^Step quarter/).focus();
    await page.keyboard.press("Enter");
    await page.getByRole("status", { name: "Modeler status" }).getByText("Connected f to quarter.").waitFor();
    const json = await definitionJson();
    expect(json.data.calculation.steps).to.deep.equal([
      { name: "result", expression: "(a - b) * f" },
      { name: "quarter", expression: "result / 4 + f" },
    ]);
    expect(json.data.calculation.output).to.equal("quarter");
    expect(await node(/^Output output: quarter/).count()).to.equal(1);

    await page.getByRole("button", { name: "Run model" }).click();
    await status().getByText("97 buckets.").waitFor();
    expect(await unlabelledControls(page)).to.deep.equal([]);
    await shot(page, "11-modeler-run");

    // A problem in a step is drawn on that step.
    await node(/^Step quarter/).click();
    await panel.getByLabel("Expression").fill("result / zz");
    await panel.getByRole("button", { name: "Apply" }).click();
    await page.getByRole("button", { name: "Run model" }).click();
    await status().getByText("The definition has problems").waitFor();
    expect(await node(/^Step quarter/).getAttribute("class")).to.include("has-problem");
    expect(await panel.getByRole("list", { name: "Problems of this node" }).innerText()).to.match(/zz/);
    expect(await node(/^Step result/).getAttribute("class")).to.not.include("has-problem");
  });

  it("keeps the graph on the last valid definition while the JSON does not parse, and renames everywhere", async () => {
    const before = await definitionJson();
    await setEditor(page, "Calculation definition (JSON)", "{ not json");
    await page.getByRole("status", { name: "Modeler status" }).getByText(/not a definition/).waitFor();
    expect(await node(/^Step quarter/).count()).to.equal(1);
    await setEditor(page, "Calculation definition (JSON)", JSON.stringify(before, null, 2));
    await node(/^Step result/).click();
    const panel = page.getByRole("region", { name: "Selected node" });
    await panel.getByLabel("Name").fill("net");
    await panel.getByRole("button", { name: "Apply" }).click();
    expect((await definitionJson()).data.calculation.steps!.map((s) => s.expression)).to.deep.equal(["(a - b) * f", "net / zz"]);
    await panel.getByRole("button", { name: "Delete net" }).click();
    expect((await definitionJson()).data.calculation.steps!.map((s) => s.name)).to.deep.equal(["quarter"]);
  });
});
