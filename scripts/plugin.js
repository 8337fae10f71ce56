#!/usr/bin/env node
// `npm run plugin`: the plugin pulumi-resource-accessctl as Pulumi installs plugins, a tarball
//   dist/pulumi-resource-accessctl-v<version>-linux-amd64.tar.gz
// holding the executable `pulumi-resource-accessctl` (a shell script: node ≥ 22 on PATH runs the
// bundle beside it) and `pulumi-resource-accessctl.js`, one file with everything it runs (our
// compiled plugin/ and provider/ code, the schema, @grpc/grpc-js, google-protobuf, Pulumi's protocol
// messages, undici, ipaddr.js). Install: pulumi plugin install resource accessctl <version> --file <tarball>.
// Needs a build (dist/plugin/main.js). Prints the tarball's path as its last line (not with --quiet:
// prepack builds it too, and `npm pack --json` reads stdout).
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const REPO = path.resolve(__dirname, "..");
const { version } = require(path.join(REPO, "package.json"));
const NAME = "pulumi-resource-accessctl";

/** The tarball's name for this version and platform (Pulumi's convention: <name>-v<version>-<os>-<arch>.tar.gz). */
function tarballName(v = version) {
  return `${NAME}-v${v}-linux-amd64.tar.gz`;
}

// Pulumi runs the plugin by this name with the engine's address; the bundle needs only node.
const LAUNCHER = `#!/bin/sh
# ${NAME} ${version}: Pulumi's provider plugin for the accessctl API. Needs Node.js 22 or later on PATH.
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1; then
  echo "${NAME}: node (Node.js 22 or later) is not on PATH" >&2
  exit 1
fi
exec node "$here/${NAME}.js" "$@"
`;

/** The tarball of the plugin whose script bundles `entry` (another: the bench's floor), written in `outDir`. */
function build(entry = path.join(REPO, "dist/plugin/main.js"), outDir = path.join(REPO, "dist")) {
  if (!fs.existsSync(entry)) throw new Error(`${entry} is missing: run npm run build first`);
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-plugin-"));
  try {
    require("esbuild").buildSync({
      entryPoints: [entry],
      outfile: path.join(stage, `${NAME}.js`),
      bundle: true,
      platform: "node",
      target: "node22",
      format: "cjs",
      legalComments: "none",
      logLevel: "warning",
    });
    fs.writeFileSync(path.join(stage, NAME), LAUNCHER, { mode: 0o755 });
    fs.copyFileSync(path.join(REPO, "LICENSE"), path.join(stage, "LICENSE"));
    const out = path.join(outDir, tarballName());
    fs.mkdirSync(path.dirname(out), { recursive: true });
    // Fixed owner and times, so that the same code gives the same tarball.
    execFileSync("tar", [
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      "--mtime=@0",
      "--sort=name",
      "-czf",
      out,
      "-C",
      stage,
      NAME,
      `${NAME}.js`,
      "LICENSE",
    ]);
    return out;
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

module.exports = { build, tarballName, NAME };

if (require.main === module) {
  try {
    const out = build();
    if (!process.argv.includes("--quiet")) process.stdout.write(`${out}\n`); // (npm pack --json reads its stdout)
  } catch (e) {
    process.stderr.write(`plugin: ${e.message}\n`);
    process.exit(1);
  }
}
