import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { expect } from "chai";
import { DRIVER_INTERNALS } from "../../src/db/driver-patches.js";
import { REPOSITORY } from "../support/tiers.js";

/** The packages whose private members src/db/driver-patches.ts uses: pinned, so a new version is taken on purpose. */
const PATCHED_PACKAGES = ["knex", "pg", "knex-pglite"];

/**
 * src/db/driver-patches.ts relies on private members of knex, pg and knex-pglite. When a new
 * version of one of them changes such a member, this test names it, before anything fails in a
 * less telling way (a connection kept after a lost answer, prepared statements without bound).
 */
describe("driver internals the service patches", () => {
  for (const internal of DRIVER_INTERNALS) {
    it(`still has ${internal.member}`, async () => {
      expect(await internal.holds(), `${internal.member} changed or is gone; src/db/driver-patches.ts relies on it (${internal.use})`).to.equal(true);
    });
  }

  it("pins knex, pg and knex-pglite exactly, to the versions installed", () => {
    const manifest = JSON.parse(readFileSync(join(REPOSITORY, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    const requireHere = createRequire(join(REPOSITORY, "package.json"));
    const pins = PATCHED_PACKAGES.map((name) => ({ name, range: manifest.dependencies[name], installed: (requireHere(`${name}/package.json`) as { version: string }).version }));
    expect(pins.filter((pin) => pin.range !== pin.installed)).to.deep.equal([]);
  });
});
