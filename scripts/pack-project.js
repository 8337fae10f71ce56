// Makes a project the way a user has one: `npm pack` this package and install the tarball into a
// fresh directory, with a Pulumi.yaml and the given program files. Used by the end-to-end tests and
// the benchmarks, so that Pulumi serializes our provider from node_modules, as it will for users.
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const REPO = path.resolve(__dirname, "..");

/** files: { "name in project": "absolute source path" }. Returns { root, dir, tarball }. */
function packProject(name, files) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  const packed = JSON.parse(execFileSync("npm", ["pack", "--json", "--pack-destination", root], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] }).toString());
  const tarball = path.join(root, packed[0].filename);
  const dir = path.join(root, "project");
  fs.mkdirSync(dir);
  const pulumiVersion = require(path.join(REPO, "node_modules/@pulumi/pulumi/package.json")).version;
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({
    name,
    private: true,
    dependencies: { "@accessctl/pulumi": `file:${tarball}`, "@pulumi/pulumi": pulumiVersion },
  }, null, 2));
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), `name: ${name}\nruntime: nodejs\n`);
  for (const [target, source] of Object.entries(files)) fs.copyFileSync(source, path.join(dir, target));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel", "error"], { cwd: dir, stdio: ["ignore", "inherit", "inherit"] });
  return { root, dir, tarball };
}

/** The directory holding pulumi and the dynamic-provider plugin (scripts/pulumi-cli). */
function pulumiBinDir() {
  return execFileSync(path.join(REPO, "scripts/pulumi-cli"), ["--bin-dir"], { stdio: ["ignore", "pipe", "inherit"] }).toString().trim();
}

module.exports = { packProject, pulumiBinDir, REPO };
