import { expect } from "chai";
import { demoConsole, setEditor, shot, unlabelledControls, type DemoConsole } from "../support/browser.js";

/**
 * The query and transform editors in a real browser (test/support/browser.ts) against the demo:
 * highlighting of the graph query language and JSONata, and completion from `GET /graph/schema`.
 */
interface TokenElement {
  className: string;
  textContent: string | null;
}

describe("console editors: highlighting and completion in a browser", function () {
  this.timeout(120_000);
  const ctx = demoConsole();
  let page: DemoConsole["page"];
  before(async () => {
    page = ctx.page;
    await page.getByLabel("API definition", { exact: true }).locator('option[value="agreement-access-points"]').waitFor({ state: "attached" });
  });

  /** The class of each highlighted token in an editor, by its text. */
  const tokens = async (label: string): Promise<Map<string, string>> => {
    const spans = await page
      .getByRole("textbox", { name: label, exact: true })
      .locator("span[class*='tok-']")
      .evaluateAll((els) => (els as unknown as TokenElement[]).map((el) => [el.textContent ?? "", el.className] as const));
    return new Map(spans);
  };
  /** Checks the highlighting class of each token, by its text; answers the classes of all. */
  const expectKinds = async (label: string, expected: [string, string][]): Promise<Map<string, string>> => {
    const kinds = await tokens(label);
    for (const [text, kind] of expected) expect(kinds.get(text), text).to.include(kind);
    return kinds;
  };
  /** Whether each of these tokens has a colour class of the theme (not tok-), each a different one. */
  const drawnApart = (kinds: Map<string, string>, texts: string[]): boolean => {
    const themed = texts.map((t) => (kinds.get(t) ?? "").split(" ").filter((c) => c !== "" && !c.startsWith("tok-")).join(" "));
    return themed.every((c) => c !== "") && new Set(themed).size === texts.length;
  };
  const completions = async () => {
    const list = page.getByRole("listbox");
    await list.waitFor();
    return list.locator(".cm-completionLabel").allInnerTexts();
  };

  it("highlights the query's keywords, types, labels, parameters, strings, numbers and comments, each its own way", async () => {
    await setEditor(page, "Query", '# one agreement\nAgreement ?agreement; attribute:publicId ${publicId}; attribute:status "ACTIVE";\n  attribute:n 3; link:hasProduct AgreementProduct:?p.');
    const kinds = await expectKinds("Query", [
      ["# one agreement", "tok-comment"],
      ["Agreement", "tok-typeName"],
      ["?agreement", "tok-labelName"],
      ["attribute", "tok-keyword"],
      ["publicId", "tok-propertyName"],
      ["${publicId}", "tok-variableName2"],
      ['"ACTIVE"', "tok-string"],
      ["3", "tok-number"],
      ["link", "tok-keyword"],
      ["hasProduct", "tok-propertyName"],
      ["AgreementProduct", "tok-typeName"],
      ["?p", "tok-labelName"],
    ]);
    // The theme draws them apart: besides the tok- classes, keyword, label and string carry different colour classes.
    expect(drawnApart(kinds, ["attribute", "?agreement", '"ACTIVE"'])).to.equal(true);
    await shot(page, "20-query-highlighting");
  });

  it("completes entity types, attribute names, relations and parameters from the tenant's graph", async () => {
    await setEditor(page, "Query", "Agreement ?a.\nAccessP");
    await page.keyboard.press("Control+Space");
    expect(await completions()).to.include.members(["AccessPoint", "AccessPointRelation"]);
    // CodeMirror ignores a key on a list opened less than its interactionDelay (75 ms) ago.
    await page.waitForTimeout(200);
    await page.keyboard.press("Enter");
    expect(await page.getByRole("textbox", { name: "Query", exact: true }).innerText()).to.match(/\nAccessPoint(Relation)?$/);

    await setEditor(page, "Query", "AccessPoint ?ap; attribute:");
    await page.keyboard.press("Control+Space");
    expect(await completions()).to.have.members(["accessPointType", "externalId", "publicId"]);
    await page.keyboard.press("Escape");

    await setEditor(page, "Query", "Tenant ?t; link:");
    await page.keyboard.press("Control+Space");
    expect(await completions()).to.deep.equal(["hasIndexSet"]);
    await page.keyboard.press("Escape");

    await setEditor(page, "Query", "Agreement ?a; attribute:publicId ${");
    await page.keyboard.press("Control+Space");
    expect(await completions()).to.include.members(["publicId", "tenantId"]);
    await shot(page, "21-query-completion");
    await page.keyboard.press("Escape");
    expect(await unlabelledControls(page)).to.deep.equal([]);
  });

  it("highlights JSONata with the result(?label) extension", async () => {
    await page.getByRole("tab", { name: "Transform" }).click();
    await setEditor(page, "Transform", '/* points */ { "points": result(?accessPoint) { externalId, `odd name`: publicId }, "n": $count($x) + 1.5, "p": ${kind} }');
    const kinds = await expectKinds("Transform", [
      ["/* points */", "tok-comment"],
      ['"points"', "tok-string"],
      ["result", "tok-keyword"],
      ["?accessPoint", "tok-labelName"],
      ["externalId", "tok-propertyName"],
      ["`odd name`", "tok-propertyName"],
      ["$count", "tok-variableName"],
      ["$x", "tok-variableName"],
      ["1.5", "tok-number"],
      ["+", "tok-operator"],
      ["${kind}", "tok-variableName2"],
    ]);
    expect(drawnApart(kinds, ["result", "?accessPoint", '"points"'])).to.equal(true);
    await shot(page, "22-transform-highlighting");
  });
});
