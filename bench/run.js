#!/usr/bin/env node
// `npm run bench [-- --sizes 50,200,500 --keys 3 --latency 20 --rate-rules 300 --skip-rate --models window,bucket --skip-checkpoints
//                    --refresh-rules 500 --refresh-keys 10 --skip-refresh --skip-team --per-object-up --only refresh,team]`
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
//   6. a team: three stacks of 100 rules deploying at once against one account at 120/60, both models.
//   7. the policy as one resource (IpPolicyRuleSet, examples/office-allowlist) beside per-rule
//      resources (ours, baseline) and the floor: up of --set-rules from empty, preview --refresh, a
//      change of 100 CIDRs (requests counted), destroy, unlimited; up at the emulator's default
//      limit (ratio to its model's lower bound); and --set-large rules in one resource (state size,
//      time). `npm run bench -- --only set` runs this section alone.
// Prints a table and writes bench/results.json.
"use strict";
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const emulatorProcess = require("../scripts/emulator-process");
const { makeProject, packTarball, pulumiBinDir, REPO } = require("../scripts/pack-project");
const { spawnJob } = require("../scripts/stack");

function flags(argv) {
  const f = { sizes: [50, 200, 500], keys: 3, latency: 20, rateRules: 300, skipRate: false, skipCheckpoints: false, refreshRules: 500, refreshKeys: 10, skipRefresh: false, skipTeam: false, perObjectUp: false, skipEmulator: false, models: ["window", "bucket"], skipSet: false, setRules: 500, setLarge: 5000, setPerRule: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--sizes") f.sizes = argv[++i].split(",").map(Number);
    else if (a === "--keys") f.keys = Number(argv[++i]);
    else if (a === "--latency") f.latency = Number(argv[++i]);
    else if (a === "--rate-rules") f.rateRules = Number(argv[++i]);
    else if (a === "--skip-rate") f.skipRate = true;
    else if (a === "--models") f.models = argv[++i].split(","); // the emulator's rate-limit models for the rate and team sections
    else if (a === "--skip-checkpoints") f.skipCheckpoints = true;
    else if (a === "--refresh-rules") f.refreshRules = Number(argv[++i]);
    else if (a === "--refresh-keys") f.refreshKeys = Number(argv[++i]);
    else if (a === "--skip-refresh") f.skipRefresh = true;
    else if (a === "--skip-team") f.skipTeam = true;
    else if (a === "--set-rules") f.setRules = Number(argv[++i]);
    else if (a === "--set-large") f.setLarge = Number(argv[++i]);
    else if (a === "--skip-set-per-rule") f.setPerRule = false; // the set rows without the per-rule ones beside them
    else if (a === "--per-object-up") f.perObjectUp = true; // per-object `up --refresh` too: about 2 GETs per object at 2/s
    else if (a === "--only") { // e.g. --only refresh,team: just those sections
      const only = argv[++i].split(",");
      if (!only.includes("engine")) f.sizes = [];
      f.skipRate = !only.includes("rate");
      f.skipRefresh = !only.includes("refresh");
      f.skipTeam = !only.includes("team");
      f.skipEmulator = !only.includes("emulator");
      f.skipSet = !only.includes("set");
    }
    else throw new Error(`unknown flag ${a}`);
  }
  return f;
}

async function startEmulator(args) {
  const { child, startup, stderr } = await emulatorProcess.startEmulator(args);
  return { child, stderr, ...startup };
}
const stopEmulator = (emu) => new Promise((r) => {
  if (process.env.BENCH_EMULATOR_LOG) fs.appendFileSync(process.env.BENCH_EMULATOR_LOG, emu.stderr()); // the emulator's request log, to study a run
  emu.child.once("exit", r);
  emu.child.kill("SIGTERM");
});
const stats = async (emu) => (await fetch(`${emu.url}/_emulator/stats`)).json();
/** Seconds from the first to the last request the emulator logged (its log lines start with the time): the run without the engine's start and end. */
function requestSpan(emu) {
  const times = emu.stderr().split("\n").filter((l) => / (GET|POST|PUT|PATCH|DELETE) \//.test(l)).map((l) => Date.parse(l.slice(0, 24)));
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

/** Samples the peak resident memory (VmHWM) of dynamic-provider processes until stopped. */
function watchProviderMemory() {
  let peakKb = 0;
  const timer = setInterval(() => {
    for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
      try {
        if (!fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("dynamic-provider")) continue;
        const hwm = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
        if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
      } catch {
        // the process ended between listing and reading
      }
    }
  }, 100);
  return () => {
    clearInterval(timer);
    return peakKb;
  };
}

async function measureEngine(variant, n, f, projects, binDir) {
  const emu = await startEmulator(["--rate-limit", "off", "--latency", String(f.latency)]);
  const backend = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-bench-backend-"));
  const job = (op, extra = {}) => ({
    dir: projects[variant],
    stack: `${variant}-${n}`,
    op,
    binDir,
    backend: `file://${backend}`,
    config: {
      ipPolicyIds: { value: JSON.stringify(emu.fixtures.ipPolicies) },
      count: { value: String(n) },
      apiKeys: { value: String(f.keys) },
    },
    // --rate-limit off on the service: lift our client-side limiter too, to measure the engine.
    env: {
      ACCESSCTL_API_URL: emu.url,
      ACCESSCTL_API_KEY: emu.adminToken,
      ACCESSCTL_MAX_REQUESTS_PER_MINUTE: "1000000",
      ...(f.skipCheckpoints ? { PULUMI_SKIP_CHECKPOINTS: "true" } : {}),
    },
    ...extra,
  });
  try {
    const stopWatch = watchProviderMemory();
    const up = await pulumi(job("up"));
    const peakKb = stopWatch();
    const stateFile = path.join(backend, ".pulumi", "stacks", "accessctl-bench", `${variant}-${n}.json`);
    const stateBytes = fs.statSync(stateFile).size;
    const state = JSON.parse(fs.readFileSync(stateFile, "utf8")).checkpoint.latest;
    const ours = state.resources.filter((r) => r.type.startsWith("pulumi-nodejs:dynamic/"));
    const providerBytes = ours.reduce((sum, r) => sum + r.inputs.__provider.length + (r.outputs.__provider ?? "").length, 0);
    const preview = await pulumi(job("preview", { refresh: true }));
    const changes = preview.result.changeSummary;
    if (Object.keys(changes).some((k) => k !== "same")) throw new Error(`${variant}: preview --refresh found changes: ${JSON.stringify(changes)}`);
    const destroy = await pulumi(job("destroy"));
    return {
      up: up.seconds,
      previewRefresh: preview.seconds,
      destroy: destroy.seconds,
      resources: ours.length,
      stateBytesPerResource: Math.round(stateBytes / ours.length),
      providerBytesPerResource: Math.round(providerBytes / ours.length),
      providerPeakRssMb: Math.round(peakKb / 1024),
    };
  } finally {
    await stopEmulator(emu);
    fs.rmSync(backend, { recursive: true, force: true });
  }
}

/** The same API calls with undici at Pulumi's default parallelism (4 per core), no engine. */
async function measureFloor(n, f) {
  const { Agent, request } = require(path.join(REPO, "node_modules/undici"));
  const emu = await startEmulator(["--rate-limit", "off", "--latency", String(f.latency)]);
  const agent = new Agent({ connections: 64 });
  const parallel = os.availableParallelism() * 4;
  const headers = { authorization: `Bearer ${emu.adminToken}`, "service-version": "2", "content-type": "application/json" };
  const call = async (method, p, body) => {
    const res = await request(emu.url + p, { method, headers, body: body && JSON.stringify(body), dispatcher: agent });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${p}: ${res.statusCode} ${text}`);
    return text && JSON.parse(text);
  };
  const pool = async (items, fn) => {
    const queue = [...items];
    await Promise.all(Array.from({ length: parallel }, async () => { while (queue.length) await fn(queue.shift()); }));
  };
  const timed = async (fn) => { const t = process.hrtime.bigint(); await fn(); return Number(process.hrtime.bigint() - t) / 1e9; };
  try {
    const bodies = [
      ...Array.from({ length: n }, (_, i) => ["/ip_policy_rules", { ip_policy_id: emu.fixtures.ipPolicies[i % 2], cidr: `10.${Math.floor(i / 256) % 256}.${i % 256}.0/24`, action: "allow", description: `generated rule ${i + 1} of ${n}` }]),
      ...Array.from({ length: f.keys }, (_, i) => ["/api_keys", { description: `CI key ${i + 1}` }]),
    ];
    const created = [];
    const up = await timed(() => pool(bodies, async ([p, body]) => created.push(`${p}/${(await call("POST", p, body)).id}`)));
    const previewRefresh = await timed(() => pool(created, (p) => call("GET", p)));
    const destroy = await timed(() => pool(created, (p) => call("DELETE", p)));
    return { up, previewRefresh, destroy, parallel };
  } finally {
    await agent.close();
    await stopEmulator(emu);
  }
}

/** The least time `requests` requests take at the service's 120/60, by the emulator's model. */
function lowerBound(model, requests) {
  return model === "bucket" ? Math.max(0, (requests - 120) / 2) : 60 * Math.floor(Math.max(0, requests - 1) / 120);
}

/** 3. `up` of many rules at the service's 120/60 (rolling window, or token bucket), then the drift gate (`preview --refresh`) right after it. */
async function measureRateLimit(rules, model, projects, binDir) {
  const emu = await startEmulator(["--rate-limit-model", model]); // the service's default: 120 requests per 60 s per account
  const backend = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-bench-backend-"));
  const job = (op, extra = {}) => ({
    dir: projects.ours, stack: `rate-${model}`, op, binDir, backend: `file://${backend}`,
    config: { ipPolicyIds: { value: JSON.stringify(emu.fixtures.ipPolicies) }, count: { value: String(rules) }, apiKeys: { value: "0" } },
    env: { ACCESSCTL_API_URL: emu.url, ACCESSCTL_API_KEY: emu.adminToken },
    ...extra,
  });
  try {
    let ok = true;
    let error;
    let seconds = 0;
    try {
      seconds = (await pulumi(job("up"))).seconds;
    } catch (e) {
      ok = false;
      error = String(e.message).slice(0, 500);
    }
    const s = await stats(emu);
    const r = { model, rules, seconds, requestSpanSeconds: requestSpan(emu), lowerBoundSeconds: lowerBound(model, rules), requests: s.requests, rateLimited429: s.byStatus["429"] ?? 0, ok, error };
    process.stderr.write(`bench: rate ${model}: up of ${rules} rules: ${seconds.toFixed(1)} s (bound ${r.lowerBoundSeconds} s), ${s.requests} requests, ${r.rateLimited429} × 429\n`);
    if (ok) {
      const preview = await pulumi(job("preview", { refresh: true }));
      const after = await stats(emu);
      r.driftGate = { seconds: preview.seconds, requests: after.requests - s.requests, rateLimited429: (after.byStatus["429"] ?? 0) - r.rateLimited429, changes: preview.result.changeSummary };
      process.stderr.write(`bench: rate ${model}: preview --refresh after it: ${preview.seconds.toFixed(1)} s, ${r.driftGate.requests} requests, ${r.driftGate.rateLimited429} × 429\n`);
    }
    return r;
  } finally {
    await stopEmulator(emu);
    fs.rmSync(backend, { recursive: true, force: true });
  }
}

/**
 * 5. Refresh at the service's limit. The emulator keeps its data in a file and a fixed admin token,
 * so that the same account can be served again at --rate-limit off for the comparison.
 */
async function measureRefresh(f, projects, binDir) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-bench-refresh-"));
  const token = `bench-admin-${Date.now()}-0123456789`;
  const emuArgs = ["--data", path.join(dir, "emulator.json"), "--admin-token", token];
  let emu = await startEmulator(emuArgs);
  const port = new URL(emu.url).port;
  const n = f.refreshRules;
  const run = async (op, refresh, readMode) => {
    const before = await stats(emu);
    const { seconds, result } = await pulumi({
      dir: projects.ours, stack: "refresh", op, binDir, backend: `file://${dir}`, refresh,
      config: { ipPolicyIds: { value: JSON.stringify(emu.fixtures.ipPolicies) }, count: { value: String(n) }, apiKeys: { value: String(f.refreshKeys) } },
      env: { ACCESSCTL_API_URL: emu.url, ACCESSCTL_API_KEY: token, ...(readMode ? { ACCESSCTL_READ_MODE: readMode } : {}) },
    });
    const after = await stats(emu);
    const changes = result.changeSummary ?? result.summary?.resourceChanges;
    if (op === "preview" || refresh) {
      if (Object.keys(changes ?? {}).some((k) => k !== "same")) throw new Error(`${op}: expected no changes, got ${JSON.stringify(changes)}`);
    }
    const limited = (after.byStatus["429"] ?? 0) - (before.byStatus["429"] ?? 0);
    process.stderr.write(`bench: refresh: ${op}${refresh ? " --refresh" : ""} ${readMode ?? "list"}: ${seconds.toFixed(1)} s, ${after.requests - before.requests} requests, ${limited} × 429\n`);
    return { seconds, requests: after.requests - before.requests, rateLimited429: limited };
  };
  try {
    const up = await run("up", false);
    const r = { rules: n, keys: f.refreshKeys, up };
    r.previewList = await run("preview", true); // right after the up: the account's budget is spent
    r.upRefreshList = await run("up", true);
    r.previewGet = await run("preview", true, "get");
    if (f.perObjectUp) r.upRefreshGet = await run("up", true, "get");
    await stopEmulator(emu);
    // The same port: the objects' URIs (in their outputs) stay the same, so the preview shows no diffs.
    emu = await startEmulator([...emuArgs, "--rate-limit", "off", "--port", port]);
    r.previewListOff = await run("preview", true);
    r.previewGetOff = await run("preview", true, "get");
    await run("destroy", false);
    return r;
  } finally {
    await stopEmulator(emu);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** 6. Three stacks of `perStack` rules, one file backend each, deploying at once against one account at 120/60 (rolling window, or token bucket). */
async function measureTeam(perStack, model, projects, binDir) {
  const emu = await startEmulator(["--rate-limit-model", model]);
  const dirs = [0, 1, 2].map(() => fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-bench-team-")));
  try {
    const started = process.hrtime.bigint();
    const results = await Promise.all(dirs.map((dir, s) => spawnJob({
      dir: projects.ours, stack: `team-${s}`, op: "up", binDir, backend: `file://${dir}`,
      config: {
        ipPolicyIds: { value: JSON.stringify(emu.fixtures.ipPolicies) },
        cidrs: { value: JSON.stringify(Array.from({ length: perStack }, (_, i) => `10.${100 + s}.${i}.0/24`)) },
        apiKeys: { value: "0" },
      },
      env: { ACCESSCTL_API_URL: emu.url, ACCESSCTL_API_KEY: emu.adminToken },
    }).done));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const s = await stats(emu);
    const total = perStack * 3;
    process.stderr.write(`bench: team ${model}: ${seconds.toFixed(1)} s (bound ${lowerBound(model, total)} s), ${s.requests} requests, ${s.byStatus["429"] ?? 0} × 429\n`);
    return { model, stacks: 3, perStack, seconds, requestSpanSeconds: requestSpan(emu), lowerBoundSeconds: lowerBound(model, total), requests: s.requests, rateLimited429: s.byStatus["429"] ?? 0, ok: results.every((r) => r.ok), errors: results.filter((r) => !r.ok).map((r) => String(r.error).slice(0, 300)) };
  } finally {
    await stopEmulator(emu);
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The emulator's default model of its limit (the service's documented rolling window). */
const RATE_MODEL = "window";

/** `count` CIDRs 10.{second+⌊i/250⌋}.{i%250}.0/24. */
const setCidrs = (count, second = 0) => Array.from({ length: count }, (_, i) => `10.${second + Math.floor(i / 250)}.${i % 250}.0/24`);

/** 7. IpPolicyRuleSet: one resource for a whole policy. */
async function measureSet(f, projects, binDir) {
  const n = f.setRules;
  const r = { rules: n };
  const run = async (emu, backend, stack, op, cidrs, { env = {}, ...extra } = {}) => {
    const before = await stats(emu);
    const { seconds, result } = await pulumi({
      dir: projects.set, stack, op, binDir, backend: `file://${backend}`,
      config: { ipPolicyId: { value: emu.fixtures.ipPolicies[0] }, allow: { value: JSON.stringify(cidrs) } },
      env: { ACCESSCTL_API_URL: emu.url, ACCESSCTL_API_KEY: emu.adminToken, ...env },
      ...extra,
    });
    const after = await stats(emu);
    const delta = (k) => (after.byMethod?.[k] ?? 0) - (before.byMethod?.[k] ?? 0);
    const m = { seconds, requests: after.requests - before.requests, post: delta("POST 2xx"), patch: delta("PATCH 2xx"), delete: delta("DELETE 2xx"), rateLimited429: (after.byStatus["429"] ?? 0) - (before.byStatus["429"] ?? 0) };
    if (op === "preview" && Object.keys(result.changeSummary ?? {}).some((k) => k !== "same")) throw new Error(`set: preview --refresh found changes: ${JSON.stringify(result.changeSummary)}`);
    process.stderr.write(`bench: set: ${op} of ${cidrs.length}: ${seconds.toFixed(1)} s, ${m.requests} requests (POST ${m.post}, PATCH ${m.patch}, DELETE ${m.delete}), ${m.rateLimited429} × 429\n`);
    return m;
  };
  const unlimited = { ACCESSCTL_MAX_REQUESTS_PER_MINUTE: "1000000" };
  const session = async (emuArgs, fn) => {
    const emu = await startEmulator(emuArgs);
    const backend = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-bench-set-"));
    try {
      return await fn(emu, backend);
    } finally {
      await stopEmulator(emu);
      fs.rmSync(backend, { recursive: true, force: true });
    }
  };
  const stateBytes = (backend, stack) => fs.statSync(path.join(backend, ".pulumi", "stacks", "accessctl-bench", `${stack}.json`)).size;

  r.unlimited = await session(["--rate-limit", "off", "--latency", String(f.latency)], async (emu, backend) => {
    const cidrs = setCidrs(n);
    const changed = [...setCidrs(n - 100), ...setCidrs(100, 200)]; // the last 100 CIDRs replaced by others of the same action
    const out = { up: await run(emu, backend, "set", "up", cidrs, { env: unlimited }) };
    out.stateBytes = stateBytes(backend, "set");
    out.previewRefresh = await run(emu, backend, "set", "preview", cidrs, { refresh: true, env: unlimited });
    out.change100 = await run(emu, backend, "set", "up", changed, { env: unlimited });
    out.destroy = await run(emu, backend, "set", "destroy", changed, { env: unlimited });
    return out;
  });
  r.floor = await measureSetFloor(n, f);
  if (f.setPerRule) {
    process.stderr.write(`bench: set: per-rule resources, N=${n}, for comparison…\n`);
    const perRule = { ...f, keys: 0 };
    r.perRule = { ours: await measureEngine("ours", n, perRule, projects, binDir), baseline: await measureEngine("baseline", n, perRule, projects, binDir) };
  }
  r.limited = await session([], async (emu, backend) => {
    const up = await run(emu, backend, "set-limited", "up", setCidrs(n));
    up.model = RATE_MODEL;
    up.lowerBoundSeconds = lowerBound(RATE_MODEL, up.requests);
    await run(emu, backend, "set-limited", "destroy", setCidrs(n)).catch((e) => process.stderr.write(`bench: set: destroy at the limit failed: ${e.message}\n`));
    return up;
  });
  if (f.setLarge) {
    r.large = await session(["--rate-limit", "off"], async (emu, backend) => {
      const cidrs = setCidrs(f.setLarge);
      const out = { rules: f.setLarge, up: await run(emu, backend, "set-large", "up", cidrs, { env: unlimited }) };
      out.stateBytes = stateBytes(backend, "set-large");
      out.previewRefresh = await run(emu, backend, "set-large", "preview", cidrs, { refresh: true, env: unlimited });
      out.destroy = await run(emu, backend, "set-large", "destroy", cidrs, { env: unlimited });
      return out;
    });
  }
  return r;
}

/** The set's calls made directly, 16 at once (the set's concurrency), no engine. */
async function measureSetFloor(n, f) {
  const { Agent, request } = require(path.join(REPO, "node_modules/undici"));
  const emu = await startEmulator(["--rate-limit", "off", "--latency", String(f.latency)]);
  const agent = new Agent({ connections: 64 });
  const headers = { authorization: `Bearer ${emu.adminToken}`, "service-version": "2", "content-type": "application/json" };
  const call = async (method, p, body) => {
    const res = await request(p.startsWith("http") ? p : emu.url + p, { method, headers, body: body && JSON.stringify(body), dispatcher: agent });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`${method} ${p}: ${res.statusCode} ${text}`);
    return text && JSON.parse(text);
  };
  const pool = async (items, fn) => {
    const queue = [...items];
    await Promise.all(Array.from({ length: 16 }, async () => { while (queue.length) await fn(queue.shift()); }));
  };
  const timed = async (fn) => { const t = process.hrtime.bigint(); await fn(); return Number(process.hrtime.bigint() - t) / 1e9; };
  const list = async () => { for (let next = "/ip_policy_rules"; next; ) next = (await call("GET", next)).next_page_uri; };
  try {
    const ids = [];
    const p = emu.fixtures.ipPolicies[0];
    const up = await timed(() => pool(setCidrs(n), async (cidr) => ids.push((await call("POST", "/ip_policy_rules", { ip_policy_id: p, cidr, action: "allow" })).id)));
    const previewRefresh = await timed(list);
    const moved = setCidrs(100, 200);
    const change100 = await timed(() => pool(ids.slice(0, 100).map((id, i) => [id, moved[i]]), ([id, cidr]) => call("PATCH", `/ip_policy_rules/${id}`, { cidr })));
    const destroy = await timed(() => pool(ids, (id) => call("DELETE", `/ip_policy_rules/${id}`)));
    return { up, previewRefresh, change100, destroy };
  } finally {
    await agent.close();
    await stopEmulator(emu);
  }
}

const fmt = (x, d = 1) => (typeof x === "number" ? x.toFixed(d) : String(x));

async function main() {
  const f = flags(process.argv.slice(2));
  const started = Date.now();
  const binDir = pulumiBinDir();
  // Two projects as users have them, both named accessctl-bench: examples/many-rules (TypeScript)
  // with our packed package, and the baseline provider's program.
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-bench-"));
  const tarball = packTarball(root);
  const projects = {
    ours: makeProject(path.join(root, "ours"), { name: "accessctl-bench", tarball, from: path.join(REPO, "examples/many-rules") }),
    baseline: makeProject(path.join(root, "baseline"), { name: "accessctl-bench", tarball, files: { "index.ts": path.join(REPO, "bench/baseline.ts") }, main: "index.ts" }),
  };
  fs.writeFileSync(path.join(projects.ours, "Pulumi.yaml"), "name: accessctl-bench\nruntime: nodejs\n");
  projects.set = makeProject(path.join(root, "set"), { name: "accessctl-bench", tarball, from: path.join(REPO, "examples/office-allowlist") });
  fs.writeFileSync(path.join(projects.set, "Pulumi.yaml"), "name: accessctl-bench\nruntime: nodejs\n");
  const results = { date: new Date().toISOString(), machine: `${os.cpus().length} × ${os.cpus()[0].model}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.platform()} ${os.release()}, node ${process.version}`, command: `npm run bench -- ${process.argv.slice(2).join(" ")}`.trim(), flags: f, engine: [], rateLimit: [], team: [] };
  const name = f.skipCheckpoints ? "results-skip-checkpoints" : f.sizes.length > 0 ? "results" : f.skipRate && f.skipRefresh && f.skipTeam && !f.skipSet ? "results-set" : f.skipRefresh && f.skipEmulator ? "results-rate-team" : "results-refresh-team";
  const out = path.join(REPO, `bench/${name}.json`);
  // Written after every section too: a long run that fails late keeps what it measured.
  const save = () => fs.writeFileSync(out, JSON.stringify({ ...results, totalSeconds: (Date.now() - started) / 1000 }, null, 2) + "\n");
  try {
    for (const n of f.sizes) {
      process.stderr.write(`bench: N=${n}: ours…\n`);
      const ours = await measureEngine("ours", n, f, projects, binDir);
      process.stderr.write(`bench: N=${n}: baseline…\n`);
      const baseline = await measureEngine("baseline", n, f, projects, binDir);
      process.stderr.write(`bench: N=${n}: floor…\n`);
      const floor = await measureFloor(n, f);
      results.engine.push({ n, keys: f.keys, ours, baseline, floor });
      save();
    }
    for (const model of f.skipRate ? [] : f.models) {
      process.stderr.write(`bench: up of ${f.rateRules} rules at the default rate limit (${model})…\n`);
      results.rateLimit.push(await measureRateLimit(f.rateRules, model, projects, binDir));
      save();
    }
    if (!f.skipRefresh) {
      process.stderr.write(`bench: refresh of ${f.refreshRules} rules + ${f.refreshKeys} keys at the default rate limit…\n`);
      results.refresh = await measureRefresh(f, projects, binDir);
      save();
    }
    for (const model of f.skipTeam ? [] : f.models) {
      process.stderr.write(`bench: three stacks of 100 rules at once at the default rate limit (${model})…\n`);
      results.team.push(await measureTeam(100, model, projects, binDir));
      save();
    }
    if (!f.skipSet) {
      process.stderr.write(`bench: IpPolicyRuleSet of ${f.setRules} rules…\n`);
      results.set = await measureSet(f, projects, binDir);
      save();
    }
    if (!f.skipEmulator) results.emulator = await require("./emulator").run(); // prints its own tables
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  results.totalSeconds = (Date.now() - started) / 1000;
  save();

  console.log(`\n${results.machine}; ${results.date}; ${results.command}`);
  if (results.engine.length) console.log(`\nemulator --rate-limit off --latency ${f.latency}\n`);
  if (results.engine.length) console.log("| N rules + keys | op | ours s | baseline s | floor s | ours/baseline | ours/floor | ours ms/resource |");
  if (results.engine.length) console.log("|---|---|---|---|---|---|---|---|");
  for (const r of results.engine) {
    for (const op of ["up", "previewRefresh", "destroy"]) {
      const total = r.n + r.keys;
      console.log(`| ${r.n} + ${r.keys} | ${op} | ${fmt(r.ours[op])} | ${fmt(r.baseline[op])} | ${fmt(r.floor[op], 2)} | ${fmt(r.ours[op] / r.baseline[op], 2)} | ${fmt(r.ours[op] / r.floor[op], 1)} | ${fmt((r.ours[op] * 1000) / total, 1)} |`);
    }
  }
  if (results.engine.length) {
    console.log("\n| N | state bytes/resource ours | baseline | provider code bytes/resource ours | baseline | provider peak RSS MB ours | baseline |");
    console.log("|---|---|---|---|---|---|---|");
  }
  for (const r of results.engine) {
    console.log(`| ${r.n} | ${r.ours.stateBytesPerResource} | ${r.baseline.stateBytesPerResource} | ${r.ours.providerBytesPerResource} | ${r.baseline.providerBytesPerResource} | ${r.ours.providerPeakRssMb} | ${r.baseline.providerPeakRssMb} |`);
  }
  if (results.rateLimit.length || results.team.length) {
    console.log("\nRate limit 120/60 per account, by the emulator's model (window: rolling 60 s, the default; bucket: burst 120, then 2/s):");
    console.log("| model | run | seconds | first to last request s | lower bound s | ratio | requests | 429 |");
    console.log("|---|---|---|---|---|---|---|---|");
  }
  for (const r of results.rateLimit) {
    console.log(`| ${r.model} | up of ${r.rules} rules${r.ok ? "" : ` FAILED: ${r.error}`} | ${fmt(r.seconds)} | ${fmt(r.requestSpanSeconds)} | ${fmt(r.lowerBoundSeconds, 0)} | ${fmt(r.seconds / r.lowerBoundSeconds, 2)} (${fmt(r.requestSpanSeconds / r.lowerBoundSeconds, 2)}) | ${r.requests} | ${r.rateLimited429} |`);
    if (r.driftGate) console.log(`| ${r.model} | preview --refresh right after it | ${fmt(r.driftGate.seconds)} | | | | ${r.driftGate.requests} | ${r.driftGate.rateLimited429} |`);
  }
  for (const t of results.team) {
    console.log(`| ${t.model} | ${t.stacks} stacks × ${t.perStack} rules at once${t.ok ? "" : ` FAILED: ${t.errors.join("; ")}`} | ${fmt(t.seconds)} | ${fmt(t.requestSpanSeconds)} | ${fmt(t.lowerBoundSeconds, 0)} | ${fmt(t.seconds / t.lowerBoundSeconds, 2)} (${fmt(t.requestSpanSeconds / t.lowerBoundSeconds, 2)}) | ${t.requests} | ${t.rateLimited429} (${fmt((100 * t.rateLimited429) / t.requests)}%) |`);
  }
  if (results.refresh) {
    const r = results.refresh;
    const pages = Math.ceil(r.rules / 100);
    console.log(`\nRefresh of ${r.rules} rules + ${r.keys} keys, emulator at 120/60 (right after the up: ${fmt(r.up.seconds)} s, ${r.up.requests} requests):`);
    console.log("| operation | reads | seconds | requests | 429 | target |");
    console.log("|---|---|---|---|---|---|");
    const row = (op, reads, m, target) => m && console.log(`| ${op} | ${reads} | ${fmt(m.seconds)} | ${m.requests} | ${m.rateLimited429} | ${target} |`);
    row("preview --refresh", "list", r.previewList, `≤ ${2 * pages + 10} requests, ≤ 1.2 × ${fmt(r.previewListOff.seconds)} s = ${fmt(1.2 * r.previewListOff.seconds)} s`);
    row("preview --refresh", "GET each", r.previewGet, "");
    row("up --refresh, no changes", "list", r.upRefreshList, `≤ ${4 * pages + 20} requests, no 429`);
    row("up --refresh, no changes", "GET each", r.upRefreshGet, "");
    row("preview --refresh at --rate-limit off", "list", r.previewListOff, "");
    row("preview --refresh at --rate-limit off", "GET each", r.previewGetOff, "");
  }
  if (results.set) {
    const r = results.set;
    const u = r.unlimited;
    const fl = r.floor;
    const pr = r.perRule;
    console.log(`\nIpPolicyRuleSet of ${r.rules} rules, emulator --rate-limit off --latency ${f.latency} (per-rule: ${r.rules} IpPolicyRule resources; floor: the set's calls made directly, 16 at once):`);
    console.log("| operation | set s | per-rule ours s | per-rule baseline s | floor s | set/floor | set/baseline | requests (POST/PATCH/DELETE) |");
    console.log("|---|---|---|---|---|---|---|---|");
    const row = (label, m, floor, ours, base) => console.log(`| ${label} | ${fmt(m.seconds)} | ${fmt(ours ?? "–")} | ${fmt(base ?? "–")} | ${fmt(floor, 2)} | ${fmt(m.seconds / floor, 1)} | ${base ? fmt(m.seconds / base, 2) : "–"} | ${m.requests} (${m.post}/${m.patch}/${m.delete}) |`);
    row(`up of ${r.rules} from empty`, u.up, fl.up, pr?.ours.up, pr?.baseline.up);
    row("preview --refresh", u.previewRefresh, fl.previewRefresh, pr?.ours.previewRefresh, pr?.baseline.previewRefresh);
    row("change of 100 CIDRs (same action)", u.change100, fl.change100);
    row("destroy", u.destroy, fl.destroy, pr?.ours.destroy, pr?.baseline.destroy);
    console.log(`state: ${u.stateBytes} bytes for the set of ${r.rules} rules${pr ? ` (per-rule ours: ${pr.ours.stateBytesPerResource * r.rules} bytes)` : ""}`);
    const l = r.limited;
    console.log(`At the emulator's default limit: up of ${r.rules}: ${fmt(l.seconds)} s, ${l.requests} requests, ${l.rateLimited429} answered 429; lower bound (${l.model} model) ${fmt(l.lowerBoundSeconds)} s; ratio ${fmt(l.seconds / Math.max(l.lowerBoundSeconds, 1e-9), 2)}`);
    if (r.large) console.log(`${r.large.rules} rules in one set: up ${fmt(r.large.up.seconds)} s (${r.large.up.requests} requests), preview --refresh ${fmt(r.large.previewRefresh.seconds)} s (${r.large.previewRefresh.requests} requests), destroy ${fmt(r.large.destroy.seconds)} s; state ${r.large.stateBytes} bytes`);
  }
  console.log(`\ntotal ${fmt(results.totalSeconds, 0)} s; figures in ${path.relative(REPO, out)}`);
}

main().catch((e) => {
  process.stderr.write(`bench failed: ${e.stack || e}\n`);
  process.exit(1);
});
