#!/usr/bin/env node
// Points the selected stack of the Pulumi project in the current directory at a running emulator:
// reads the emulator's startup line (a file, or stdin) and runs `pulumi config set` for
// accessctl:apiUrl, accessctl:apiKey (--secret, through stdin), ipPolicyId, edgeId and
// certificateAuthorityIds, the config of the quickstart program (the root project's index.ts).
//   npm run --silent emulator -- --data .state/emulator.json > .state/emulator-startup.json   # terminal 1
//   node scripts/emulator-config.js .state/emulator-startup.json                               # terminal 2
"use strict";
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");

const file = process.argv[2];
const text = fs.readFileSync(file && file !== "-" ? file : 0, "utf8");
let startup;
try {
  startup = JSON.parse(text.trim().split("\n")[0]);
} catch {
  process.stderr.write(
    `emulator-config: ${file ?? "stdin"} does not start with the emulator's startup line (JSON); is the emulator running?\n`,
  );
  process.exit(2);
}
const { url, adminToken, fixtures } = startup;
if (typeof url !== "string" || typeof adminToken !== "string" || !fixtures) {
  process.stderr.write("emulator-config: the startup line lacks url, adminToken or fixtures\n");
  process.exit(2);
}
const settings = [
  [["accessctl:apiUrl", url]],
  [["--secret", "accessctl:apiKey"], adminToken], // the token goes through stdin, never on a command line
  [["ipPolicyId", fixtures.ipPolicies[0]]],
  [["edgeId", fixtures.tlsEdges[0]]],
  [["certificateAuthorityIds", JSON.stringify(fixtures.certificateAuthorities)]],
];
for (const [args, input] of settings) {
  const r = spawnSync("pulumi", ["config", "set", ...args], {
    input: input ?? "",
    stdio: ["pipe", "inherit", "inherit"],
    timeout: 60_000,
  });
  if (r.status !== 0) {
    process.stderr.write(
      `emulator-config: pulumi config set ${args[args.length - 2] === "--secret" ? args[args.length - 1] : args[0]} failed${r.error ? `: ${r.error.message}` : ""}\n`,
    );
    process.exit(1);
  }
}
process.stderr.write(`emulator-config: the stack now deploys to ${url}\n`);
