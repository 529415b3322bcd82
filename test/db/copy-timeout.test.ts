import { expect } from "chai";
import { copyFromStdin, openDatabase, type Database } from "../../src/db/database.js";
import { READ_TIMEOUT_MARGIN_MS, DatabaseTimeoutError } from "../../src/db/timeouts.js";
import { toProblemError } from "../../src/errors.js";
import { TEST_DATABASE_URL } from "../support/backends.js";
import { TcpProxy } from "../support/proxy.js";

/**
 * COPY has no read time-out in the driver: a server that stops answering mid-COPY must still cost
 * the caller no more than the statement time-out plus the margin (a CI run met one that waited for
 * the whole freeze of a frozen database). The relay drops the server's answers from the moment the
 * first row is read, so the COPY never hears back.
 */
describe("COPY FROM STDIN on PostgreSQL when the server stops answering", function () {
  this.timeout(30_000);
  const STATEMENT_MS = 800;
  let proxy: TcpProxy;
  let db: Database;

  before(async () => {
    proxy = await TcpProxy.start(new URL(TEST_DATABASE_URL).host);
    db = await openDatabase({ databaseUrl: proxy.through(TEST_DATABASE_URL), dataDir: "", poolSize: 2, timeouts: { statementMs: STATEMENT_MS } });
  });
  after(async () => {
    await db?.close();
    await proxy?.cut();
  });

  it("gives up after the read time-out with a 503's error, drops the connection, and the pool answers again", async () => {
    function* rows(): Generator<string> {
      proxy.muteReplies();
      for (let i = 0; i < 10; i++) yield `${i}\n`;
    }
    const started = Date.now();
    const err = await db.knex
      .transaction(async (trx) => {
        await trx.raw("create temporary table copy_target (n int) on commit drop");
        await copyFromStdin(trx, "copy copy_target (n) from stdin", rows());
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    const waited = Date.now() - started;
    proxy.unmute();

    expect(err).to.be.instanceOf(DatabaseTimeoutError);
    // The transaction answers with its ROLLBACK's error: refused at once, the connection being gone.
    expect((err as Error).message).to.match(/the connection was dropped after the database sent no answer within the statement time-out$/);
    expect(((err as Error).cause as Error).message).to.equal("the database sent no answer to COPY within the statement time-out; the connection was dropped");
    expect(toProblemError(err).code).to.equal("UNAVAILABLE");
    // Bounded by the read time-out, not by how long the server stays silent (here: for ever).
    expect(waited).to.be.at.least(STATEMENT_MS + READ_TIMEOUT_MARGIN_MS - 50);
    // One read time-out, not two (the ROLLBACK used to wait a second one on the silent connection).
    expect(waited).to.be.lessThan(2 * (STATEMENT_MS + READ_TIMEOUT_MARGIN_MS));
    const { rows: answer } = (await db.knex.raw("select 41 + 1 as n")) as { rows: { n: number }[] };
    expect(answer[0]!.n).to.equal(42);
  });
});
