import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import { ProblemError } from "../../errors.js";
import type { App } from "../types.js";

/** Where `npm run build` puts the console (Vite's output): dist/console, beside dist/src. */
export const CONSOLE_DIR = fileURLToPath(new URL("../../../console/", import.meta.url));

/**
 * Everything the page loads comes from this server: scripts, styles and API calls. CodeMirror and
 * uPlot set inline styles on their elements, hence 'unsafe-inline' for styles only.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

/**
 * Contract §11: `GET /console` and its assets under `/console/`, public (the page holds no data;
 * every call it makes carries the token the user signs in with). A build without the console
 * (`tsc` alone) answers 404 saying how to build it.
 */
export async function consoleRoutes(app: App, dir = CONSOLE_DIR): Promise<void> {
  if (!existsSync(`${dir}/index.html`)) {
    app.get("/console", { schema: { hide: true } }, async () => {
      throw new ProblemError("INVALID_REQUEST", "the console is not built: run npm run build", { status: 404 });
    });
    return;
  }
  await app.register(fastifyStatic, {
    root: dir,
    prefix: "/console/",
    index: ["index.html"],
    // Assets carry a content hash in their name; index.html does not and is always revalidated.
    setHeaders: (res, path) => {
      res.header("content-security-policy", CONTENT_SECURITY_POLICY);
      res.header("x-content-type-options", "nosniff");
      // The page's address never leaves with a request it makes or a link followed from it.
      res.header("referrer-policy", "no-referrer");
      res.header("cache-control", path.endsWith("index.html") ? "no-cache" : "public, max-age=31536000, immutable");
    },
  });
  // The page at /console itself, as at /console/ (its assets are addressed from /console/).
  app.get(
    "/console",
    {
      schema: {
        operationId: "openConsole",
        summary: "The admin console's page (HTML; its assets under /console/; no token needed, contract §11)",
        tags: ["console"],
        response: { 200: { description: "the console's page", content: { "text/html": { schema: { type: "string" } } } } },
      },
    },
    async (_request, reply) => reply.sendFile("index.html"),
  );
}
