import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

// The unit files first (vitest's own order, largest or longest first, puts projects in name order:
// e2e first): the e2e global setup only starts the Pulumi CLI's build (minutes with Go on a fresh
// machine), and the unit tests, which mostly wait on timers, run during it (test/e2e/cli-ready.ts).
class UnitFilesFirst extends BaseSequencer {
  async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return [...sorted.filter((f) => f.project.name === "unit"), ...sorted.filter((f) => f.project.name !== "unit")];
  }
}

// The real Pulumi CLI, language host and engine against the emulator, with the package installed
// from `npm pack` into project directories.
const e2e = {
  globalSetup: ["test/e2e/setup.ts"],
  setupFiles: ["test/e2e/cli-ready.ts"], // each file waits for the CLI the global setup started
  testTimeout: 600_000,
  hookTimeout: 1_800_000, // (test/e2e/cli-ready.ts waits for the CLI with a bound of its own)
};

export default defineConfig({
  test: {
    reporters: ["default", "./test/summary-reporter.ts"],
    sequence: { sequencer: UnitFilesFirst },
    // At least two test files at once (vitest's default is availableParallelism - 1: one on the CI's 2
    // cores): an e2e file spends most of its time waiting on pulumi, the emulator's latency and rate
    // windows, and timeouts, and every file has its own emulator, stacks and backends.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        test: {
          name: "unit",
          include: [
            "test/emulator/**/*.test.ts",
            "test/provider/**/*.test.ts",
            "test/policy/**/*.test.ts",
            "test/tools/**/*.test.ts",
          ],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      // Programs run on the `node` on PATH (.ci/run puts Node.js 22 there); test/e2e/user-project.test.ts
      // runs a user's project on Node.js 24 too.
      { test: { name: "e2e", include: ["test/e2e/**/*.test.ts"], ...e2e } },
    ],
  },
});
