// Before each e2e file (setupFiles): wait until the Pulumi CLI and the hosts that the global setup
// (./setup.ts) started to find or build are there, so that the unit tests run during a build with Go.
import * as fs from "node:fs";
import { beforeAll, inject } from "vitest";

const WAIT_MS = 30 * 60_000; // the build on a fresh 2-core machine takes about 7.5 minutes

beforeAll(async () => {
  const { cliReady } = inject("e2e");
  if (!cliReady) return;
  const deadline = Date.now() + WAIT_MS;
  while (!fs.existsSync(cliReady)) {
    if (Date.now() > deadline) throw new Error(`no Pulumi CLI after ${WAIT_MS / 60_000} min (no ${cliReady})`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const { error } = JSON.parse(fs.readFileSync(cliReady, "utf8")) as { error?: string };
  if (error) throw new Error(`the Pulumi CLI and language hosts: ${error}`);
}, WAIT_MS + 60_000);
