import { expect } from "chai";
import { CompiledCache } from "../src/compiled-cache.js";

describe("compiled cache", () => {
  it("builds a key once, keeps at most its capacity, least recently used dropped first", async () => {
    const cache = new CompiledCache<{ key: string }>(2);
    const built: string[] = [];
    const get = (key: string) =>
      cache.get(key, () => {
        built.push(key);
        return { key };
      });
    const a = await get("a");
    await get("b");
    expect(await get("a"), "a hit returns what was built").to.equal(a);
    await get("c");
    expect(cache.size).to.equal(2);
    expect(await get("a"), "a was used after b: b was dropped, a kept").to.equal(a);
    await get("b");
    expect(built).to.deep.equal(["a", "b", "c", "b"]);
    expect(cache.compilations).to.equal(4);
  });

  it("keeps nothing when the build fails: the next get builds again", async () => {
    const cache = new CompiledCache<string>(1);
    const failed = await cache.get("x", () => Promise.reject(new Error("does not compile"))).catch((err: Error) => err.message);
    expect(failed).to.equal("does not compile");
    expect([cache.size, cache.compilations]).to.deep.equal([0, 0]);
    expect(await cache.get("x", async () => "compiled")).to.equal("compiled");
    expect(cache.compilations).to.equal(1);
  });

  it("keeps nothing at capacity 0: every get builds", async () => {
    const cache = new CompiledCache<string>(0);
    expect([await cache.get("x", () => "first"), await cache.get("x", () => "second")]).to.deep.equal(["first", "second"]);
    expect([cache.size, cache.compilations]).to.deep.equal([0, 2]);
  });

  it("joins its key's parts with a separator no part contains", () => {
    expect(CompiledCache.key("a", "bc")).to.not.equal(CompiledCache.key("ab", "c"));
  });
});
