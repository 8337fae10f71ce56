#!/usr/bin/env node
// A Python virtual environment with the `pulumi` package of the version our @pulumi/pulumi is, for
// Python programs of the end-to-end tests and the plugin's Python SDK: `node scripts/python-venv.js`
// prints its directory. Made once with `python3 -m venv` and pip from PyPI, in
// ${XDG_CACHE_HOME:-~/.cache}/accessctl-pulumi/python-<pulumi version>. The Python language host
// (scripts/pulumi-cli) does not read Pulumi.yaml's virtualenv option under our CLI: a program runs
// with VIRTUAL_ENV set to it and its bin first on PATH, as `source <venv>/bin/activate` does
// (scripts/stack.js does that when a job's env has VIRTUAL_ENV).
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const REPO = path.resolve(__dirname, "..");
const PULUMI = require(path.join(REPO, "node_modules/@pulumi/pulumi/package.json")).version;

function pythonVenv() {
  const dir = path.join(
    process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"),
    "accessctl-pulumi",
    `python-${PULUMI}`,
  );
  const python = path.join(dir, "bin", "python");
  if (fs.existsSync(path.join(dir, ".complete"))) return dir;
  // A venv records its own path, so it is made where it stays, under a lock: parallel callers wait,
  // and only a venv marked complete is used.
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const lock = `${dir}.lock`;
  for (let waited = 0; ; waited += 500) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch {
      if (fs.existsSync(path.join(dir, ".complete"))) return dir;
      if (waited > 600_000) throw new Error(`python-venv: ${lock} held for 10 minutes; remove it if no build runs`);
      execFileSync("sleep", ["0.5"]);
    }
  }
  try {
    fs.rmSync(dir, { recursive: true, force: true });
    execFileSync("python3", ["-m", "venv", dir], { stdio: ["ignore", "ignore", "inherit"] });
    // With what the generated SDK (sdks/python) needs besides pulumi, and to build it without an isolated environment.
    execFileSync(
      python,
      [
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        `pulumi==${PULUMI}`,
        "parver>=0.2.1",
        "semver>=2.8.1",
        "wheel",
      ],
      { stdio: ["ignore", "ignore", "inherit"] },
    );
    fs.writeFileSync(path.join(dir, ".complete"), `pulumi==${PULUMI}\n`);
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
  return dir;
}

module.exports = { pythonVenv, PULUMI };

if (require.main === module) {
  try {
    process.stdout.write(`${pythonVenv()}\n`);
  } catch (e) {
    process.stderr.write(`${e.message}\n`);
    process.exit(1);
  }
}
