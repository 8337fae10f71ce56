// Once per test run: `npm pack` this package and install the tarball into a fresh project
// (scripts/pack-project.js) whose Pulumi.yaml runs program.js, so that Pulumi serializes the provider
// from node_modules as it does for users; the Python venv the plugin's Python programs use; and the
// Pulumi CLI with the language hosts (Node.js, and YAML, Python and Go for the plugin's programs).
// The CLI is only started here: on a fresh machine scripts/pulumi-cli builds it with Go (minutes),
// while the unit tests, which do not need it and mostly wait on timers, run first (vitest.config.mts
// orders them so); each e2e file waits for it (./cli-ready.ts). .ci/run starts the same build earlier
// still, and scripts/pulumi-cli's lock makes this one wait for it.
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { TestProject } from "vitest/node";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { packProject, REPO } = require("../../scripts/pack-project.js");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pythonVenv } = require("../../scripts/python-venv.js");

const CLI = path.join(REPO, "scripts/pulumi-cli");
const PARTS = ["nodejs", "yaml", "python", "go"];

/** Finds or builds the CLI and the hosts in the background; `ready` gets what came of it, as JSON. */
function startCli(binDir: string, ready: string) {
  // (at a lower priority: the unit tests that run meanwhile keep their timing)
  const args = ["-n", "10", CLI, "--bin-dir", ...PARTS];
  const build = spawn("nice", args, { stdio: ["ignore", "pipe", "inherit"], detached: true });
  let out = "";
  build.stdout.on("data", (d) => (out += d));
  const end = (error?: string) => fs.writeFileSync(ready, JSON.stringify({ error }));
  build.on("error", (e) => end(`scripts/pulumi-cli: ${e.message}`));
  build.on("close", (code) => {
    if (code !== 0) end(`scripts/pulumi-cli --bin-dir ${PARTS.join(" ")} exited ${code}: see its output above`);
    else if (out.trim() !== binDir) end(`scripts/pulumi-cli gave ${out.trim()}, not ${binDir} as --where said`);
    else end();
  });
  return () => {
    if (build.exitCode === null && build.pid) process.kill(-build.pid); // (the run ended before the build)
  };
}

export default function setup(project: TestProject) {
  const binDir = execFileSync(CLI, ["--where", ...PARTS], { stdio: ["ignore", "pipe", "inherit"] })
    .toString()
    .trim();
  const cliDir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-e2e-cli-"));
  const cliReady = path.join(cliDir, "ready.json");
  const stopCli = startCli(binDir, cliReady);
  const program = { "program.js": path.join(__dirname, "program.js") };
  const { root, dir, tarball } = packProject("accessctl-e2e", program, { main: "program.js" });
  pythonVenv(); // made once, before the tests that share it run in parallel
  project.provide("e2e", { dir, binDir, tarball, cliReady });
  return () => {
    stopCli();
    for (const d of [root, cliDir]) fs.rmSync(d, { recursive: true, force: true });
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    /**
     * dir: a project running program.js; binDir: where the CLI is or will be, once `cliReady`, a file, holds
     * `{}` (or `{ error }`); nodeDir: the `node` to run programs with (else PATH's; unset:
     * test/e2e/user-project.test.ts picks another Node.js itself).
     */
    e2e: { dir: string; binDir: string; tarball: string; cliReady?: string; nodeDir?: string };
  }
}
