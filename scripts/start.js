#!/usr/bin/env node
// `npm start`: start the emulator (state kept in .state/), `pulumi up` the quickstart stack against
// it with the real Pulumi engine, print the stack outputs, stop the emulator. A second run finds
// the same objects and reports no changes.
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { startEmulator } = require("./emulator-process");
const { run } = require("./stack");

const repo = path.resolve(__dirname, "..");
const stateDir = path.join(repo, ".state");

async function main() {
  fs.mkdirSync(path.join(stateDir, "pulumi"), { recursive: true });
  const binDir = execFileSync(path.join(repo, "scripts/pulumi-cli"), ["--bin-dir"], { stdio: ["ignore", "pipe", "inherit"] }).toString().trim();
  const emulator = await startEmulator(["--data", path.join(stateDir, "emulator.json")]);
  const { url, adminToken, fixtures } = emulator.startup;
  process.stderr.write(`emulator: ${url} (data in .state/emulator.json)\n`);
  try {
    const result = await run({
      dir: repo,
      program: "dist/examples/quickstart/index.js",
      stack: "emulator",
      op: "up",
      binDir,
      backend: `file://${path.join(stateDir, "pulumi")}`,
      passphrase: "accessctl-emulator",
      config: {
        "accessctl:apiUrl": { value: url },
        "accessctl:apiKey": { value: adminToken, secret: true },
        ipPolicyId: { value: fixtures.ipPolicies[0] },
        edgeId: { value: fixtures.tlsEdges[0] },
        certificateAuthorityIds: { value: JSON.stringify(fixtures.certificateAuthorities) },
      },
    });
    const changes = Object.entries(result.summary.resourceChanges ?? {}).map(([op, n]) => `${op}: ${n}`).join(", ");
    console.log(`\npulumi up: ${result.summary.result} (${changes}) in ${result.seconds.toFixed(1)} s`);
    console.log("Outputs:");
    for (const [name, { value, secret }] of Object.entries(result.outputs)) {
      console.log(`  ${name}: ${secret ? "[secret]" : JSON.stringify(value)}`);
    }
  } finally {
    emulator.child.kill("SIGTERM");
  }
}

main().catch((err) => {
  process.stderr.write(`npm start failed: ${err && err.message ? err.message : err}\n`);
  process.exit(1);
});
