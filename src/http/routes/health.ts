import { Type } from "typebox";
import { ProblemError } from "../../errors.js";
import type { App, ServerDeps } from "../server.js";

export function healthRoutes(app: App, { db }: ServerDeps): void {
  app.get(
    "/health",
    {
      schema: {
        summary: "Liveness and database check",
        tags: ["operations"],
        response: {
          200: Type.Object({
            status: Type.Literal("ok"),
            database: Type.Object({ kind: Type.String(), status: Type.Literal("ok") }),
          }),
        },
      },
    },
    async () => {
      try {
        await db.ping();
      } catch (err) {
        throw new ProblemError("UNAVAILABLE", "the database does not answer", { cause: err });
      }
      return { status: "ok" as const, database: { kind: db.kind, status: "ok" as const } };
    },
  );
}
