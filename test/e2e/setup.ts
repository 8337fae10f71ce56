// Once per test run: find or build the Pulumi CLI, `npm pack` this package and install the tarball
// into a fresh project (scripts/pack-project.js), so that Pulumi serializes the provider from
// node_modules as it does for users.
import * as fs from "node:fs";
import * as path from "node:path";
import type { TestProject } from "vitest/node";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { packProject, pulumiBinDir } = require("../../scripts/pack-project.js");

export default function setup(project: TestProject) {
  const binDir: string = pulumiBinDir();
  const { root, dir, tarball } = packProject("accessctl-e2e", { "program.js": path.join(__dirname, "program.js") });
  project.provide("e2e", { dir, binDir, tarball });
  return () => fs.rmSync(root, { recursive: true, force: true });
}

declare module "vitest" {
  export interface ProvidedContext {
    e2e: { dir: string; binDir: string; tarball: string };
  }
}
