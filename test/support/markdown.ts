import { existsSync, readdirSync } from "node:fs";
import { dirname, join, posix, relative, sep } from "node:path";
import { REPOSITORY } from "./tiers.js";

/** The longest line allowed outside a code block of the documentation (issue 26). */
export const MAX_LINE = 200;

/** The documentation's markdown files, as paths from the root: README.md, every file under docs/, bench/RESULTS.md. */
export function documentationFiles(root = REPOSITORY): string[] {
  const docs = readdirSync(join(root, "docs"), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".md"))
    .map((file) => relative(root, join(root, "docs", file)).split(sep).join("/"))
    .sort();
  return ["README.md", ...docs, ...(existsSync(join(root, "bench/RESULTS.md")) ? ["bench/RESULTS.md"] : [])];
}

/** The lines of a markdown text outside fenced code blocks, with their numbers (from 1). */
export function proseLines(text: string): { line: number; text: string }[] {
  const lines: { line: number; text: string }[] = [];
  let fence: string | undefined;
  text.split("\n").forEach((line, i) => {
    const opening = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && opening !== undefined) fence = opening;
    else if (fence !== undefined && line.trim().startsWith(fence) && line.trim().replace(/[`~]/g, "") === "") fence = undefined;
    else if (fence === undefined) lines.push({ line: i + 1, text: line });
  });
  return lines;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens; repeats get -1, -2 … */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text: line } of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const plain = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/[`*_]/g, "");
    const slug = plain
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/**
 * What is wrong in one markdown file: a line longer than MAX_LINE outside code blocks, and a relative
 * link whose file does not exist or whose `#anchor` names no heading of that file. `read` gives the
 * text of another file of the repository (undefined when it does not exist).
 */
export function markdownProblems(file: string, text: string, read: (path: string) => string | undefined): string[] {
  const problems: string[] = [];
  for (const { line, text: content } of proseLines(text)) {
    if (content.length > MAX_LINE) problems.push(`${file}:${line} is ${content.length} characters long (at most ${MAX_LINE} outside code blocks)`);
    const withoutCode = content.replace(/`[^`]*`/g, "");
    for (const [, target] of withoutCode.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (target === undefined || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      const [path, anchor] = target.split("#") as [string, string | undefined];
      const linked = path === "" ? file : posix.normalize(posix.join(dirname(file), path));
      const linkedText = path === "" ? text : read(linked);
      if (linkedText === undefined) {
        problems.push(`${file}:${line} links to ${target}: ${linked} does not exist`);
        continue;
      }
      if (anchor !== undefined && anchor !== "" && linked.endsWith(".md") && !headingAnchors(linkedText).has(anchor)) {
        problems.push(`${file}:${line} links to ${target}: ${linked} has no heading #${anchor}`);
      }
    }
  }
  return problems;
}
