import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// The real Pulumi CLI, language host and engine against the emulator, with the package installed
// from `npm pack` into project directories.
const e2e = {
  globalSetup: ["test/e2e/setup.ts"],
  testTimeout: 600_000,
  hookTimeout: 1_800_000, // the first run may build the Pulumi CLI
};

export default defineConfig({
  test: {
    reporters: ["default", "./test/summary-reporter.ts"],
    // At least two test files at once (vitest's default is availableParallelism - 1: one on the CI's 2
    // cores): an e2e file spends most of its time waiting on pulumi, the emulator's latency and rate
    // windows, and timeouts, and every file has its own emulator, stacks and backends.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/emulator/**/*.test.ts", "test/provider/**/*.test.ts", "test/policy/**/*.test.ts", "test/tools/**/*.test.ts"],
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
