import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/emulator/**/*.test.ts", "test/provider/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        // The real Pulumi CLI and engine against the emulator, with the package installed from `npm pack`.
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          globalSetup: ["test/e2e/setup.ts"],
          testTimeout: 600_000,
          hookTimeout: 1_800_000, // the first run may build the Pulumi CLI
        },
      },
    ],
  },
});
