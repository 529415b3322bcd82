// mocha's configuration. `npm test` runs every compiled test file once, in one mocha run; `npm run
// test:unit`, `test:db` and `test:e2e` set TEST_TIER to run one tier's files, listed in
// test/tiers.json (test/tiers.test.ts, in the unit tier, fails when a test file is in no tier or in two).
/* global require, process, module */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- mocha loads its configuration with require
const tiers = require("./test/tiers.json");

const tier = process.env.TEST_TIER;
if (tier !== undefined && tier !== "" && !Object.hasOwn(tiers, tier)) {
  throw new Error(`TEST_TIER=${tier}: not one of ${Object.keys(tiers).join(", ")}`);
}

module.exports = {
  spec: tier ? tiers[tier].map((file) => `dist/${file.replace(/\.ts$/, ".js")}`) : ["dist/test/**/*.test.js"],
  reporter: "dist/test/support/reporter.js",
  timeout: 20000,
  exit: true,
  "enable-source-maps": true,
  require: ["dist/test/support/hooks.js"],
};
