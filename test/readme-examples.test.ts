import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { demoServer, type DemoServer } from "./support/demo.js";
import { documentationFiles } from "./support/markdown.js";
import { REPOSITORY } from "./support/tiers.js";

/** A request of the documentation as curl writes it, and the answer shown under it (`# …` lines), if any. */
interface ReadmeExample {
  line: number;
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  shown?: string;
}

const DEMO_BASE = "http://localhost:3000";

/**
 * The curl commands of a markdown file (README.md, docs/) that go to the demo (`http://localhost:3000`),
 * in order. A command goes on while a line ends with `\` or a quote is open; the `#` lines right after it
 * are its answer.
 */
export function readmeExamples(readme: string): ReadmeExample[] {
  const lines = readme.split("\n");
  const examples: ReadmeExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^curl\s/.test(lines[i]!)) continue;
    const start = i;
    let text = lines[i]!;
    while (i + 1 < lines.length && (text.endsWith("\\") || openQuote(text) !== undefined)) text += `\n${lines[++i]}`;
    const shown: string[] = [];
    while (i + 1 < lines.length && (shown.length === 0 ? /^#\s+[[{]/ : /^#\s+/).test(lines[i + 1]!)) {
      shown.push(lines[++i]!.replace(/^#\s+/, ""));
    }
    const example = curlRequest(shellWords(text), start + 1);
    if (example !== undefined && example.url.startsWith(DEMO_BASE)) examples.push({ ...example, shown: shown.length > 0 ? shown.join("") : undefined });
  }
  return examples;
}

function openQuote(text: string): string | undefined {
  let quote: string | undefined;
  for (const c of text) {
    if (quote === undefined && (c === "'" || c === '"')) quote = c;
    else if (c === quote) quote = undefined;
  }
  return quote;
}

/** Splits a shell command into words: single quotes literal, double quotes with `$TOKEN` kept as written, `\` + newline dropped. */
function shellWords(text: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      word = (word ?? "") + text.slice(i + 1, end);
      i = end;
    } else if (c === "\\" && text[i + 1] === "\n") {
      i++;
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? "") + c;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

function curlRequest(words: string[], line: number): Omit<ReadmeExample, "shown"> | undefined {
  const request = { line, method: "GET", url: "", headers: {} as Record<string, string>, body: undefined as string | undefined };
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    if (word === "-X") request.method = words[++i]!;
    else if (word === "-H") {
      const [name, ...value] = words[++i]!.split(":");
      request.headers[name!.trim().toLowerCase()] = value.join(":").trim();
    } else if (word === "-d" || word === "--data-binary") {
      request.body = words[++i];
      if (request.method === "GET") request.method = "POST";
    } else if (word === "-o") i++;
    else if (word === "-s") continue;
    else if (word.startsWith("-")) return undefined; // a form upload or another tool's flags: not a demo request
    else request.url = word;
  }
  return request;
}

/** The answer as shown: `"…"` stands for any value; everything else must be exactly as shown. */
function expectAsShown(actual: unknown, shown: unknown, path = "$"): void {
  if (shown === "…") return;
  if (Array.isArray(shown)) {
    expect(actual, path).to.be.an("array").with.lengthOf(shown.length);
    shown.forEach((s, i) => expectAsShown((actual as unknown[])[i], s, `${path}[${i}]`));
  } else if (shown !== null && typeof shown === "object") {
    expect(actual, path).to.be.an("object");
    expect(Object.keys(actual as object), path).to.have.members(Object.keys(shown));
    for (const [key, value] of Object.entries(shown)) expectAsShown((actual as Record<string, unknown>)[key], value, `${path}.${key}`);
  } else {
    expect(actual, path).to.equal(shown);
  }
}

/** Each markdown file of the documentation with the demo requests it holds, in the files' order. */
const documented = documentationFiles()
  .map((file) => ({ file, examples: readmeExamples(readFileSync(join(REPOSITORY, file), "utf8")) }))
  .filter(({ examples }) => examples.length > 0);

describe("README examples on the demo data", function () {
  this.timeout(60_000);
  const examples = documented.flatMap(({ examples }) => examples);

  it("finds the README's demo requests, each answer shown", () => {
    expect(documented.map(({ file }) => file)).to.include("README.md");
    expect(examples.length).to.be.at.least(10);
    expect(examples.filter((e) => e.shown !== undefined).length).to.be.at.least(9);
    const kinds = examples.map((e) => `${e.method} ${new URL(e.url).pathname.replace(/[0-9a-f-]{36}/, "{id}")}`);
    expect(kinds).to.include.members([
      "POST /task-backend/tasks/demo/api/request",
      "POST /items/{id}/events",
      "POST /items/{id}/events/query",
      "POST /calculation-definitions/site-net-consumption/calculate",
    ]);
  });

  // Each file is read on a demo of its own, as a reader who starts the demo and follows that page.
  for (const { file, examples: ofFile } of documented) {
    describe(file, () => {
      let demo: DemoServer;

      before(async () => {
        demo = await demoServer();
      });
      after(() => demo.close());

      it("answers every one of them, in the file's order, as shown", async () => {
        for (const example of ofFile) {
          const headers = { ...example.headers };
          if (headers.authorization !== undefined) headers.authorization = headers.authorization.replace("$TOKEN", demo.token);
          const res = await demo.server.app.inject({ method: example.method as "GET", url: example.url.slice(DEMO_BASE.length), headers, payload: example.body });
          expect(res.statusCode, `${file} line ${example.line}: ${res.body}`).to.be.within(200, 299);
          if (example.shown !== undefined) {
            const shown: unknown = JSON.parse(example.shown);
            expectAsShown(res.json(), shown, `${file} line ${example.line}`);
          }
        }
      });
    });
  }
});
