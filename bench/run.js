#!/usr/bin/env node
// `npm run bench [-- --sizes 50,200,500 --keys 3 --latency 20 --rate-rules 300 --skip-rate --models window,bucket --skip-checkpoints
//                    --refresh-rules 500 --refresh-keys 10 --skip-refresh --skip-team --team-rules 100 --per-object-up
//                    --plugin-rules 200 --plugin-set 500 --only refresh,team,plugin]`
// (--skip-checkpoints sets PULUMI_SKIP_CHECKPOINTS=true: Pulumi writes the state once at the end
// instead of after every step; it shows what the per-step checkpoint writes cost.)
// Measures, side by side in one run, against the emulator:
//   1. engine overhead: wall time of up / preview --refresh / destroy for N rules + a few keys, for
//      our package (installed from npm pack), a minimal dynamic provider (bench/baseline.ts, a TypeScript program like ours) on the
//      same engine, and the floor: the same API calls made directly with undici at Pulumi's
//      parallelism, no engine;
//   2. state size per resource, and serialized provider code per resource;
//   3. `up` of many rules under the service's default rate limit (120/60), for each model of the
//      emulator (rolling window, the default; token bucket): time against the model's lower bound,
//      the 429 answers received, and the drift gate (`preview --refresh`) right after it;
//   4. peak memory (VmHWM) of the dynamic-provider process during the largest `up`;
//   5. refresh at the service's 120/60: `preview --refresh` right after the `up` of 500 rules + 10
//      keys, and `up --refresh` with nothing to change, with reads answered from the lists (ours)
//      against one GET per object (ACCESSCTL_READ_MODE=get), and the same preview at --rate-limit off;
//   6. a team: three stacks of 100 rules (--team-rules) deploying at once against one account at 120/60, both models.
//   7. the policy as one resource (IpPolicyRuleSet, examples/office-allowlist) beside per-rule
//      resources (ours, baseline) and the floor: up of --set-rules from empty, preview --refresh, a
//      change of 100 CIDRs (requests counted), destroy, unlimited; up at the emulator's default
//      limit (ratio to its model's lower bound); and --set-large rules in one resource (state size,
//      time). `npm run bench -- --only set` runs this section alone.
//   8. the plugin pulumi-resource-accessctl (@accessctl/pulumi/plugin, installed from the tarball the
//      packed package carries into a PULUMI_HOME of the run's own) beside the dynamic provider, the
//      same programs with their import line changed: up / preview --refresh / destroy of
//      --plugin-rules IpPolicyRule resources and of one IpPolicyRuleSet of --plugin-set rules,
//      unlimited; state bytes per resource; peak memory of the provider process.
//      `npm run bench -- --only plugin` runs this section alone (bench/results-plugin.json).
//   9. accounts of many rules (the API lists every rule of the account: a set walks it all): a set of
//      --account-set rules (examples/office-allowlist) in accounts of --account-sizes rules (the
//      emulator's --seed-rules, on another policy) at --rate-limit off, and of --account-limited rules
//      at the emulator's default limit (120/60, the client's default too): up, preview --refresh,
//      refresh, destroy (wall time, requests, GETs), the provider's peak memory; and one walk of the
//      largest account in this process (time, heap used after). `--only accounts` (bench/results-accounts.json).
//  10. the bound of an operation: up of a set of --bounds-rules rules through a gateway that answers
//      every POST after the first 20 with 429 Retry-After: 60 (as test/helpers/fault-proxy.ts's
//      `skip`/`retryAfter` fault), the client's defaults: when it ends, and its error.
//      `--only bounds` (bench/results-bounds.json).
//  11. memory of one IpPolicyRuleSet of --memory-rules rules (examples/office-allowlist) on each host (the
//      dynamic provider, and the plugin from the packed tarball, as section 8): up from empty, preview
//      --refresh after 2 rules were changed by hand through the API, refresh, destroy, unlimited; for each
//      operation its wall time and the peak resident memory (VmHWM) of the provider process: the node
//      child of pulumi-resource-pulumi-nodejs, or pulumi-resource-accessctl's node. --memory-runs N repeats
//      the whole sequence N times, the hosts interleaved (each figure the median). Beside each host its
//      floor: bench/floor-set.ts, a dynamic provider that does no work for a resource of the same size
//      (what Pulumi's host itself holds), and bench/floor-plugin.js, the plugin's process with a set
//      that does no work; both collect garbage as ours does (provider/memory.ts). --memory-hosts picks
//      of dynamic,floor,plugin,pluginFloor,floorCompact (the dynamic floor with `rules` kept as one
//      text; not by default). `--only memory` (bench/results-memory.json).
//  12. walks of the account at the service's default limit (120/60, the client's default too): a set of
//      --walks-set rules (examples/office-allowlist) in accounts of --walk-sizes rules (default 20000,50000,100000;
//      the emulator's --seed-rules, on another policy): `up` with its preview (as a user runs it), `preview
//      --refresh`, `refresh`, `destroy`; for each the walks (first pages of GET /ip_policy_rules in the
//      emulator's log), requests, wall seconds, the bound of its accepted requests at the window (exactly, given
//      what the window still held of the commands before: bench/window-bound.js), and their ratio.
//      `--only walks` (bench/results-walks.json).
//  13. pipelines sharing an account: --pipelines 1,3,10 stacks at once, each an IpPolicyRuleSet of
//      --pipeline-rules rules (examples/office-allowlist) on its own policy of one account, the
//      emulator's default limit (120 per rolling 60 s) and every client with the whole budget (the
//      default): wall time against the bound of the requests the service accepted (their number / 2
//      per s), the share of answers that were 429, the slowest stack's time over the fastest's;
//      --pipeline-runs N times each, with medians. `--only pipelines` (bench/results-pipelines.json).
// Prints a table and writes bench/results.json.
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const emulatorProcess = require("../scripts/emulator-process");
const { makeProject, packTarball, pluginHome, pulumiBinDir, REPO } = require("../scripts/pack-project");
const { build: buildPlugin, tarballName } = require("../scripts/plugin");
const { spawnJob } = require("../scripts/stack");
const { fmt, table } = require("./table");
const { opBound, requests: logRequests } = require("./window-bound");

function flags(argv) {
  const f = {
    sizes: [50, 200, 500],
    keys: 3,
    latency: 20,
    rateRules: 300,
    skipRate: false,
    skipCheckpoints: false,
    refreshRules: 500,
    refreshKeys: 10,
    skipRefresh: false,
    skipTeam: false,
    teamRules: 100,
    perObjectUp: false,
    skipEmulator: false,
    models: ["window", "bucket"],
    skipSet: false,
    setRules: 500,
    setLarge: 5000,
    setPerRule: true,
    skipPlugin: false,
    pluginRules: 200,
    pluginSet: 500,
    skipAccounts: false,
    accountSizes: [19000, 50000, 100000],
    accountLimited: 19000,
    accountSet: 100,
    skipBounds: false,
    boundsRules: 300,
    skipMemory: false,
    memoryRules: 5000,
    memoryRuns: 1,
    memoryHosts: ["floor", "dynamic", "pluginFloor", "plugin"],
    skipWalks: false,
    walkSizes: [20000, 50000, 100000],
    walksSet: 100,
    skipPipelines: false,
    pipelines: [1, 3, 10],
    pipelineRules: 100,
    pipelineRuns: 3,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--sizes") f.sizes = argv[++i].split(",").map(Number);
    else if (a === "--keys") f.keys = Number(argv[++i]);
    else if (a === "--latency") f.latency = Number(argv[++i]);
    else if (a === "--rate-rules") f.rateRules = Number(argv[++i]);
    else if (a === "--skip-rate") f.skipRate = true;
    else if (a === "--models")
      f.models = argv[++i].split(","); // the emulator's rate-limit models for the rate and team sections
    else if (a === "--skip-checkpoints") f.skipCheckpoints = true;
    else if (a === "--refresh-rules") f.refreshRules = Number(argv[++i]);
    else if (a === "--refresh-keys") f.refreshKeys = Number(argv[++i]);
    else if (a === "--skip-refresh") f.skipRefresh = true;
    else if (a === "--skip-team") f.skipTeam = true;
    else if (a === "--team-rules")
      f.teamRules = Number(argv[++i]); // rules per stack of the team
    else if (a === "--set-rules") f.setRules = Number(argv[++i]);
    else if (a === "--set-large") f.setLarge = Number(argv[++i]);
    else if (a === "--skip-set-per-rule")
      f.setPerRule = false; // the set rows without the per-rule ones beside them
    else if (a === "--plugin-rules") f.pluginRules = Number(argv[++i]);
    else if (a === "--plugin-set") f.pluginSet = Number(argv[++i]);
    else if (a === "--account-sizes") f.accountSizes = argv[++i].split(",").map(Number);
    else if (a === "--account-limited")
      f.accountLimited = Number(argv[++i]); // 0: none at the default limit
    else if (a === "--account-set") f.accountSet = Number(argv[++i]);
    else if (a === "--bounds-rules") f.boundsRules = Number(argv[++i]);
    else if (a === "--memory-rules") f.memoryRules = Number(argv[++i]);
    else if (a === "--memory-runs") f.memoryRuns = Number(argv[++i]);
    else if (a === "--pipelines") f.pipelines = argv[++i].split(",").map(Number);
    else if (a === "--pipeline-rules") f.pipelineRules = Number(argv[++i]);
    else if (a === "--pipeline-runs") f.pipelineRuns = Number(argv[++i]);
    else if (a === "--memory-hosts")
      f.memoryHosts = argv[++i].split(","); // of dynamic,floor,plugin,pluginFloor,floorCompact
    else if (a === "--walk-sizes") f.walkSizes = argv[++i].split(",").map(Number);
    else if (a === "--walks-set") f.walksSet = Number(argv[++i]);
    else if (a === "--per-object-up")
      f.perObjectUp = true; // per-object `up --refresh` too: about 2 GETs per object at 2/s
    else if (a === "--only") {
      // e.g. --only refresh,team: just those sections
      const only = argv[++i].split(",");
      if (!only.includes("engine")) f.sizes = [];
      f.skipRate = !only.includes("rate");
      f.skipRefresh = !only.includes("refresh");
      f.skipTeam = !only.includes("team");
      f.skipEmulator = !only.includes("emulator");
      f.skipSet = !only.includes("set");
      f.skipPlugin = !only.includes("plugin");
      f.skipAccounts = !only.includes("accounts");
      f.skipBounds = !only.includes("bounds");
      f.skipMemory = !only.includes("memory");
      f.skipWalks = !only.includes("walks");
      f.skipPipelines = !only.includes("pipelines");
    } else throw new Error(`unknown flag ${a}`);
  }
  return f;
}

async function startEmulator(args) {
  const { child, startup, stderr } = await emulatorProcess.startEmulator(args);
  return { child, stderr, ...startup };
}
const stopEmulator = (emu) =>
  new Promise((r) => {
    if (process.env.BENCH_EMULATOR_LOG) fs.appendFileSync(process.env.BENCH_EMULATOR_LOG, emu.stderr()); // the emulator's request log, to study a run
    emu.child.once("exit", r);
    emu.child.kill("SIGTERM");
  });
const stats = async (emu) => (await fetch(`${emu.url}/_emulator/stats`)).json();
/** Seconds from the first to the last request the emulator logged (its log lines start with the time): the run without the engine's start and end. */
function requestSpan(emu) {
  const times = emu
    .stderr()
    .split("\n")
    .filter((l) => / (GET|POST|PUT|PATCH|DELETE) \//.test(l))
    .map((l) => Date.parse(l.slice(0, 24)));
  return times.length ? (Math.max(...times) - Math.min(...times)) / 1000 : 0;
}

/** One Pulumi operation through scripts/stack.js; returns wall seconds (process start to end). */
async function pulumi(job) {
  const started = process.hrtime.bigint();
  const result = await spawnJob(job).done;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (!result.ok) throw new Error(`${job.op} failed: ${result.error}\n${result.childStderr.slice(-3000)}`);
  return { seconds, result };
}

/** The emulator flags of the unlimited measurements, and our client's limiter lifted to match. */
const unlimitedEmulator = (f) => ["--rate-limit", "off", "--latency", String(f.latency)];
const UNLIMITED_CLIENT = { ACCESSCTL_MAX_REQUESTS_PER_MINUTE: "1000000" };

/**
 * The set-up of every measurement: an emulator started with `emuArgs` (its limits; a function of the
 * session's directory when the emulator keeps its data there), a fresh directory for the file backend,
 * and jobs on `project` that reach the emulator with its admin token, `env` added. Runs fn(session),
 * then stops the emulator and removes the directory.
 */
async function withSession(ctx, { emuArgs = [], project, env = {} }, fn) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-bench-"));
  const s = {
    dir,
    emu: undefined,
    /** A job for scripts/stack.js; `extra`: its other fields (refresh, env added, another backend directory). */
    job: (stack, op, config, { env: more = {}, backend = dir, ...extra } = {}) => ({
      dir: project,
      stack,
      op,
      binDir: ctx.binDir,
      backend: `file://${backend}`,
      config,
      env: { ACCESSCTL_API_URL: s.emu.url, ACCESSCTL_API_KEY: s.emu.adminToken, ...env, ...more },
      ...extra,
    }),
    /** One operation, with what the emulator answered during it: requests, 429s, and answers by method and status class. */
    run: async (stack, op, config, extra) => {
      const before = await stats(s.emu);
      const { seconds, result } = await pulumi(s.job(stack, op, config, extra));
      const after = await stats(s.emu);
      const byMethod = Object.fromEntries(
        Object.entries(after.byMethod ?? {}).map(([k, v]) => [k, v - (before.byMethod?.[k] ?? 0)]),
      );
      return {
        seconds,
        result,
        requests: after.requests - before.requests,
        rateLimited429: (after.byStatus["429"] ?? 0) - (before.byStatus["429"] ?? 0),
        byMethod,
      };
    },
    restart: async (args) => {
      await stopEmulator(s.emu);
      s.emu = await startEmulator(args);
    },
    stateFile: (stack) => path.join(dir, ".pulumi", "stacks", "accessctl-bench", `${stack}.json`),
  };
  try {
    s.emu = await startEmulator(typeof emuArgs === "function" ? emuArgs(dir) : emuArgs);
    return await fn(s);
  } finally {
    if (s.emu) await stopEmulator(s.emu);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Config of examples/many-rules: `rules` (a count of generated ranges, or a list of CIDRs) over the emulator's policies, and `keys` API keys. */
const manyRules = (emu, rules, keys) => ({
  ipPolicyIds: { value: JSON.stringify(emu.fixtures.ipPolicies) },
  ...(Array.isArray(rules) ? { cidrs: { value: JSON.stringify(rules) } } : { count: { value: String(rules) } }),
  apiKeys: { value: String(keys) },
});

/** The API called directly with undici, `parallel` calls at once: the floor, no engine. */
function directClient(emu, parallel) {
  const { Agent, request } = require(path.join(REPO, "node_modules/undici"));
  const agent = new Agent({ connections: 64 });
  const headers = {
    authorization: `Bearer ${emu.adminToken}`,
    "service-version": "2",
    "content-type": "application/json",
  };
  const call = async (method, p, body) => {
    const res = await request(p.startsWith("http") ? p : emu.url + p, {
      method,
      headers,
      body: body && JSON.stringify(body),
      dispatcher: agent,
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${p}: ${res.statusCode} ${text}`);
    return text && JSON.parse(text);
  };
  const pool = async (items, fn) => {
    const queue = [...items];
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        while (queue.length) await fn(queue.shift());
      }),
    );
  };
  return { call, pool, close: () => agent.close() };
}
const timed = async (fn) => {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e9;
};

/**
 * Samples the peak resident memory (VmHWM) of provider processes until stopped: those whose command
 * line holds `marker` (the dynamic-provider host's, or the plugin's script) and, with `home`, whose
 * PULUMI_HOME is that one (ours, not another run's on the same machine).
 */
function watchProviderMemory(marker = "dynamic-provider", home, everyMs = 100) {
  let peakKb = 0;
  const timer = setInterval(() => {
    for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
      try {
        if (!fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker)) continue;
        if (home && !fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(`PULUMI_HOME=${home}`))
          continue;
        const hwm = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
        if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
      } catch {
        // the process ended between listing and reading
      }
    }
  }, everyMs);
  return () => {
    clearInterval(timer);
    return peakKb;
  };
}

/** The script the plugin's launcher runs: what its process's command line holds. */
const PLUGIN_PROCESS = "pulumi-resource-accessctl.js";
/** Our resources in a checkpoint: the dynamic provider's, or the plugin's (accessctl:index:…). */
const ourResources = (state) =>
  state.resources.filter((r) => r.type.startsWith("pulumi-nodejs:dynamic/") || r.type.startsWith("accessctl:"));

/**
 * 1, 2, 4. up / preview --refresh / destroy of `n` rules + `keys` keys with one variant (ours, baseline;
 * plugin: the same program on @accessctl/pulumi/plugin); state and provider code sizes; peak memory.
 * `more`: environment for every operation (PULUMI_HOME with the plugin installed).
 */
async function measureEngine(ctx, variant, n, keys, more = {}) {
  const env = { ...UNLIMITED_CLIENT, ...(ctx.f.skipCheckpoints ? { PULUMI_SKIP_CHECKPOINTS: "true" } : {}), ...more };
  return withSession(ctx, { emuArgs: unlimitedEmulator(ctx.f), project: ctx.projects[variant], env }, async (s) => {
    const stack = `${variant}-${n}`;
    const config = manyRules(s.emu, n, keys);
    const stopWatch = watchProviderMemory(variant === "plugin" ? PLUGIN_PROCESS : undefined, more.PULUMI_HOME);
    const up = await pulumi(s.job(stack, "up", config));
    const peakKb = stopWatch();
    const stateBytes = fs.statSync(s.stateFile(stack)).size;
    const state = JSON.parse(fs.readFileSync(s.stateFile(stack), "utf8")).checkpoint.latest;
    const ours = ourResources(state);
    const providerBytes = ours.reduce(
      (sum, r) => sum + (r.inputs.__provider ?? "").length + (r.outputs.__provider ?? "").length,
      0,
    );
    const preview = await pulumi(s.job(stack, "preview", config, { refresh: true }));
    const changes = preview.result.changeSummary;
    if (Object.keys(changes).some((k) => k !== "same"))
      throw new Error(`${variant}: preview --refresh found changes: ${JSON.stringify(changes)}`);
    const destroy = await pulumi(s.job(stack, "destroy", config));
    return {
      up: up.seconds,
      previewRefresh: preview.seconds,
      destroy: destroy.seconds,
      resources: ours.length,
      stateBytesPerResource: Math.round(stateBytes / ours.length),
      providerBytesPerResource: Math.round(providerBytes / ours.length),
      providerPeakRssMb: Math.round(peakKb / 1024),
    };
  });
}

/** The same API calls with undici at Pulumi's default parallelism (4 per core), no engine. */
async function measureFloor(ctx, n) {
  const parallel = os.availableParallelism() * 4;
  return withSession(ctx, { emuArgs: unlimitedEmulator(ctx.f) }, async (s) => {
    const { call, pool, close } = directClient(s.emu, parallel);
    try {
      const bodies = [
        ...Array.from({ length: n }, (_, i) => [
          "/ip_policy_rules",
          {
            ip_policy_id: s.emu.fixtures.ipPolicies[i % 2],
            cidr: `10.${Math.floor(i / 256) % 256}.${i % 256}.0/24`,
            action: "allow",
            description: `generated rule ${i + 1} of ${n}`,
          },
        ]),
        ...Array.from({ length: ctx.f.keys }, (_, i) => ["/api_keys", { description: `CI key ${i + 1}` }]),
      ];
      const created = [];
      const up = await timed(() =>
        pool(bodies, async ([p, body]) => created.push(`${p}/${(await call("POST", p, body)).id}`)),
      );
      const previewRefresh = await timed(() => pool(created, (p) => call("GET", p)));
      const destroy = await timed(() => pool(created, (p) => call("DELETE", p)));
      return { up, previewRefresh, destroy, parallel };
    } finally {
      await close();
    }
  });
}

function printEngine(rows, f) {
  console.log(`\nemulator --rate-limit off --latency ${f.latency}\n`);
  const ops = ["up", "previewRefresh", "destroy"];
  table(
    ["N rules + keys", "op", "ours s", "baseline s", "floor s", "ours/baseline", "ours/floor", "ours ms/resource"],
    rows.flatMap((r) =>
      ops.map((op) => [
        `${r.n} + ${r.keys}`,
        op,
        fmt(r.ours[op]),
        fmt(r.baseline[op]),
        fmt(r.floor[op], 2),
        fmt(r.ours[op] / r.baseline[op], 2),
        fmt(r.ours[op] / r.floor[op], 1),
        fmt((r.ours[op] * 1000) / (r.n + r.keys), 1),
      ]),
    ),
  );
  console.log("");
  table(
    [
      "N",
      "state bytes/resource ours",
      "baseline",
      "provider code bytes/resource ours",
      "baseline",
      "provider peak RSS MB ours",
      "baseline",
    ],
    rows.map((r) => [
      r.n,
      r.ours.stateBytesPerResource,
      r.baseline.stateBytesPerResource,
      r.ours.providerBytesPerResource,
      r.baseline.providerBytesPerResource,
      r.ours.providerPeakRssMb,
      r.baseline.providerPeakRssMb,
    ]),
  );
}

/** The least time `requests` requests take at the service's 120/60, by the emulator's model. */
function rateLowerBound(model, requests) {
  return model === "bucket" ? Math.max(0, (requests - 120) / 2) : 60 * Math.floor(Math.max(0, requests - 1) / 120);
}

/** 3. `up` of many rules at the service's 120/60 (rolling window, or token bucket), then the drift gate (`preview --refresh`) right after it. */
async function measureRateLimit(ctx, model) {
  const rules = ctx.f.rateRules;
  const stack = `rate-${model}`;
  // The service's default: 120 requests per 60 s per account.
  return withSession(ctx, { emuArgs: ["--rate-limit-model", model], project: ctx.projects.ours }, async (s) => {
    const config = manyRules(s.emu, rules, 0);
    let ok = true;
    let error;
    let seconds = 0;
    try {
      seconds = (await pulumi(s.job(stack, "up", config))).seconds;
    } catch (e) {
      ok = false;
      error = String(e.message).slice(0, 500);
    }
    const st = await stats(s.emu);
    const r = {
      model,
      rules,
      seconds,
      requestSpanSeconds: requestSpan(s.emu),
      lowerBoundSeconds: rateLowerBound(model, rules),
      requests: st.requests,
      rateLimited429: st.byStatus["429"] ?? 0,
      ok,
      error,
    };
    process.stderr.write(
      `bench: rate ${model}: up of ${rules} rules: ${seconds.toFixed(1)} s (bound ${r.lowerBoundSeconds} s), ${st.requests} requests, ${r.rateLimited429} × 429\n`,
    );
    if (ok) {
      const preview = await s.run(stack, "preview", config, { refresh: true });
      r.driftGate = {
        seconds: preview.seconds,
        requests: preview.requests,
        rateLimited429: preview.rateLimited429,
        changes: preview.result.changeSummary,
      };
      process.stderr.write(
        `bench: rate ${model}: preview --refresh after it: ${preview.seconds.toFixed(1)} s, ${r.driftGate.requests} requests, ${r.driftGate.rateLimited429} × 429\n`,
      );
    }
    return r;
  });
}

/** 6. Three stacks of --team-rules rules, one file backend each, deploying at once against one account at 120/60 (rolling window, or token bucket). */
async function measureTeam(ctx, model) {
  const perStack = ctx.f.teamRules;
  return withSession(ctx, { emuArgs: ["--rate-limit-model", model], project: ctx.projects.ours }, async (s) => {
    const jobs = [0, 1, 2].map((i) => {
      const backend = path.join(s.dir, `team-${i}`);
      fs.mkdirSync(backend);
      return s.job(
        `team-${i}`,
        "up",
        manyRules(
          s.emu,
          Array.from({ length: perStack }, (_, j) => `10.${100 + i}.${j}.0/24`),
          0,
        ),
        { backend },
      );
    });
    const started = process.hrtime.bigint();
    const results = await Promise.all(jobs.map((job) => spawnJob(job).done));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const st = await stats(s.emu);
    const total = perStack * 3;
    process.stderr.write(
      `bench: team ${model}: ${seconds.toFixed(1)} s (bound ${rateLowerBound(model, total)} s), ${st.requests} requests, ${st.byStatus["429"] ?? 0} × 429\n`,
    );
    return {
      model,
      stacks: 3,
      perStack,
      seconds,
      requestSpanSeconds: requestSpan(s.emu),
      lowerBoundSeconds: rateLowerBound(model, total),
      requests: st.requests,
      rateLimited429: st.byStatus["429"] ?? 0,
      ok: results.every((r) => r.ok),
      errors: results.filter((r) => !r.ok).map((r) => String(r.error).slice(0, 300)),
    };
  });
}

/** The rate table: the single `up`s with their drift gates, and the teams. */
function printRate(rateLimit, team) {
  console.log(
    "\nRate limit 120/60 per account, by the emulator's model (window: rolling 60 s, the default; bucket: burst 120, then 2/s):",
  );
  const ratio = (m) =>
    `${fmt(m.seconds / m.lowerBoundSeconds, 2)} (${fmt(m.requestSpanSeconds / m.lowerBoundSeconds, 2)})`;
  table(
    ["model", "run", "seconds", "first to last request s", "lower bound s", "ratio", "requests", "429"],
    [
      ...rateLimit.flatMap((r) => [
        [
          r.model,
          `up of ${r.rules} rules${r.ok ? "" : ` FAILED: ${r.error}`}`,
          fmt(r.seconds),
          fmt(r.requestSpanSeconds),
          fmt(r.lowerBoundSeconds, 0),
          ratio(r),
          r.requests,
          r.rateLimited429,
        ],
        ...(r.driftGate
          ? [
              [
                r.model,
                "preview --refresh right after it",
                fmt(r.driftGate.seconds),
                "",
                "",
                "",
                r.driftGate.requests,
                r.driftGate.rateLimited429,
              ],
            ]
          : []),
      ]),
      ...team.map((t) => [
        t.model,
        `${t.stacks} stacks × ${t.perStack} rules at once${t.ok ? "" : ` FAILED: ${t.errors.join("; ")}`}`,
        fmt(t.seconds),
        fmt(t.requestSpanSeconds),
        fmt(t.lowerBoundSeconds, 0),
        ratio(t),
        t.requests,
        `${t.rateLimited429} (${fmt((100 * t.rateLimited429) / t.requests)}%)`,
      ]),
    ],
  );
}

/**
 * 5. Refresh at the service's limit. The emulator keeps its data in a file and a fixed admin token,
 * so that the same account can be served again at --rate-limit off for the comparison.
 */
async function measureRefresh(ctx) {
  const { f } = ctx;
  const n = f.refreshRules;
  const token = `bench-admin-${Date.now()}-0123456789`;
  const emuArgs = (dir) => ["--data", path.join(dir, "emulator.json"), "--admin-token", token];
  return withSession(ctx, { emuArgs, project: ctx.projects.ours }, async (s) => {
    const run = async (op, refresh, readMode) => {
      const m = await s.run("refresh", op, manyRules(s.emu, n, f.refreshKeys), {
        refresh,
        env: readMode ? { ACCESSCTL_READ_MODE: readMode } : {},
      });
      const changes = m.result.changeSummary ?? m.result.summary?.resourceChanges;
      if (op === "preview" || refresh) {
        if (Object.keys(changes ?? {}).some((k) => k !== "same"))
          throw new Error(`${op}: expected no changes, got ${JSON.stringify(changes)}`);
      }
      process.stderr.write(
        `bench: refresh: ${op}${refresh ? " --refresh" : ""} ${readMode ?? "list"}: ${m.seconds.toFixed(1)} s, ${m.requests} requests, ${m.rateLimited429} × 429\n`,
      );
      return { seconds: m.seconds, requests: m.requests, rateLimited429: m.rateLimited429 };
    };
    const up = await run("up", false);
    const r = { rules: n, keys: f.refreshKeys, up };
    r.previewList = await run("preview", true); // right after the up: the account's budget is spent
    r.upRefreshList = await run("up", true);
    r.previewGet = await run("preview", true, "get");
    if (f.perObjectUp) r.upRefreshGet = await run("up", true, "get");
    // The same port: the objects' URIs (in their outputs) stay the same, so the preview shows no diffs.
    await s.restart([...emuArgs(s.dir), "--rate-limit", "off", "--port", new URL(s.emu.url).port]);
    r.previewListOff = await run("preview", true);
    r.previewGetOff = await run("preview", true, "get");
    await run("destroy", false);
    return r;
  });
}

function printRefresh(r) {
  const pages = Math.ceil(r.rules / 100);
  console.log(
    `\nRefresh of ${r.rules} rules + ${r.keys} keys, emulator at 120/60 (right after the up: ${fmt(r.up.seconds)} s, ${r.up.requests} requests):`,
  );
  const rows = [
    [
      "preview --refresh",
      "list",
      r.previewList,
      `≤ ${2 * pages + 10} requests, ≤ 1.2 × ${fmt(r.previewListOff.seconds)} s = ${fmt(1.2 * r.previewListOff.seconds)} s`,
    ],
    ["preview --refresh", "GET each", r.previewGet, ""],
    ["up --refresh, no changes", "list", r.upRefreshList, `≤ ${4 * pages + 20} requests, no 429`],
    ["up --refresh, no changes", "GET each", r.upRefreshGet, ""],
    ["preview --refresh at --rate-limit off", "list", r.previewListOff, ""],
    ["preview --refresh at --rate-limit off", "GET each", r.previewGetOff, ""],
  ];
  table(
    ["operation", "reads", "seconds", "requests", "429", "target"],
    rows
      .filter(([, , m]) => m)
      .map(([op, reads, m, target]) => [op, reads, fmt(m.seconds), m.requests, m.rateLimited429, target]),
  );
}

/** The emulator's default model of its limit (the service's documented rolling window). */
const RATE_MODEL = "window";

/** `count` CIDRs 10.{second+⌊i/250⌋}.{i%250}.0/24. */
const setCidrs = (count, second = 0) =>
  Array.from({ length: count }, (_, i) => `10.${second + Math.floor(i / 250)}.${i % 250}.0/24`);

/** 7. IpPolicyRuleSet: one resource for a whole policy. */
async function measureSet(ctx) {
  const { f } = ctx;
  const n = f.setRules;
  const r = { rules: n };
  const session = (emuArgs, env, fn) => withSession(ctx, { emuArgs, project: ctx.projects.set, env }, fn);
  const run = async (s, stack, op, cidrs, extra) => {
    const { seconds, result, requests, byMethod, rateLimited429 } = await s.run(
      stack,
      op,
      { ipPolicyId: { value: s.emu.fixtures.ipPolicies[0] }, allow: { value: JSON.stringify(cidrs) } },
      extra,
    );
    const m = {
      seconds,
      requests,
      post: byMethod["POST 2xx"] ?? 0,
      patch: byMethod["PATCH 2xx"] ?? 0,
      delete: byMethod["DELETE 2xx"] ?? 0,
      rateLimited429,
    };
    if (op === "preview" && Object.keys(result.changeSummary ?? {}).some((k) => k !== "same"))
      throw new Error(`set: preview --refresh found changes: ${JSON.stringify(result.changeSummary)}`);
    process.stderr.write(
      `bench: set: ${op} of ${cidrs.length}: ${seconds.toFixed(1)} s, ${m.requests} requests (POST ${m.post}, PATCH ${m.patch}, DELETE ${m.delete}), ${m.rateLimited429} × 429\n`,
    );
    return m;
  };

  r.unlimited = await session(unlimitedEmulator(f), UNLIMITED_CLIENT, async (s) => {
    const cidrs = setCidrs(n);
    const changed = [...setCidrs(n - 100), ...setCidrs(100, 200)]; // the last 100 CIDRs replaced by others of the same action
    const out = { up: await run(s, "set", "up", cidrs) };
    out.stateBytes = fs.statSync(s.stateFile("set")).size;
    out.previewRefresh = await run(s, "set", "preview", cidrs, { refresh: true });
    out.change100 = await run(s, "set", "up", changed);
    out.destroy = await run(s, "set", "destroy", changed);
    return out;
  });
  r.floor = await measureSetFloor(ctx);
  if (f.setPerRule) {
    process.stderr.write(`bench: set: per-rule resources, N=${n}, for comparison…\n`);
    r.perRule = { ours: await measureEngine(ctx, "ours", n, 0), baseline: await measureEngine(ctx, "baseline", n, 0) };
  }
  r.limited = await session([], {}, async (s) => {
    const up = await run(s, "set-limited", "up", setCidrs(n));
    up.model = RATE_MODEL;
    up.lowerBoundSeconds = rateLowerBound(RATE_MODEL, up.requests);
    await run(s, "set-limited", "destroy", setCidrs(n)).catch((e) =>
      process.stderr.write(`bench: set: destroy at the limit failed: ${e.message}\n`),
    );
    return up;
  });
  if (f.setLarge) {
    r.large = await session(["--rate-limit", "off"], UNLIMITED_CLIENT, async (s) => {
      const cidrs = setCidrs(f.setLarge);
      const out = { rules: f.setLarge, up: await run(s, "set-large", "up", cidrs) };
      out.stateBytes = fs.statSync(s.stateFile("set-large")).size;
      out.previewRefresh = await run(s, "set-large", "preview", cidrs, { refresh: true });
      out.destroy = await run(s, "set-large", "destroy", cidrs);
      return out;
    });
  }
  return r;
}

/** The set's calls made directly, 16 at once (the set's concurrency), no engine. */
async function measureSetFloor(ctx) {
  const n = ctx.f.setRules;
  return withSession(ctx, { emuArgs: unlimitedEmulator(ctx.f) }, async (s) => {
    const { call, pool, close } = directClient(s.emu, 16);
    const list = async () => {
      for (let next = "/ip_policy_rules"; next;) next = (await call("GET", next)).next_page_uri;
    };
    try {
      const ids = [];
      const p = s.emu.fixtures.ipPolicies[0];
      const up = await timed(() =>
        pool(setCidrs(n), async (cidr) =>
          ids.push((await call("POST", "/ip_policy_rules", { ip_policy_id: p, cidr, action: "allow" })).id),
        ),
      );
      const previewRefresh = await timed(list);
      const moved = setCidrs(100, 200);
      const change100 = await timed(() =>
        pool(
          ids.slice(0, 100).map((id, i) => [id, moved[i]]),
          ([id, cidr]) => call("PATCH", `/ip_policy_rules/${id}`, { cidr }),
        ),
      );
      const destroy = await timed(() => pool(ids, (id) => call("DELETE", `/ip_policy_rules/${id}`)));
      return { up, previewRefresh, change100, destroy };
    } finally {
      await close();
    }
  });
}

function printSet(r, f) {
  const u = r.unlimited;
  const fl = r.floor;
  const pr = r.perRule;
  console.log(
    `\nIpPolicyRuleSet of ${r.rules} rules, emulator --rate-limit off --latency ${f.latency} (per-rule: ${r.rules} IpPolicyRule resources; floor: the set's calls made directly, 16 at once):`,
  );
  const row = (label, m, floor, ours, base) => [
    label,
    fmt(m.seconds),
    fmt(ours ?? "–"),
    fmt(base ?? "–"),
    fmt(floor, 2),
    fmt(m.seconds / floor, 1),
    base ? fmt(m.seconds / base, 2) : "–",
    `${m.requests} (${m.post}/${m.patch}/${m.delete})`,
  ];
  table(
    [
      "operation",
      "set s",
      "per-rule ours s",
      "per-rule baseline s",
      "floor s",
      "set/floor",
      "set/baseline",
      "requests (POST/PATCH/DELETE)",
    ],
    [
      row(`up of ${r.rules} from empty`, u.up, fl.up, pr?.ours.up, pr?.baseline.up),
      row(
        "preview --refresh",
        u.previewRefresh,
        fl.previewRefresh,
        pr?.ours.previewRefresh,
        pr?.baseline.previewRefresh,
      ),
      row("change of 100 CIDRs (same action)", u.change100, fl.change100),
      row("destroy", u.destroy, fl.destroy, pr?.ours.destroy, pr?.baseline.destroy),
    ],
  );
  console.log(
    `state: ${u.stateBytes} bytes for the set of ${r.rules} rules${pr ? ` (per-rule ours: ${pr.ours.stateBytesPerResource * r.rules} bytes)` : ""}`,
  );
  const l = r.limited;
  console.log(
    `At the emulator's default limit: up of ${r.rules}: ${fmt(l.seconds)} s, ${l.requests} requests, ${l.rateLimited429} answered 429; lower bound (${l.model} model) ${fmt(l.lowerBoundSeconds)} s; ratio ${fmt(l.seconds / Math.max(l.lowerBoundSeconds, 1e-9), 2)}`,
  );
  if (r.large)
    console.log(
      `${r.large.rules} rules in one set: up ${fmt(r.large.up.seconds)} s (${r.large.up.requests} requests), preview --refresh ${fmt(r.large.previewRefresh.seconds)} s (${r.large.previewRefresh.requests} requests), destroy ${fmt(r.large.destroy.seconds)} s; state ${r.large.stateBytes} bytes`,
    );
}

/** up / preview --refresh / destroy of one IpPolicyRuleSet of `n` rules on the project `variant` (set, pluginSet), unlimited; its checkpoint's size and the provider's peak memory. */
async function measureSetOnce(ctx, variant, n, more) {
  return withSession(
    ctx,
    { emuArgs: unlimitedEmulator(ctx.f), project: ctx.projects[variant], env: { ...UNLIMITED_CLIENT, ...more } },
    async (s) => {
      const config = {
        ipPolicyId: { value: s.emu.fixtures.ipPolicies[0] },
        allow: { value: JSON.stringify(setCidrs(n)) },
      };
      const stopWatch = watchProviderMemory(variant === "pluginSet" ? PLUGIN_PROCESS : undefined, more.PULUMI_HOME);
      const up = await s.run(variant, "up", config);
      const peakKb = stopWatch();
      const stateBytes = fs.statSync(s.stateFile(variant)).size;
      const ours = ourResources(JSON.parse(fs.readFileSync(s.stateFile(variant), "utf8")).checkpoint.latest);
      const preview = await s.run(variant, "preview", config, { refresh: true });
      if (Object.keys(preview.result.changeSummary ?? {}).some((k) => k !== "same"))
        throw new Error(`${variant}: preview --refresh found changes: ${JSON.stringify(preview.result.changeSummary)}`);
      const destroy = await s.run(variant, "destroy", config);
      const providerBytes = ours.reduce(
        (sum, r) => sum + (r.inputs.__provider ?? "").length + (r.outputs.__provider ?? "").length,
        0,
      );
      return {
        up: up.seconds,
        previewRefresh: preview.seconds,
        destroy: destroy.seconds,
        requests: { up: up.requests, previewRefresh: preview.requests, destroy: destroy.requests },
        resources: ours.length,
        stateBytes,
        stateBytesPerResource: Math.round(stateBytes / ours.length),
        providerBytesPerResource: Math.round(providerBytes / ours.length),
        providerPeakRssMb: Math.round(peakKb / 1024),
      };
    },
  );
}

/**
 * 8. The plugin beside the dynamic provider: the same programs (examples/many-rules, examples/office-allowlist),
 * the plugin's with @accessctl/pulumi/plugin, both with a PULUMI_HOME of the run's own where the plugin is
 * installed from the tarball the packed package carries, as users install it.
 */
async function measurePlugin(ctx) {
  const { f } = ctx;
  const tarball = path.join(ctx.projects.plugin, "node_modules/@accessctl/pulumi/dist", tarballName());
  const home = pluginHome(ctx.binDir, tarball);
  const log = (text) => process.stderr.write(`bench: plugin: ${text}…\n`);
  try {
    const r = { rules: f.pluginRules, setRules: f.pluginSet, tarball: path.basename(tarball), dynamic: {}, plugin: {} };
    log(`${f.pluginRules} IpPolicyRule, dynamic provider`);
    r.dynamic.rules = await measureEngine(ctx, "ours", f.pluginRules, 0, home.env);
    log(`${f.pluginRules} IpPolicyRule, plugin`);
    r.plugin.rules = await measureEngine(ctx, "plugin", f.pluginRules, 0, home.env);
    log(`IpPolicyRuleSet of ${f.pluginSet}, dynamic provider`);
    r.dynamic.set = await measureSetOnce(ctx, "set", f.pluginSet, home.env);
    log(`IpPolicyRuleSet of ${f.pluginSet}, plugin`);
    r.plugin.set = await measureSetOnce(ctx, "pluginSet", f.pluginSet, home.env);
    return r;
  } finally {
    home.cleanup();
  }
}

function printPlugin(r, f) {
  console.log(`\nThe plugin beside the dynamic provider, emulator --rate-limit off --latency ${f.latency}:`);
  const shapes = [
    [`${r.rules} IpPolicyRule`, "rules"],
    [`IpPolicyRuleSet of ${r.setRules}`, "set"],
  ];
  const ops = [
    ["up", "up"],
    ["preview --refresh", "previewRefresh"],
    ["destroy", "destroy"],
  ];
  table(
    ["resources", "operation", "dynamic s", "plugin s", "plugin/dynamic"],
    shapes.flatMap(([label, k]) =>
      ops.map(([op, m]) => [
        label,
        op,
        fmt(r.dynamic[k][m]),
        fmt(r.plugin[k][m]),
        fmt(r.plugin[k][m] / r.dynamic[k][m], 2),
      ]),
    ),
  );
  console.log("");
  table(
    [
      "resources",
      "state bytes/resource, dynamic",
      "plugin",
      "plugin/dynamic",
      "provider code bytes/resource, dynamic",
      "plugin",
      "provider peak RSS MB, dynamic",
      "plugin",
    ],
    shapes.map(([label, k]) => [
      label,
      r.dynamic[k].stateBytesPerResource,
      r.plugin[k].stateBytesPerResource,
      fmt(r.plugin[k].stateBytesPerResource / r.dynamic[k].stateBytesPerResource, 2),
      r.dynamic[k].providerBytesPerResource,
      r.plugin[k].providerBytesPerResource,
      r.dynamic[k].providerPeakRssMb,
      r.plugin[k].providerPeakRssMb,
    ]),
  );
}

/**
 * The projects as users have them, all named accessctl-bench, with our packed package: examples/many-rules
 * (ours), the baseline provider's program, and examples/office-allowlist (set); with `plugin`, the first
 * and the last again on @accessctl/pulumi/plugin (plugin, pluginSet).
 */
/**
 * 9. A set of f.accountSet rules in an account that holds `size` more (seeded on another policy):
 * up, preview --refresh, refresh, destroy, each with its requests and GETs (pages walked, and any GET
 * of one rule), and the provider's peak memory over the four.
 */
async function measureAccount(ctx, size, limited) {
  const f = ctx.f;
  const emuArgs = [...(limited ? [] : ["--rate-limit", "off"]), "--seed-rules", String(size)];
  return withSession(ctx, { emuArgs, project: ctx.projects.set, env: limited ? {} : UNLIMITED_CLIENT }, async (s) => {
    const config = {
      ipPolicyId: { value: s.emu.fixtures.ipPolicies[0] },
      allow: { value: JSON.stringify(setCidrs(f.accountSet)) },
    };
    const stopWatch = watchProviderMemory();
    const out = { size, limited, set: f.accountSet };
    for (const [name, op, extra] of [
      ["up", "up"],
      ["previewRefresh", "preview", { refresh: true }],
      ["refresh", "refresh"],
      ["destroy", "destroy"],
    ]) {
      const m = await s.run("accounts", op, config, extra);
      out[name] = {
        seconds: m.seconds,
        requests: m.requests,
        gets: (m.byMethod["GET 2xx"] ?? 0) + (m.byMethod["GET 4xx"] ?? 0),
        rateLimited429: m.rateLimited429,
      };
      process.stderr.write(
        `bench: accounts: ${size} rules${limited ? " at 120/60" : ""}: ${op}${extra ? " --refresh" : ""}: ${m.seconds.toFixed(1)} s, ${m.requests} requests\n`,
      );
    }
    out.providerPeakRssMb = Math.round(stopWatch() / 1024);
    return out;
  });
}

/** One walk of an account of `size` rules in this process (the provider's own modules): time, requests, heap used after. */
async function measureWalk(ctx, size) {
  return withSession(ctx, { emuArgs: ["--rate-limit", "off", "--seed-rules", String(size)] }, async (s) => {
    const v8 = require("node:v8");
    const vm = require("node:vm");
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc");
    const config = require(path.join(REPO, "dist/provider/config.js"));
    const listReads = require(path.join(REPO, "dist/provider/list-reads.js"));
    const { counters } = require(path.join(REPO, "dist/provider/http/api.js"));
    await config.configure({
      config: {
        get: (k) =>
          ({
            "accessctl:apiUrl": s.emu.url,
            "accessctl:apiKey": s.emu.adminToken,
            "accessctl:maxRequestsPerMinute": "1000000",
          })[k],
      },
    });
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const requestsBefore = counters().requests;
    const t = process.hrtime.bigint();
    const walked = await listReads.policyRulesOf(undefined, s.emu.fixtures.ipPolicies[0], { what: "bench walk" });
    const seconds = Number(process.hrtime.bigint() - t) / 1e9;
    gc();
    const heapAfterMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20; // what the walk kept (the cache holds it)
    return {
      size,
      seconds,
      requests: counters().requests - requestsBefore,
      found: walked.length,
      heapKeptMb: Math.round(heapAfterMb * 10) / 10,
      heapUsedMb: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
    };
  });
}

async function measureAccounts(ctx) {
  const f = ctx.f;
  const r = { unlimited: [], limited: undefined, walk: undefined };
  for (const size of f.accountSizes) {
    r.unlimited.push(await measureAccount(ctx, size, false));
  }
  if (f.accountSizes.length) r.walk = await measureWalk(ctx, Math.max(...f.accountSizes));
  if (f.accountLimited) r.limited = await measureAccount(ctx, f.accountLimited, true);
  return r;
}

function printAccounts(r, f) {
  console.log(
    `\nA set of ${f.accountSet} rules (examples/office-allowlist) in an account of N other rules (emulator --seed-rules N); wall s / requests (GETs):`,
  );
  const cell = (m) => `${fmt(m.seconds)} / ${m.requests} (${m.gets})`;
  table(
    ["account", "up", "preview --refresh", "refresh", "destroy", "provider peak RSS MB"],
    [...r.unlimited, ...(r.limited ? [r.limited] : [])].map((a) => [
      `${a.size} rules, ${a.limited ? "120/60 (default limit)" : "--rate-limit off"}`,
      cell(a.up),
      cell(a.previewRefresh),
      cell(a.refresh),
      cell(a.destroy),
      String(a.providerPeakRssMb),
    ]),
  );
  if (r.walk)
    console.log(
      `One walk of ${r.walk.size} rules in one process: ${fmt(r.walk.seconds)} s, ${r.walk.requests} requests; heap kept by it ${r.walk.heapKeptMb} MB (heap used after: ${r.walk.heapUsedMb} MB)`,
    );
}

/**
 * 12. A set of f.walksSet rules in an account that holds `size` more, at the service's default limit:
 * per command its walks of the account (first pages of GET /ip_policy_rules in the emulator's log: the
 * next pages log as "GET /ip_policy_rules?…"), requests, wall seconds, and the lower bound of those
 * requests at 120 per rolling 60 s.
 */
async function measureWalks(ctx, size) {
  const f = ctx.f;
  return withSession(ctx, { emuArgs: ["--seed-rules", String(size)], project: ctx.projects.set }, async (s) => {
    const config = {
      ipPolicyId: { value: s.emu.fixtures.ipPolicies[0] },
      allow: { value: JSON.stringify(setCidrs(f.walksSet)) },
    };
    const out = { size, set: f.walksSet, ops: [] };
    for (const [name, op, extra] of [
      ["up", "up", { withPreview: true }],
      ["preview --refresh", "preview", { refresh: true }],
      ["refresh", "refresh"],
      ["destroy", "destroy", { withPreview: true }],
    ]) {
      const from = s.emu.stderr().length;
      const m = await s.run("walks", op, config, extra);
      await new Promise((r) => setTimeout(r, 200)); // the emulator's last log line
      const log = s.emu.stderr().slice(from).split("\n");
      const walks = log.filter((l) => / GET \/ip_policy_rules 200 /.test(l)).length;
      const pages = log.filter((l) => / GET \/ip_policy_rules(\?…)? 200 /.test(l)).length;
      // The bound: the window's, exactly, for the requests it accepted, given what it still held of the
      // commands before (bench/window-bound.js); beside it the old one, from an empty window.
      const { boundSeconds, spanSeconds } = opBound(
        logRequests(s.emu.stderr().slice(0, from)),
        logRequests(log.join("\n")),
      );
      const emptyWindowBoundSeconds = rateLowerBound("window", m.requests - m.rateLimited429);
      out.ops.push({
        op: name,
        walks,
        pages,
        requests: m.requests,
        rateLimited429: m.rateLimited429,
        seconds: m.seconds,
        spanSeconds,
        boundSeconds,
        emptyWindowBoundSeconds,
      });
      process.stderr.write(
        `bench: walks: ${size} rules: ${name}: ${walks} walks, ${m.requests} requests, ${m.seconds.toFixed(1)} s (bound ${boundSeconds.toFixed(1)} s)\n`,
      );
    }
    return out;
  });
}

function printWalks(rows, f) {
  console.log(
    `\nA set of ${f.walksSet} rules (examples/office-allowlist) in an account of N other rules (emulator --seed-rules N), at the default limit (120 per rolling 60 s); walks are first pages of GET /ip_policy_rules:`,
  );
  const ratio = (a, b) => (b > 0 ? fmt(a / b, 2) : "–");
  table(
    ["account", "op", "walks", "list pages", "requests", "429", "s", "requests s", "bound s", "s/bound (requests)"],
    rows.flatMap((r) =>
      r.ops.map((o) => [
        `${r.size} rules`,
        o.op,
        o.walks,
        o.pages,
        o.requests,
        o.rateLimited429,
        fmt(o.seconds),
        fmt(o.spanSeconds),
        fmt(o.boundSeconds),
        `${ratio(o.seconds, o.boundSeconds)} (${ratio(o.spanSeconds, o.boundSeconds)})`,
      ]),
    ),
  );
  console.log(
    "(bound: the least time the window of 120 per rolling 60 s allows for the requests it accepted, from the first, given what it still held of the commands before; requests s: first request to last answer)",
  );
}

/**
 * 10. A gateway before the emulator that lets the first 20 POSTs through and answers every later one
 * 429 Retry-After: 60 (never forwarded): up of a set of f.boundsRules rules with the client's defaults.
 */
async function measureBounds(ctx) {
  const http = require("node:http");
  return withSession(ctx, { emuArgs: ["--rate-limit", "off"], project: ctx.projects.set }, async (s) => {
    let posts = 0;
    let refused = 0;
    const gateway = http.createServer((req, res) => {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", async () => {
        if (req.method === "POST" && ++posts > 20) {
          refused++;
          res.writeHead(429, { "content-type": "application/json", "retry-after": "60" });
          return res.end(JSON.stringify({ error_code: "ERR_RATE_LIMITED", msg: "too many requests" }));
        }
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(([k]) => !["host", "connection", "content-length"].includes(k)),
        );
        const upstream = await fetch(s.emu.url + req.url, {
          method: req.method,
          headers,
          body: chunks.length ? Buffer.concat(chunks) : undefined,
        });
        const body = Buffer.from(await upstream.arrayBuffer());
        res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "application/json" });
        res.end(body);
      });
    });
    await new Promise((r) => gateway.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${gateway.address().port}`;
    try {
      const config = {
        ipPolicyId: { value: s.emu.fixtures.ipPolicies[0] },
        allow: { value: JSON.stringify(setCidrs(ctx.f.boundsRules)) },
      };
      const started = process.hrtime.bigint();
      const result = await spawnJob(s.job("bounds", "up", config, { env: { ACCESSCTL_API_URL: url } })).done;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const error = result.childStderr
        .split("\n")
        .find((l) => /calls? failed, first:/.test(l))
        ?.trim();
      const state = JSON.parse(fs.readFileSync(s.stateFile("bounds"), "utf8")).checkpoint.latest;
      const set = (state.resources ?? []).find((res) => res.type.includes("IpPolicyRuleSet"));
      if (!error)
        process.stderr.write(`bench: bounds: no error line found; pulumi said:\n${result.childStderr.slice(-4000)}\n`);
      return {
        rules: ctx.f.boundsRules,
        ok: result.ok,
        seconds,
        posts,
        refused,
        recorded: set ? Object.keys(set.outputs?.rules ?? {}).length : 0,
        error,
      };
    } finally {
      gateway.closeAllConnections();
      gateway.close();
    }
  });
}

function printBounds(b) {
  console.log(
    `\nup of a set of ${b.rules} rules, every POST after the first 20 answered 429 Retry-After: 60: ${b.ok ? "succeeded (!)" : "failed"} after ${fmt(b.seconds)} s (${fmt(b.seconds / 60, 1)} min); ${b.posts} POSTs, ${b.refused} answered 429; the state records ${b.recorded} rules`,
  );
  console.log(`error: ${b.error ?? "(none found)"}`);
}

/**
 * 11. Memory of one IpPolicyRuleSet of f.memoryRules rules on each host: up from empty, preview --refresh
 * after 2 of its rules were changed by hand (their description, through the API), refresh (which records
 * them), destroy; each operation's wall time and its provider process's peak resident memory (VmHWM,
 * sampled every 50 ms: a new provider process per operation, so each peak is that operation's own).
 */
async function measureMemory(ctx) {
  const { f } = ctx;
  const tarball = path.join(ctx.projects.pluginSet, "node_modules/@accessctl/pulumi/dist", tarballName());
  const home = pluginHome(ctx.binDir, tarball);
  // The plugin's floor: the same program on a plugin whose set does nothing (bench/floor-plugin.js), installed apart.
  const floorDir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-floor-plugin-"));
  const floorHome = f.memoryHosts.includes("pluginFloor")
    ? pluginHome(ctx.binDir, buildPlugin(path.join(REPO, "bench/floor-plugin.js"), floorDir))
    : home;
  const homes = { dynamic: home, floor: home, floorCompact: home, plugin: home, pluginFloor: floorHome };
  const ops = [
    ["up", "up"],
    ["previewRefresh", "preview", { refresh: true }],
    ["refresh", "refresh"],
    ["destroy", "destroy"],
  ];
  const hosts = {
    dynamic: "set",
    plugin: "pluginSet",
    floor: "floor",
    floorCompact: "floor",
    pluginFloor: "pluginSet",
  };
  const floors = new Set(["floor", "floorCompact", "pluginFloor"]);
  const once = (host) =>
    withSession(
      ctx,
      {
        emuArgs: unlimitedEmulator(ctx.f),
        project: ctx.projects[hosts[host]],
        env: { ...UNLIMITED_CLIENT, ...homes[host].env },
      },
      async (s) => {
        const policy = s.emu.fixtures.ipPolicies[0];
        const config = {
          ipPolicyId: { value: policy },
          allow: { value: JSON.stringify(setCidrs(f.memoryRules)) },
          ...(host === "floorCompact" ? { compact: { value: "true" } } : {}),
        };
        const out = { load: os.loadavg()[0] }; // the machine's load (1 min) as the run began
        for (const [name, op, extra] of ops) {
          if (name === "previewRefresh" && !floors.has(host)) await driftTwo(s.emu, policy); // (a floor reads nothing)
          const plugin = host === "plugin" || host === "pluginFloor";
          const stopWatch = watchProviderMemory(plugin ? PLUGIN_PROCESS : undefined, homes[host].env.PULUMI_HOME, 50);
          const m = await s.run(host, op, config, extra);
          const peakMb = Math.round(stopWatch() / 1024);
          const expected = floors.has(host) ? undefined : 1;
          if (name === "previewRefresh" && m.result.changeSummary?.update !== expected)
            throw new Error(
              `${host}: preview --refresh: expected ${expected ?? "no"} update, got ${JSON.stringify(m.result.changeSummary)}`,
            );
          out[name] = { seconds: m.seconds, peakMb, requests: m.requests };
          process.stderr.write(
            `bench: memory: ${host}: ${op}${extra ? " --refresh" : ""} of ${f.memoryRules}: ${m.seconds.toFixed(1)} s, provider peak ${peakMb} MB, ${m.requests} requests\n`,
          );
        }
        return out;
      },
    );
  const median = (xs) => {
    const sorted = [...xs].sort((a, b) => a - b);
    const mid = sorted.length / 2;
    return sorted.length % 2 ? sorted[Math.floor(mid)] : (sorted[mid - 1] + sorted[mid]) / 2;
  };
  try {
    const r = {
      rules: f.memoryRules,
      runs: f.memoryRuns,
      tarball: path.basename(tarball),
      dynamic: {},
      plugin: {},
      floor: {},
      floorCompact: {},
      pluginFloor: {},
      each: { dynamic: [], plugin: [], floor: [], floorCompact: [], pluginFloor: [] },
    };
    for (let i = 0; i < f.memoryRuns; i++) for (const host of f.memoryHosts) r.each[host].push(await once(host));
    for (const host of f.memoryHosts) {
      for (const [name] of ops)
        r[host][name] = {
          seconds: median(r.each[host].map((e) => e[name].seconds)),
          peakMb: median(r.each[host].map((e) => e[name].peakMb)),
          maxPeakMb: Math.max(...r.each[host].map((e) => e[name].peakMb)),
        };
    }
    return r;
  } finally {
    home.cleanup();
    if (floorHome !== home) floorHome.cleanup();
    fs.rmSync(floorDir, { recursive: true, force: true });
  }
}

/** Changes the description of 2 rules of `policy` (the first and the middle one listed) through the API, as a hand would. */
async function driftTwo(emu, policy) {
  const { call, close } = directClient(emu, 1);
  try {
    const ids = [];
    for (let next = "/ip_policy_rules"; next;) {
      const page = await call("GET", next);
      ids.push(...page.ip_policy_rules.filter((r) => r.ip_policy.id === policy).map((r) => r.id));
      next = page.next_page_uri;
    }
    for (const id of [ids[0], ids[Math.floor(ids.length / 2)]])
      await call("PATCH", `/ip_policy_rules/${id}`, { description: "changed by hand" });
  } finally {
    await close();
  }
}

function printMemory(r) {
  console.log(
    `\nOne IpPolicyRuleSet of ${r.rules} rules, emulator --rate-limit off; provider process peak RSS (VmHWM) and wall time${r.runs > 1 ? `, median of ${r.runs} interleaved runs (their range in brackets)` : ""}:`,
  );
  const ops = [
    ["up", "up"],
    ["preview --refresh, 2 rules drifted", "previewRefresh"],
    ["refresh", "refresh"],
    ["destroy", "destroy"],
  ];
  const each = (host, k) => (r.each[host] ?? []).map((e) => e[k]?.peakMb).filter((x) => x !== undefined);
  const range = (xs) => (r.runs > 1 && xs.length ? ` (${Math.min(...xs)}–${Math.max(...xs)})` : "");
  const peak = (host, k) => (r[host]?.[k] ? `${r[host][k].peakMb}${range(each(host, k))}` : "–");
  // Ours less its floor, run by run (the runs are interleaved: run i of each host ran side by side).
  const over = (host, floor, k) => {
    const ours = each(host, k),
      base = each(floor, k);
    if (!ours.length || ours.length !== base.length) return "–";
    const d = ours.map((x, i) => x - base[i]).sort((a, b) => a - b);
    return `${d[Math.floor(d.length / 2)]}${range(d)}`;
  };
  const secs = (host, k) => (r[host]?.[k] ? fmt(r[host][k].seconds) : "–");
  table(
    [
      "operation",
      "dynamic MB",
      "dynamic floor MB",
      "dynamic − floor",
      "plugin MB",
      "plugin floor MB",
      "plugin − floor",
      "dynamic s",
      "floor s",
      "plugin s",
      "plugin floor s",
    ],
    ops.map(([label, k]) => [
      label,
      peak("dynamic", k),
      peak("floor", k),
      over("dynamic", "floor", k),
      peak("plugin", k),
      peak("pluginFloor", k),
      over("plugin", "pluginFloor", k),
      secs("dynamic", k),
      secs("floor", k),
      secs("plugin", k),
      secs("pluginFloor", k),
    ]),
  );
  if (r.each.floorCompact?.length)
    table(
      ["operation", "dynamic floor, rules as one text MB", "s"],
      ops.map(([label, k]) => [label, peak("floorCompact", k), secs("floorCompact", k)]),
    );
  const loads = Object.values(r.each)
    .flat()
    .map((e) => e.load)
    .filter((x) => x !== undefined);
  if (loads.length)
    console.log(`load average (1 min) as each run began: ${fmt(Math.min(...loads), 2)}–${fmt(Math.max(...loads), 2)}`);
  console.log(
    "(dynamic floor: bench/floor-set.ts, a dynamic provider that does no work for a resource of the same size: what Pulumi's dynamic-provider host itself holds; plugin floor: bench/floor-plugin.js, the plugin's process with a set that does no work. Both collect as ours does: provider/memory.ts)",
  );
}

/**
 * 13. `stacks` pipelines at once on one account at the service's 120/60, each an IpPolicyRuleSet of
 * --pipeline-rules rules on a policy of its own (the emulator's account given as many policies, through
 * its --data file), each stack with its own file backend, every client at the default budget.
 */
async function measurePipelines(ctx, stacks) {
  const rules = ctx.f.pipelineRules;
  const data = (dir) => ["--data", path.join(dir, "emulator.json")];
  return withSession(ctx, { emuArgs: data, project: ctx.projects.set }, async (s) => {
    await stopEmulator(s.emu);
    const file = path.join(s.dir, "emulator.json");
    const snapshot = JSON.parse(fs.readFileSync(file, "utf8"));
    const id = () =>
      `ipp_${require("node:crypto").randomBytes(18).toString("base64url").replace(/[-_]/g, "x").slice(0, 24)}`;
    while (snapshot.accounts[0].ipPolicies.length < stacks) snapshot.accounts[0].ipPolicies.push(id());
    fs.writeFileSync(file, JSON.stringify(snapshot));
    s.emu = await startEmulator(data(s.dir));
    const policies = s.emu.fixtures.ipPolicies;
    const jobs = Array.from({ length: stacks }, (_, i) => {
      const backend = path.join(s.dir, `pipeline-${i}`);
      fs.mkdirSync(backend);
      return s.job(
        `pipeline-${i}`,
        "up",
        { ipPolicyId: { value: policies[i] }, allow: { value: JSON.stringify(setCidrs(rules, 10 + i)) } },
        { backend },
      );
    });
    const started = process.hrtime.bigint();
    const since = () => Number(process.hrtime.bigint() - started) / 1e9;
    const results = await Promise.all(jobs.map((job) => spawnJob(job).done.then((r) => ({ ...r, seconds: since() }))));
    const seconds = since();
    const st = await stats(s.emu);
    const rateLimited429 = st.byStatus["429"] ?? 0;
    const accepted = st.requests - rateLimited429;
    const ends = results.map((r) => r.seconds);
    const r = {
      stacks,
      rules,
      seconds,
      requestSpanSeconds: requestSpan(s.emu),
      stackSeconds: ends,
      requests: st.requests,
      accepted,
      rateLimited429,
      boundSeconds: accepted / 2,
      windowBoundSeconds: rateLowerBound("window", accepted),
      // Converged: every rule made (the emulator's count of rule creates), whatever the harness said.
      rulesMade: st.byMethod?.["POST 2xx"] ?? 0,
      ok: results.every((x) => x.ok),
      errors: results.filter((x) => !x.ok).map((x) => String(x.error).slice(0, 300)),
    };
    process.stderr.write(
      `bench: pipelines ${stacks}: ${seconds.toFixed(1)} s (requests ${r.requestSpanSeconds.toFixed(1)} s, bound ${r.boundSeconds} s), ${st.requests} answers, ${rateLimited429} × 429, stacks ${ends.map((e) => e.toFixed(0)).join(", ")} s\n`,
    );
    return r;
  });
}

/** The pipelines table: each run, then the medians of each number of stacks. */
function printPipelines(rows) {
  console.log(
    "\nPipelines on one account at 120 per rolling 60 s, each an IpPolicyRuleSet on its own policy, every client with the whole budget:",
  );
  const median = (xs) => {
    const sorted = [...xs].sort((a, b) => a - b);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  };
  const line = (label, r) => [
    label,
    fmt(r.seconds),
    fmt(r.requestSpanSeconds),
    r.accepted,
    fmt(r.boundSeconds, 0),
    fmt(r.seconds / r.boundSeconds, 2),
    fmt(r.windowBoundSeconds, 0),
    `${r.rateLimited429} of ${r.requests} (${fmt((100 * r.rateLimited429) / r.requests)}%)`,
    fmt(Math.max(...r.stackSeconds) / Math.min(...r.stackSeconds), 2),
    `${r.rulesMade} of ${r.stacks * r.rules} rules${r.ok ? "" : `; the harness: ${r.errors.join("; ")}`}`,
  ];
  const medians = [...new Set(rows.map((r) => r.stacks))]
    .filter((n) => rows.filter((r) => r.stacks === n).length > 1)
    .map((n) => {
      const runs = rows.filter((r) => r.stacks === n);
      const m = (f) => median(runs.map(f));
      return [
        `${n} stacks, median of ${runs.length}`,
        fmt(m((r) => r.seconds)),
        fmt(m((r) => r.requestSpanSeconds)),
        m((r) => r.accepted),
        fmt(
          m((r) => r.boundSeconds),
          0,
        ),
        fmt(
          m((r) => r.seconds / r.boundSeconds),
          2,
        ),
        "",
        `${fmt(m((r) => (100 * r.rateLimited429) / r.requests))}%`,
        fmt(
          m((r) => Math.max(...r.stackSeconds) / Math.min(...r.stackSeconds)),
          2,
        ),
        runs.every((r) => r.rulesMade === r.stacks * r.rules) ? "all" : "not all",
      ];
    });
  table(
    [
      "run",
      "wall s",
      "requests s",
      "accepted",
      "bound s",
      "wall/bound",
      "window bound s",
      "429",
      "slowest/fastest",
      "converged",
    ],
    [...rows.map((r) => line(`${r.stacks} stacks × ${r.rules} rules`, r)), ...medians],
  );
}

function makeProjects(root, plugin, memory) {
  const tarball = packTarball(root);
  const project = (name, options) =>
    makeProject(path.join(root, name), { name: "accessctl-bench", tarball, ...options });
  const projects = {
    ours: project("ours", { from: path.join(REPO, "examples/many-rules") }),
    baseline: project("baseline", { files: { "index.ts": path.join(REPO, "bench/baseline.ts") }, main: "index.ts" }),
    set: project("set", { from: path.join(REPO, "examples/office-allowlist") }),
  };
  if (memory?.some((h) => h === "floor" || h === "floorCompact"))
    projects.floor = project("floor", {
      files: { "index.ts": path.join(REPO, "bench/floor-set.ts") },
      main: "index.ts",
    });
  if (plugin) {
    projects.plugin = project("plugin", { from: path.join(REPO, "examples/many-rules") });
    projects.pluginSet = project("plugin-set", { from: path.join(REPO, "examples/office-allowlist") });
    for (const dir of [projects.plugin, projects.pluginSet]) {
      const index = path.join(dir, "index.ts");
      const text = fs.readFileSync(index, "utf8");
      if (!text.includes('from "@accessctl/pulumi";'))
        throw new Error(`${index}: no import of @accessctl/pulumi to change`);
      fs.writeFileSync(index, text.replace('from "@accessctl/pulumi";', 'from "@accessctl/pulumi/plugin";'));
    }
  }
  for (const dir of [projects.ours, projects.set, projects.plugin, projects.pluginSet].filter(Boolean))
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: accessctl-bench\nruntime: nodejs\n");
  return projects;
}

async function main() {
  const f = flags(process.argv.slice(2));
  const started = Date.now();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-bench-"));
  const ctx = {
    f,
    binDir: pulumiBinDir(),
    projects: makeProjects(root, !f.skipPlugin || !f.skipMemory, f.skipMemory ? [] : f.memoryHosts),
  };
  const cli = execFileSync(path.join(ctx.binDir, "pulumi"), ["version"]).toString().trim();
  const results = {
    date: new Date().toISOString(),
    machine: `${os.cpus().length} × ${os.cpus()[0].model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.platform()} ${os.release()}, node ${process.version}, pulumi ${cli}`,
    command: `npm run bench -- ${process.argv.slice(2).join(" ")}`.trim(),
    flags: f,
    engine: [],
    rateLimit: [],
    team: [],
  };
  const alone = (section) =>
    [
      "rate",
      "refresh",
      "team",
      "emulator",
      "set",
      "plugin",
      "accounts",
      "bounds",
      "memory",
      "walks",
      "pipelines",
    ].every((k) => k === section || f[`skip${k[0].toUpperCase()}${k.slice(1)}`]) && f.sizes.length === 0;
  const name = alone("pipelines")
    ? "results-pipelines"
    : alone("walks")
      ? "results-walks"
      : alone("memory")
        ? "results-memory"
        : alone("accounts")
          ? "results-accounts"
          : alone("bounds")
            ? "results-bounds"
            : f.skipCheckpoints
              ? "results-skip-checkpoints"
              : f.sizes.length > 0
                ? "results"
                : f.skipRate && f.skipRefresh && f.skipTeam && !f.skipSet
                  ? "results-set"
                  : f.skipRate && f.skipRefresh && f.skipTeam && f.skipEmulator && !f.skipPlugin
                    ? "results-plugin"
                    : f.skipRefresh && f.skipEmulator
                      ? "results-rate-team"
                      : "results-refresh-team";
  const out = path.join(REPO, `bench/${name}.json`);
  // Written after every section too: a long run that fails late keeps what it measured.
  const save = () =>
    fs.writeFileSync(out, JSON.stringify({ ...results, totalSeconds: (Date.now() - started) / 1000 }, null, 2) + "\n");
  const log = (text) => process.stderr.write(`bench: ${text}…\n`);
  try {
    for (const n of f.sizes) {
      log(`N=${n}: ours`);
      const ours = await measureEngine(ctx, "ours", n, f.keys);
      log(`N=${n}: baseline`);
      const baseline = await measureEngine(ctx, "baseline", n, f.keys);
      log(`N=${n}: floor`);
      results.engine.push({ n, keys: f.keys, ours, baseline, floor: await measureFloor(ctx, n) });
      save();
    }
    for (const model of f.skipRate ? [] : f.models) {
      log(`up of ${f.rateRules} rules at the default rate limit (${model})`);
      results.rateLimit.push(await measureRateLimit(ctx, model));
      save();
    }
    if (!f.skipRefresh) {
      log(`refresh of ${f.refreshRules} rules + ${f.refreshKeys} keys at the default rate limit`);
      results.refresh = await measureRefresh(ctx);
      save();
    }
    for (const model of f.skipTeam ? [] : f.models) {
      log(`three stacks of ${f.teamRules} rules at once at the default rate limit (${model})`);
      results.team.push(await measureTeam(ctx, model));
      save();
    }
    if (!f.skipSet) {
      log(`IpPolicyRuleSet of ${f.setRules} rules`);
      results.set = await measureSet(ctx);
      save();
    }
    if (!f.skipPlugin) {
      log(`the plugin beside the dynamic provider: ${f.pluginRules} rules, a set of ${f.pluginSet}`);
      results.plugin = await measurePlugin(ctx);
      save();
    }
    if (!f.skipAccounts) {
      log(`a set of ${f.accountSet} rules in accounts of ${f.accountSizes.join(", ")} rules`);
      results.accounts = await measureAccounts(ctx);
      save();
    }
    if (!f.skipBounds) {
      log(`up of a set of ${f.boundsRules} rules through a gateway that answers 429 Retry-After: 60 after 20 writes`);
      results.bounds = await measureBounds(ctx);
      save();
    }
    if (!f.skipPipelines) {
      results.pipelines = [];
      for (const stacks of f.pipelines) {
        for (let run = 1; run <= f.pipelineRuns; run++) {
          log(`${stacks} pipelines at once, ${f.pipelineRules} rules each, run ${run} of ${f.pipelineRuns}`);
          results.pipelines.push(await measurePipelines(ctx, stacks));
          save();
        }
      }
    }
    if (!f.skipMemory) {
      log(`memory: one IpPolicyRuleSet of ${f.memoryRules} rules on each host`);
      results.memory = await measureMemory(ctx);
      save();
    }
    for (const size of f.skipWalks ? [] : f.walkSizes) {
      log(`walks: a set of ${f.walksSet} rules in an account of ${size} rules at the default limit`);
      (results.walks ??= []).push(await measureWalks(ctx, size));
      save();
    }
    if (!f.skipEmulator) results.emulator = await require("./emulator").run(); // prints its own tables
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  results.totalSeconds = (Date.now() - started) / 1000;
  save();

  console.log(`\n${results.machine}; ${results.date}; ${results.command}`);
  if (results.engine.length) printEngine(results.engine, f);
  if (results.rateLimit.length || results.team.length) printRate(results.rateLimit, results.team);
  if (results.refresh) printRefresh(results.refresh);
  if (results.set) printSet(results.set, f);
  if (results.plugin) printPlugin(results.plugin, f);
  if (results.accounts) printAccounts(results.accounts, f);
  if (results.bounds) printBounds(results.bounds);
  if (results.memory) printMemory(results.memory);
  if (results.walks) printWalks(results.walks, f);
  if (results.pipelines) printPipelines(results.pipelines);
  console.log(`\ntotal ${fmt(results.totalSeconds, 0)} s; figures in ${path.relative(REPO, out)}`);
}

main().catch((e) => {
  process.stderr.write(`bench failed: ${e.stack || e}\n`);
  process.exit(1);
});
