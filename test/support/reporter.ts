import Mocha from "mocha";

const { Spec } = Mocha.reporters;
const { EVENT_RUN_BEGIN, EVENT_RUN_END } = Mocha.Runner.constants;

/**
 * mocha's spec output, opened by the Node runtime the tests run on (the one the npm scripts put
 * first on PATH, node_modules/.bin/node) and closed by the line CI reads: `N passed, N failed, N skipped`, from the
 * runner's own counts (a failing hook counts as a failure).
 */
class SpecWithTotals extends Spec {
  constructor(runner: Mocha.Runner, options?: Mocha.MochaOptions) {
    super(runner, options);
    runner.once(EVENT_RUN_BEGIN, () => process.stdout.write(`tests on Node ${process.version} (${process.execPath})\n`));
    runner.once(EVENT_RUN_END, () => {
      const stats = runner.stats;
      if (stats === undefined) return;
      process.stdout.write(`\n${stats.passes} passed, ${stats.failures} failed, ${stats.pending} skipped\n`);
    });
  }
}

export default SpecWithTotals;
