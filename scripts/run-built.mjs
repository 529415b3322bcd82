// `npm start`, `npm run worker`, `npm run demo`: run an entry point of the built tree (dist/), never
// build. Plain JavaScript, so that it runs before anything is compiled: when the entry is missing it
// says so in one line, naming `npm run build`, and exits 1. The entry runs in this same process
// (no child, so SIGTERM and SIGINT reach the service's own handlers).
import { existsSync } from "node:fs";
import { relative } from "node:path";
import process from "node:process";
import { URL, fileURLToPath, pathToFileURL } from "node:url";

const name = process.argv[2];
if (name === undefined || !/^src\/[a-z-]+\.js$/.test(name)) {
  process.stderr.write("usage: node scripts/run-built.mjs src/<entry>.js\n");
  process.exit(2);
}
const entry = fileURLToPath(new URL(`../dist/${name}`, import.meta.url));
if (!existsSync(entry)) {
  process.stderr.write(`${relative(process.cwd(), entry) || entry} is missing: run \`npm run build\` first (start, worker and demo run the built dist/ only).\n`);
  process.exit(1);
}
process.argv.splice(1, 2, entry);
await import(pathToFileURL(entry).href);
