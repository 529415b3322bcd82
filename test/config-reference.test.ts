import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { loadConfig, SETTING_GROUPS, type Role } from "../src/config.js";
import { configurationReference, overlongLines, REFERENCE_PATH } from "../src/config/reference.js";
import { REPOSITORY } from "./support/tiers.js";

/** The variables `loadConfig` asks of an environment holding `given`. */
function variablesRead(given: Record<string, string>, role: Role): Set<string> {
  const read = new Set<string>();
  const env = new Proxy(given, {
    get(target, name) {
      if (typeof name === "string") read.add(name);
      return Reflect.get(target, name) as unknown;
    },
  });
  try {
    loadConfig(env, role);
  } catch {
    // Only the names asked matter here.
  }
  return read;
}

describe("configuration reference (docs/reference/configuration.md)", () => {
  it("is the one the declarations of the settings generate", () => {
    const committed = readFileSync(join(REPOSITORY, REFERENCE_PATH), "utf8");
    expect(committed, `${REFERENCE_PATH} differs from the declarations in src/config/: run \`npm run docs:config\` and commit it`).to.equal(configurationReference());
  });

  it("has no line of prose longer than 200 characters", () => {
    expect(overlongLines(configurationReference())).to.deep.equal([]);
    expect(overlongLines(["short", "x".repeat(201), "```", "y".repeat(300), "```"].join("\n"))).to.deep.equal(["line 2: 201 characters"]);
  });

  it("declares each variable once, and every variable the configuration reads is declared", () => {
    const settings = SETTING_GROUPS.flatMap((group) => Object.values(group.settings));
    const names = settings.map((s) => s.env);
    expect(names.filter((name, i) => names.indexOf(name) !== i)).to.deep.equal([]);
    const declared = new Set([...names, ...settings.flatMap((s) => (s.aliases ?? []).map((alias) => alias.env))]);
    const engines = { JWT_SECRET: "a-secret-of-at-least-thirty-two-bytes!!", CAMUNDA_URL: "http://localhost:8080/engine-rest", ZEEBE_ADDRESS: "localhost:26500" };
    const read = new Set([...variablesRead({}, "server"), ...variablesRead(engines, "server"), ...variablesRead(engines, "worker")]);
    expect([...read].filter((name) => !declared.has(name)), "read but not declared").to.deep.equal([]);
    expect([...declared].filter((name) => !read.has(name)), "declared but not read").to.deep.equal([]);
  });
});
