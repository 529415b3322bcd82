import { closeBackends } from "./backends.js";
import { runEndStops } from "./process.js";

/** Root hooks: the shared databases close and the shared engines stop once, after every suite. */
export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    // A broker stopping for the first time writes its class-data archive: some 30 s on a loaded machine.
    this.timeout(180_000);
    await runEndStops();
    await closeBackends();
  },
};
