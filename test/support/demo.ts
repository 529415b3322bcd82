import { openDatabase, type Database } from "../../src/db/database.js";
import { DEMO_TENANT, seedDemo, type DemoSeeded } from "../../src/demo/seed.js";
import { testServer, type TestServer } from "./server.js";
import { hsToken } from "./tokens.js";

export interface DemoServer {
  db: Database;
  server: TestServer;
  seeded: DemoSeeded;
  /** An admin token of the tenant `demo`, as `npm run demo` prints one. */
  token: string;
  close(): Promise<void>;
}

/**
 * What `npm run demo` serves, on a database of its own (embedded, in memory): the README's ids are
 * the tenant `demo`'s, so the demo cannot share a database with another suite seeding it.
 */
export async function demoServer(env: Record<string, string> = {}): Promise<DemoServer> {
  const db = await openDatabase({ databaseUrl: undefined, dataDir: "memory://", poolSize: 2 });
  try {
    const server = await testServer(db, env);
    const seeded = await seedDemo(db.knex, server.services, DEMO_TENANT);
    const token = await hsToken({ roles: ["admin"], sub: "demo-admin", tenants: [DEMO_TENANT] });
    return {
      db,
      server,
      seeded,
      token,
      async close() {
        await server.app.close();
        await db.close();
      },
    };
  } catch (err) {
    await db.close();
    throw err;
  }
}
