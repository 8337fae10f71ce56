// Once per test run: find or build the Pulumi CLI and the language hosts (Node.js, and YAML, Python
// and Go for the plugin's programs), the Python venv those programs use, `npm pack` this
// package and install the tarball into a fresh project (scripts/pack-project.js) whose Pulumi.yaml
// runs program.js, so that Pulumi serializes the provider from node_modules as it does for users.
// The CLI is asked for first and waited for last: a build with Go (minutes on a fresh machine) goes
// on while the package is packed and installed. .ci/run starts the same build earlier still;
// scripts/pulumi-cli's lock makes this call wait for it, or build what is missing.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import type { TestProject } from "vitest/node";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { packProject, REPO } = require("../../scripts/pack-project.js");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pythonVenv } = require("../../scripts/python-venv.js");

/** scripts/pulumi-cli --bin-dir for `parts`, started now: its directory once found or built. */
function pulumiBinDirLater(parts: string[]): Promise<string> {
  const args = ["--bin-dir", ...parts];
  const cli = spawn(path.join(REPO, "scripts/pulumi-cli"), args, { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  cli.stdout.on("data", (d) => (out += d));
  return new Promise((resolve, reject) => {
    cli.on("error", reject);
    cli.on("close", (code) => {
      if (code === 0) resolve(out.trim());
      else reject(new Error(`scripts/pulumi-cli --bin-dir ${parts.join(" ")} exited ${code}`));
    });
  });
}

export default async function setup(project: TestProject) {
  const binDirFound = pulumiBinDirLater(["nodejs", "yaml", "python", "go"]);
  binDirFound.catch(() => {}); // (awaited below, after the packing)
  pythonVenv(); // made once, before the tests that share it run in parallel
  const program = { "program.js": path.join(__dirname, "program.js") };
  const { root, dir, tarball } = packProject("accessctl-e2e", program, { main: "program.js" });
  const binDir = await binDirFound;
  project.provide("e2e", { dir, binDir, tarball });
  return () => fs.rmSync(root, { recursive: true, force: true });
}

declare module "vitest" {
  export interface ProvidedContext {
    /** dir: a project running program.js; nodeDir: the `node` to run programs with (else PATH's; unset: test/e2e/user-project.test.ts picks another Node.js itself). */
    e2e: { dir: string; binDir: string; tarball: string; nodeDir?: string };
  }
}
