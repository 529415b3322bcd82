import { expect } from "chai";
import Transport from "winston-transport";
import { createLogger } from "../src/logger.js";

class Collect extends Transport {
  readonly lines: { level: string; message: string }[] = [];
  readonly infos: Record<string, unknown>[] = [];
  override log(info: { level: string; message: string }, done: () => void): void {
    this.lines.push({ level: info.level, message: info.message });
    this.infos.push(info);
    done();
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("logger", () => {
  it("writes its level and the more severe ones, and follows a later change of level", async () => {
    const out = new Collect();
    const logger = createLogger("warn", [out]);
    logger.error("e");
    logger.warn("w");
    logger.info("i");
    logger.debug("d");
    logger.level = "debug";
    logger.debug("d2");
    await settle();
    expect(out.lines).to.deep.equal([
      { level: "error", message: "e" },
      { level: "warn", message: "w" },
      { level: "debug", message: "d2" },
    ]);
  });

  it("does not format a call at a level it does not write (its fields are never read)", async () => {
    const out = new Collect();
    const logger = createLogger("warn", [out]);
    let reads = 0;
    const fields = {
      get costly() {
        reads++;
        return "x";
      },
    };
    logger.info("skipped", fields);
    await settle();
    expect(reads).to.equal(0);
    logger.warn("written", fields);
    await settle();
    expect(reads).to.be.greaterThan(0);
    expect(out.lines.map((l) => l.message)).to.deep.equal(["written"]);
  });

  it("keeps a child logger's fields, and its level", async () => {
    const out = new Collect();
    const logger = createLogger("info", [out]);
    const child = logger.child({ requestId: "r-1" });
    child.info("from child", { extra: 1 });
    child.debug("below the level");
    await settle();
    expect(out.infos).to.have.length(1);
    expect(out.infos[0]).to.include({ message: "from child", requestId: "r-1", extra: 1 });
  });

  it("writes nothing at all when silent", async () => {
    const out = new Collect();
    const logger = createLogger("silent", [out]);
    logger.error("e");
    await settle();
    expect(out.lines).to.deep.equal([]);
  });
});
