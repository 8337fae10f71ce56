// Once per test run: find or build the Pulumi CLI and the language hosts (Node.js, and YAML, Python
// and Go for the plugin's programs), the Python venv those programs use, `npm pack` this
// package and install the tarball into a fresh project (scripts/pack-project.js) whose Pulumi.yaml
// runs program.js, so that Pulumi serializes the provider from node_modules as it does for users.
import * as fs from "node:fs";
import * as path from "node:path";
import type { TestProject } from "vitest/node";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { packProject, pulumiBinDir } = require("../../scripts/pack-project.js");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pythonVenv } = require("../../scripts/python-venv.js");

export default function setup(project: TestProject) {
  const binDir: string = pulumiBinDir(["nodejs", "yaml", "python", "go"]);
  pythonVenv(); // made once, before the tests that share it run in parallel
  const { root, dir, tarball } = packProject("accessctl-e2e", { "program.js": path.join(__dirname, "program.js") }, { main: "program.js" });
  project.provide("e2e", { dir, binDir, tarball });
  return () => fs.rmSync(root, { recursive: true, force: true });
}

declare module "vitest" {
  export interface ProvidedContext {
    /** dir: a project running program.js; nodeDir: the `node` to run programs with (else PATH's; unset: test/e2e/user-project.test.ts picks another Node.js itself). */
    e2e: { dir: string; binDir: string; tarball: string; nodeDir?: string };
  }
}
