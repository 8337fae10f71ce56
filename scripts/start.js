#!/usr/bin/env node
// `npm start`: start the emulator (data kept in .state/), then `pulumi up` of the quickstart
// project (examples/quickstart, a TypeScript program) exactly as a user runs it: the package packed
// with `npm pack` and installed into a copy of the project in .state/quickstart, the real `pulumi`
// CLI and Node.js language host, stack config set with `pulumi config set` (the key as a secret).
// Pulumi prints the stack outputs (its "Outputs:" section); this adds a one-line summary and stops
// the emulator. A second run finds the same objects: no changes.
"use strict";
const { createHash } = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const { startEmulator } = require("./emulator-process");
const { makeProject, packTarball, pulumiBinDir, REPO } = require("./pack-project");
const { run } = require("./stack");

const stateDir = path.join(REPO, ".state");
const example = path.join(REPO, "examples/quickstart");

/** .state/quickstart: a user's copy of the example with the packed package; reinstalled when the package changes. */
function quickstartProject() {
  const tarball = packTarball(stateDir);
  const hash = createHash("sha256").update(fs.readFileSync(tarball)).digest("hex");
  const dir = path.join(stateDir, "quickstart");
  const marker = path.join(dir, ".installed-package-sha256");
  if (fs.existsSync(marker) && fs.readFileSync(marker, "utf8") === hash) {
    for (const file of fs.readdirSync(example))
      if (file !== "package.json") fs.cpSync(path.join(example, file), path.join(dir, file));
  } else {
    makeProject(dir, { name: "accessctl-quickstart", tarball, from: example });
    fs.writeFileSync(marker, hash);
  }
  return dir;
}

async function main() {
  fs.mkdirSync(path.join(stateDir, "pulumi"), { recursive: true });
  const binDir = pulumiBinDir();
  const dir = quickstartProject();
  const emulator = await startEmulator(["--data", path.join(stateDir, "emulator.json")]);
  const { url, adminToken, fixtures } = emulator.startup;
  process.stderr.write(`emulator: ${url} (data in .state/emulator.json); project: ${path.relative(REPO, dir)}\n`);
  try {
    const result = await run({
      dir,
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
    if (!result.ok) throw new Error(`${result.error} (its output is above)`);
    const changes = Object.entries(result.summary.resourceChanges ?? {})
      .map(([op, n]) => `${op}: ${n}`)
      .join(", ");
    // Not the outputs again: pulumi up has just printed them (the key's ciToken as [secret]).
    console.log(`pulumi up: ${result.summary.result} (${changes || "no changes"}) in ${result.seconds.toFixed(1)} s`);
  } finally {
    emulator.child.kill("SIGTERM");
  }
}

main().catch((err) => {
  process.stderr.write(`npm start failed: ${err && err.message ? err.message : err}\n`);
  process.exit(1);
});
