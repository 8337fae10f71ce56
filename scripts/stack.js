#!/usr/bin/env node
// Runs one Pulumi operation (up, preview, refresh, destroy, outputs, cancel) on a stack of a
// project directory with the real `pulumi` CLI, as a user or a pipeline does: `pulumi stack init
// --no-select` (unless it exists), `pulumi config set` (secrets through stdin, never on a command line),
// then `pulumi up --yes --non-interactive` and so on. Every call names its stack (--stack) and none
// selects one: stacks of one project directory run at once (a team, the bench's pipelines), and the
// workspace's selected stack is one value they would race on. The CLI starts the Node.js language host, which
// runs the project's program (Pulumi.yaml `main`) with the project's own node_modules.
// Used by `npm start`, the end-to-end tests and the benchmarks.
//
//   node scripts/stack.js '<job as JSON>'     or     node scripts/stack.js - < job.json
// job: { dir, stack, op, binDir, backend, passphrase?, config?: {key: {value, secret}},
//        refresh?, withPreview? (up, destroy: a preview first, as a user's run has), clearPendingCreates?, runProgram? (refresh), expectNoChanges?, diff? (preview: false
//        leaves out --diff), env?, parallel?, verbose?, node?, args? (more arguments of the operation: --save-plan FILE, --plan FILE),
//        exists? (the stack is there already: no `stack init`), stackFirst? (`pulumi --stack NAME <op> …`) }
// `node`: a directory holding the `node` to run the program with (else the one on PATH).
// Pulumi's own output goes to stderr; the last line on stdout is `RESULT {json}`: ok, exitCode,
// summary {result, resourceChanges} (from the engine's event log, as the Automation API reads it),
// changeSummary (preview), outputs {name: {value, secret}} (up, outputs), seconds.
"use strict";
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { spawn } = require("node:child_process");

/** Runs `pulumi ARGS`; resolves with { code, stdout, stderr }. Output is also copied to our stderr. */
function pulumi(job, args, { input, quiet = false } = {}) {
  const env = {
    ...process.env,
    PULUMI_BACKEND_URL: job.backend,
    PULUMI_CONFIG_PASSPHRASE: job.passphrase ?? "accessctl-local",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_DEBUG_COMMANDS: "true", // enables --event-log, the engine's JSON events (as the Automation API sets it)
    PULUMI_HOME: process.env.PULUMI_HOME ?? path.join(os.homedir(), ".pulumi"),
    ...(job.env ?? {}),
    // A Python venv is used as `source <venv>/bin/activate` would: its bin first.
    PATH: [
      job.env?.VIRTUAL_ENV && path.join(job.env.VIRTUAL_ENV, "bin"),
      job.node,
      job.binDir,
      job.env?.PATH ?? process.env.PATH,
    ]
      .filter(Boolean)
      .join(path.delimiter),
  };
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(job.binDir, "pulumi"), args, { cwd: job.dir, env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
      if (!quiet) process.stderr.write(d);
    });
    child.stderr.on("data", (d) => {
      stderr += d;
      process.stderr.write(d);
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? "");
  });
}

async function must(job, args, options) {
  const r = await pulumi(job, args, options);
  if (r.code !== 0)
    throw new Error(
      `pulumi ${args.slice(0, 2).join(" ")} failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().split("\n").slice(-3).join(" ")}`,
    );
  return r;
}

/** The engine's last summary event from an --event-log file (an up with a preview has two): { resourceChanges } or undefined. */
function summaryFrom(eventLog) {
  if (!fs.existsSync(eventLog)) return undefined;
  let last;
  for (const line of fs.readFileSync(eventLog, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const event = JSON.parse(line);
    if (event.summaryEvent) last = event.summaryEvent;
  }
  return last;
}

/** Creates the stack unless it exists, selecting nothing (another run in this directory may have selected another). */
async function initStack(job) {
  const r = await pulumi(job, ["stack", "init", "--stack", job.stack, "--no-select", "--non-interactive"], {
    quiet: true,
  });
  // A stack that is locked (a killed run's lock, which `pulumi cancel` is about to remove) exists too.
  if (r.code === 0 || /stack '[^']*' already exists|the stack is currently locked/.test(r.stderr)) return;
  throw new Error(
    `pulumi stack init failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().split("\n").slice(-3).join(" ")}`,
  );
}

/** Stack outputs as { name: { value, secret } }: `stack output --json` shows secrets as "[secret]". */
async function stackOutputs(job) {
  const plainText =
    (await must(job, ["stack", "output", "--json", "--stack", job.stack], { quiet: true })).stdout || "{}";
  const plain = JSON.parse(plainText);
  // With no "[secret]" in them, the outputs are all there is: no second call (each costs about 0.3 s).
  const shown = plainText.includes('"[secret]"')
    ? JSON.parse(
        (await must(job, ["stack", "output", "--json", "--show-secrets", "--stack", job.stack], { quiet: true }))
          .stdout || "{}",
      )
    : plain;
  const outputs = {};
  for (const [name, value] of Object.entries(shown))
    outputs[name] = { value, secret: plain[name] === "[secret]" && value !== "[secret]" };
  return outputs;
}

async function run(job) {
  const started = Date.now();
  // exists: the caller knows the stack is there (it ran an operation on it): no `stack init`.
  if (!job.exists) await initStack(job);
  const config = Object.entries(job.config ?? {});
  const plain = config.filter(([, c]) => !c.secret).flatMap(([key, { value }]) => ["--plaintext", `${key}=${value}`]);
  if (plain.length) await must(job, ["config", "set-all", "--stack", job.stack, ...plain], { quiet: true });
  for (const [key, { value }] of config.filter(([, c]) => c.secret)) {
    // A secret goes through stdin: a command line can be read by anyone on the machine.
    await must(job, ["config", "set", "--stack", job.stack, "--secret", key], { input: value, quiet: true });
  }
  const eventDir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-events-"));
  const eventLog = path.join(eventDir, "events.jsonl");
  const common = ["--stack", job.stack, "--non-interactive", "--color", "never", "--event-log", eventLog];
  if (job.parallel) common.push("--parallel", String(job.parallel));
  if (job.verbose) common.push(`-v=${job.verbose}`, "--logtostderr", "--logflow");
  let args;
  switch (job.op) {
    case "up":
      args = ["up", "--yes", ...(job.withPreview ? [] : ["--skip-preview"]), ...(job.refresh ? ["--refresh"] : [])];
      break;
    case "preview":
      args = [
        "preview",
        ...(job.diff === false ? [] : ["--diff"]),
        ...(job.refresh ? ["--refresh"] : []),
        ...(job.expectNoChanges ? ["--expect-no-changes"] : []),
      ];
      break;
    case "refresh":
      args = [
        "refresh",
        "--yes",
        "--skip-preview",
        ...(job.clearPendingCreates ? ["--clear-pending-creates"] : []),
        ...(job.runProgram ? ["--run-program"] : []),
      ];
      break;
    case "destroy":
      args = [
        "destroy",
        "--yes",
        ...(job.withPreview ? [] : ["--skip-preview"]),
        ...(job.refresh ? ["--refresh"] : []),
      ];
      break;
    case "outputs":
      return { ok: true, outputs: await stackOutputs(job), seconds: (Date.now() - started) / 1000 };
    case "cancel":
      await must(job, ["cancel", "--yes", "--stack", job.stack, "--non-interactive"]);
      return { ok: true, seconds: (Date.now() - started) / 1000 };
    default:
      throw new Error(`unknown op ${job.op}`);
  }
  let r;
  let summary;
  try {
    // stackFirst: `pulumi --stack NAME up …`, as some pipelines write it (the stack named before the command).
    r = await pulumi(
      job,
      job.stackFirst
        ? [...common.slice(0, 2), ...args, ...(job.args ?? []), ...common.slice(2)]
        : [...args, ...(job.args ?? []), ...common],
    );
    summary = summaryFrom(eventLog);
  } finally {
    fs.rmSync(eventDir, { recursive: true, force: true });
  }
  const ok = r.code === 0;
  // Pulumi's output is on our stderr already (the caller keeps it); RESULT stays small.
  const result = {
    ok,
    exitCode: r.code,
    summary: { result: ok ? "succeeded" : "failed", resourceChanges: summary?.resourceChanges ?? {} },
  };
  if (job.op === "preview") result.changeSummary = summary?.resourceChanges ?? {};
  if (!ok) result.error = `pulumi ${job.op} exited with ${r.code}`;
  if (ok && job.op === "up") result.outputs = await stackOutputs(job);
  return { ...result, seconds: (Date.now() - started) / 1000 };
}

/**
 * Runs a job in a child process. With { detached: true } it gets a process group of its own, so
 * that a caller can kill Pulumi with everything it started. Returns { child, done }, done
 * resolving with the parsed RESULT plus { ok, childStderr }.
 */
function spawnJob(job, { detached = false } = {}) {
  // The job goes through stdin: it may hold an API key, and a command line is readable by anyone here.
  const child = spawn(process.execPath, [__filename, "-"], { detached, stdio: ["pipe", "pipe", "pipe"] });
  child.stdin.end(JSON.stringify(job));
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const done = new Promise((resolve) => {
    child.once("close", () => {
      const line = stdout
        .split("\n")
        .reverse()
        .find((l) => l.startsWith("RESULT "));
      const result = line ? JSON.parse(line.slice("RESULT ".length)) : { ok: false, error: "no RESULT line (killed?)" };
      resolve({ ...result, childStderr: stderr });
    });
  });
  return { child, done };
}

module.exports = { run, spawnJob, pulumi };

if (require.main === module) {
  // Ctrl-C in a terminal signals the whole foreground process group, this runner and pulumi: pulumi
  // cancels its run and ends; the runner waits for it and reports, as a shell running `pulumi up` does.
  process.on("SIGINT", () => {});
  const arg = process.argv[2] ?? "";
  let job;
  try {
    job = JSON.parse(arg === "-" ? fs.readFileSync(0, "utf8") : arg);
  } catch {
    process.stderr.write(
      "usage: node scripts/stack.js '<job as JSON>' | - (the job on stdin; see the comment at the top of this file)\n",
    );
    process.exit(2);
  }
  run(job).then(
    // Exit once the line is written: a pipe takes large writes asynchronously.
    (result) => process.stdout.write(`RESULT ${JSON.stringify(result)}\n`, () => process.exit(0)),
    (err) => {
      process.stderr.write(`${err && err.message ? err.message : err}\n`);
      process.stdout.write(
        `RESULT ${JSON.stringify({ ok: false, error: String(err && err.message ? err.message : err) })}\n`,
        () => process.exit(1),
      );
    },
  );
}
