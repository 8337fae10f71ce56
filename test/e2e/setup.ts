// Once per test run: find or build the Pulumi CLI, `npm pack` this package and install the tarball
// into a fresh project, so that Pulumi serializes the provider from node_modules as it does for users.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { TestProject } from "vitest/node";

const REPO = path.resolve(__dirname, "../..");

export default function setup(project: TestProject) {
  const binDir = execFileSync(path.join(REPO, "scripts/pulumi-cli"), ["--bin-dir"], { stdio: ["ignore", "pipe", "inherit"] }).toString().trim();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-e2e-"));
  const packed = JSON.parse(execFileSync("npm", ["pack", "--json", "--pack-destination", root], { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] }).toString());
  const tarball = path.join(root, packed[0].filename);
  const dir = path.join(root, "project");
  fs.mkdirSync(dir);
  const pulumiVersion = JSON.parse(fs.readFileSync(path.join(REPO, "node_modules/@pulumi/pulumi/package.json"), "utf8")).version;
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({
    name: "accessctl-e2e",
    private: true,
    dependencies: { "@accessctl/pulumi": `file:${tarball}`, "@pulumi/pulumi": pulumiVersion },
  }, null, 2));
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: accessctl-e2e\nruntime: nodejs\n");
  fs.copyFileSync(path.join(__dirname, "program.js"), path.join(dir, "program.js"));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel", "error"], { cwd: dir, stdio: ["ignore", "inherit", "inherit"] });
  project.provide("e2e", { dir, binDir, tarball });
  return () => fs.rmSync(root, { recursive: true, force: true });
}

declare module "vitest" {
  export interface ProvidedContext {
    e2e: { dir: string; binDir: string; tarball: string };
  }
}
