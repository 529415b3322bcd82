import { randomUUID } from "node:crypto";
import { expect } from "chai";
import pg from "pg";
import type { Database } from "../../src/db/database.js";
import { STREAM_CHANNEL } from "../../src/streams/messages.js";
import { registerWatcher, tenantWatched } from "../../src/streams/publish.js";
import { ingestEvents } from "../../src/timeseries/ingest.js";
import { backend, randomTenant, TEST_DATABASE_URL } from "../support/backends.js";

/**
 * Uploads announce their events only while some process watches the tenant (stream_watchers), and
 * a subscription registered while an upload that found its tenant unwatched is in progress waits
 * for that upload to commit: no event committed after `subscribed` goes unannounced.
 */
describe("live streams: announced only to watched tenants (PostgreSQL)", function () {
  this.timeout(30_000);
  let db: Database;
  let listener: pg.Client;
  const heard: string[] = [];

  before(async () => {
    db = await backend("postgres");
    listener = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await listener.connect();
    listener.on("notification", (n) => heard.push(n.payload ?? ""));
    await listener.query(`listen ${STREAM_CHANNEL}`);
  });
  after(() => listener?.end());

  const item = async (tenant: string) => {
    const id = randomUUID();
    await db.knex("entities").insert({ tenant, id, type: "Item", key: `item-${id}`, attributes: JSON.stringify({ itemAction: "INGEST" }) });
    return id;
  };
  const upload = (tenant: string, itemId: string, value: number) => ingestEvents(db.knex, tenant, [{ timestamp: new Date(Date.UTC(2024, 0, 1, 0, value)).toISOString(), value }], { itemId });
  /** Notifications that carry the tenant, after a round trip that any notification sent before has overtaken. */
  const heardFor = async (tenant: string) => {
    await listener.query("select 1");
    return heard.filter((p) => p.includes(JSON.stringify(tenant)));
  };

  it("announces nothing for a tenant nobody watches, and every upload once a process watches it", async () => {
    const tenant = randomTenant();
    const id = await item(tenant);
    expect((await upload(tenant, id, 1)).stored).to.equal(1);
    expect(await heardFor(tenant)).to.deep.equal([]);

    await registerWatcher(db.knex, `process-${randomUUID()}`, tenant);
    expect((await upload(tenant, id, 2)).stored).to.equal(1);
    const notices = await heardFor(tenant);
    expect(notices).to.have.length(1);
    expect(JSON.parse(notices[0]!)).to.deep.include({ t: tenant });
    // Another tenant stays unannounced.
    const other = randomTenant();
    await upload(other, await item(other), 3);
    expect(await heardFor(other)).to.deep.equal([]);
  });

  it("completes a registration only once an upload that found the tenant unwatched has committed", async () => {
    const tenant = randomTenant();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let checked: () => void = () => {};
    const found = new Promise<void>((resolve) => (checked = resolve));
    const uploading = db.knex.transaction(async (trx) => {
      expect(await tenantWatched(trx, tenant)).to.equal(false);
      checked();
      await gate;
    });
    await found;
    let registered = false;
    const registering = registerWatcher(db.knex, `process-${randomUUID()}`, tenant).then(() => (registered = true));
    // Waits on the upload's shared lock however long the upload takes.
    await new Promise((r) => setTimeout(r, 500));
    expect(registered, "registered while an unannounced upload was still open").to.equal(false);
    release();
    await uploading;
    await registering;
    expect(await db.knex.transaction((trx) => tenantWatched(trx, tenant))).to.equal(true);
  });
});
