import { closeBackends } from "./backends.js";
import { runEndStops } from "./process.js";

/** Root hooks: the shared databases close and the shared engines stop once, after every suite. */
export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    // A broker's clean stop (it writes its class-data archive) took over 20 s on a loaded machine.
    this.timeout(120_000);
    await runEndStops();
    await closeBackends();
  },
};
