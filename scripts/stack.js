#!/usr/bin/env node
// Runs one Pulumi operation (up, preview, refresh, destroy) of a Node program through the
// Automation API, with the real Pulumi CLI and engine. Used by `npm start`, the end-to-end tests
// and the benchmarks.
//
// Why the Automation API: it runs the program in this process (an "inline program"), so it needs
// only the `pulumi` CLI and the dynamic-provider plugin, not the `pulumi-language-nodejs` host,
// which cannot be built here (see README, "The Pulumi CLI").
//
//   node scripts/stack.js '<job as JSON>'
// job: { dir, program, stack, op, binDir, backend, passphrase?, config?: {key: {value, secret}},
//        refresh?, clearPendingCreates?, env?, parallel?, verbose? }
// `dir` is the project directory: its Pulumi.yaml, and its node_modules, from which
// @pulumi/pulumi and the program's packages are loaded (as a user's project would load them).
// Pulumi's own output goes to stderr; the last line on stdout is `RESULT {json}`.
"use strict";
const path = require("node:path");
const { spawn } = require("node:child_process");
const { createRequire } = require("node:module");

async function run(job) {
  const dir = path.resolve(job.dir);
  const projectRequire = createRequire(path.join(dir, "package.json"));
  const automation = projectRequire("@pulumi/pulumi/automation");
  const program = async () => {
    const exported = projectRequire(path.resolve(dir, job.program));
    const outputs = typeof exported.default === "function" ? await exported.default() : exported;
    const result = {};
    for (const [k, v] of Object.entries(outputs)) if (k !== "__esModule" && k !== "default") result[k] = v;
    return result;
  };
  const pulumiCommand = await automation.PulumiCommand.get({ root: path.dirname(job.binDir) });
  const envVars = {
    PULUMI_BACKEND_URL: job.backend,
    PULUMI_CONFIG_PASSPHRASE: job.passphrase ?? "accessctl-local",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK: "true",
    PATH: `${job.binDir}${path.delimiter}${process.env.PATH}`,
    ...(job.env ?? {}),
  };
  const projectName = require(path.join(dir, "package.json")).name?.replace(/[^A-Za-z0-9_.-]/g, "-") || "accessctl-stack";
  const stack = await automation.LocalWorkspace.createOrSelectStack(
    { stackName: job.stack, projectName, program },
    { workDir: dir, envVars, pulumiCommand },
  );
  if (job.config) await stack.setAllConfig(job.config);
  const onOutput = (out) => process.stderr.write(out);
  const common = { onOutput, color: "never", ...(job.parallel ? { parallel: job.parallel } : {}) };
  const debug = job.verbose ? { logVerbosity: job.verbose, logToStdErr: true, debug: true } : {};
  const started = Date.now();
  let result;
  switch (job.op) {
    case "up": {
      const r = await stack.up({ ...common, ...debug, refresh: !!job.refresh });
      result = { summary: r.summary, outputs: r.outputs, stdout: r.stdout, stderr: r.stderr };
      break;
    }
    case "preview": {
      const r = await stack.preview({ ...common, ...debug, refresh: !!job.refresh, diff: true });
      result = { changeSummary: r.changeSummary, stdout: r.stdout, stderr: r.stderr };
      break;
    }
    case "refresh": {
      const r = await stack.refresh({ ...common, ...debug, clearPendingCreates: !!job.clearPendingCreates });
      result = { summary: r.summary, stdout: r.stdout, stderr: r.stderr };
      break;
    }
    case "destroy": {
      const r = await stack.destroy({ ...common, ...debug, refresh: !!job.refresh });
      result = { summary: r.summary, stdout: r.stdout, stderr: r.stderr };
      break;
    }
    case "outputs": {
      result = { outputs: await stack.outputs() };
      break;
    }
    case "cancel": {
      await stack.cancel();
      result = {};
      break;
    }
    default:
      throw new Error(`unknown op ${job.op}`);
  }
  return { ...result, seconds: (Date.now() - started) / 1000 };
}

/**
 * Runs a job in a child process. With { detached: true } it gets a process group of its own, so
 * that a caller can kill Pulumi with everything it started. Returns { child, done }, done
 * resolving with the parsed RESULT plus { ok, childStderr }.
 */
function spawnJob(job, { detached = false } = {}) {
  const child = spawn(process.execPath, [__filename, JSON.stringify(job)], { detached, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const done = new Promise((resolve) => {
    child.once("close", () => {
      const line = stdout.split("\n").reverse().find((l) => l.startsWith("RESULT "));
      const result = line ? JSON.parse(line.slice("RESULT ".length)) : { error: "no RESULT line (killed?)" };
      resolve({ ...result, ok: !result.error, childStderr: stderr });
    });
  });
  return { child, done };
}

module.exports = { run, spawnJob };

if (require.main === module) {
  let job;
  try {
    job = JSON.parse(process.argv[2] ?? "");
  } catch {
    process.stderr.write("usage: node scripts/stack.js '<job as JSON>' (see the comment at the top of this file)\n");
    process.exit(2);
  }
  run(job).then(
    (result) => {
      process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
      process.exit(0);
    },
    (err) => {
      process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
      process.stdout.write(`RESULT ${JSON.stringify({ error: String(err && err.message ? err.message : err) })}\n`);
      process.exit(1);
    },
  );
}
