// Writes docs/reference/configuration.md from the declarations of the settings (src/config/):
// `npm run docs:config`. test/config-reference.test.ts fails when the committed file differs.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { configurationReference, overlongLines, REFERENCE_PATH } from "../src/config/reference.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const markdown = configurationReference();
const overlong = overlongLines(markdown);
if (overlong.length > 0) {
  process.stderr.write(`${REFERENCE_PATH}: lines too long (shorten the doc or move it to notes):\n  ${overlong.join("\n  ")}\n`);
  process.exit(1);
}
const file = join(root, REFERENCE_PATH);
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, markdown);
process.stdout.write(`wrote ${REFERENCE_PATH}\n`);
