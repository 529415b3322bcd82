import { randomUUID } from "node:crypto";
import { openDatabase, type Database } from "../../src/db/database.js";

/** The real PostgreSQL the tests use; override with TEST_DATABASE_URL. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export type BackendName = "embedded" | "postgres";
export const backendNames: BackendName[] = ["embedded", "postgres"];

const opened = new Map<BackendName, Promise<Database>>();

/** One migrated database per backend, shared by the whole run; tests keep apart by tenant. */
export function backend(name: BackendName): Promise<Database> {
  let db = opened.get(name);
  if (db === undefined) {
    db = openDatabase({
      databaseUrl: name === "postgres" ? TEST_DATABASE_URL : undefined,
      dataDir: "memory://",
      poolSize: 5,
    });
    opened.set(name, db);
  }
  return db;
}

export async function closeBackends(): Promise<void> {
  const all = [...opened.values()];
  opened.clear();
  await Promise.all(all.map(async (db) => (await db).close()));
}

/** A tenant no other test uses. */
export function randomTenant(): string {
  return `test-${randomUUID()}`;
}

/**
 * Declares the same suite once per backend. Inside, `ctx.db` is that backend's database and
 * `ctx.tenant` a fresh tenant for each test.
 */
export function describeEachBackend(title: string, body: (ctx: BackendContext) => void): void {
  for (const name of backendNames) {
    describe(`${title} [${name}]`, function () {
      this.timeout(30_000);
      const ctx = { name } as BackendContext;
      before(async function () {
        // The first opening of a run migrates the database: slow on a busy machine, the tests not.
        this.timeout(120_000);
        ctx.db = await backend(name);
      });
      beforeEach(() => {
        ctx.tenant = randomTenant();
      });
      body(ctx);
    });
  }
}

export interface BackendContext {
  name: BackendName;
  db: Database;
  tenant: string;
}
