#!/usr/bin/env node
// `node bench/access.js [--rules 5000] [--runs 5] [--every 10]` (after `npx tsc -p tsconfig.json`): the access model
// (provider/access.ts) on a set's plan of --rules rules, in this process, no emulator or Pulumi: the
// plan (plan.ts plan) of a set whose every --every-th rule changes (CIDR moved, action flipped, deleted,
// one added), then what the plan opens and closes (accessChange of the policy before and after, the
// figure the set's preview shows), opens(step) and phase(step) of every step as apply.ts sorts them,
// and describeSpace of the result. Prints the median of --runs runs (wall time per part; `cpu`: the
// process's CPU time for all of it, less sensitive to a busy machine), each with fresh caches (a new
// command's process), and the figures; the test suite never times it (a timed test flakes on a busy machine).
"use strict";
const path = require("node:path");
const { performance } = require("node:perf_hooks");

const dist = (file) => require(path.join(__dirname, "..", "dist", file));
const args = process.argv.slice(2);
const arg = (name, dflt) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : dflt);
const N = arg("--rules", 5000);
const RUNS = arg("--runs", 5);
const EVERY = arg("--every", 10); // every EVERY-th rule changes (1: all)

/** N rules: IPv4 /24s and IPv6 /48s, every seventh a deny inside an allow; deterministic. */
function rules(n, salt) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const v6 = i % 3 === 2;
    const cidr = v6 ? `2001:db8:${(i + salt).toString(16)}::/48` : `10.${(i >> 8) & 255}.${i & 255}.0/24`;
    out.push({ cidr, action: i % 7 === 0 ? "deny" : "allow", description: "", metadata: "" });
  }
  return out;
}

function once() {
  // Fresh caches, as a new command's process has them.
  delete globalThis[Symbol.for("@accessctl/pulumi/state/v1")];
  const { plan, opens, phase } = dist("provider/ip-policy-rule-set/plan.js");
  const access = dist("provider/access.js");
  const recorded = rules(N, 0).map((r, i) => ({ ...r, id: `ipr_${i}`, uri: "", createdAt: "" }));
  const declared = rules(N, 0).flatMap((r, i) => {
    if (i % EVERY !== EVERY >> 1) return [r];
    if (i % (4 * EVERY) === EVERY >> 1) return []; // deleted
    if (i % (4 * EVERY) === EVERY + (EVERY >> 1)) return [{ ...r, action: r.action === "allow" ? "deny" : "allow" }];
    const moved = r.cidr.includes(":") ? r.cidr.replace("2001:db8:", "2001:db9:") : r.cidr.replace(/^10\./, "11.");
    return [{ ...r, cidr: moved }];
  });
  declared.push({ cidr: "0.0.0.0/0", action: "allow", description: "", metadata: "" });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const p = plan(recorded, declared);
  const t1 = performance.now();
  const change = access.accessChange(recorded, declared);
  const t2 = performance.now();
  const sorted = [...p.steps].sort((a, b) => phase(a) - phase(b));
  const opening = p.steps.filter(opens).length;
  const t3 = performance.now();
  const words = `opens ${access.describeSpace(change.opens)}; closes ${access.describeSpace(change.closes)}`;
  const t4 = performance.now();
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const times = { plan: t1 - t0, change: t2 - t1, steps: t3 - t2, words: t4 - t3, total: t4 - t0, cpu: cpuMs };
  return { ...times, n: sorted.length, opening, text: words };
}

const runs = Array.from({ length: RUNS }, once);
const median = (k) => runs.map((r) => r[k]).sort((a, b) => a - b)[Math.floor(RUNS / 2)];
const r = runs[0];
console.log(`access model, a set of ${N} rules: ${r.n} steps (${r.opening} open); median of ${RUNS} runs`);
for (const k of ["plan", "change", "steps", "words", "total", "cpu"]) {
  console.log(`  ${k.padEnd(7)} ${median(k).toFixed(1)} ms`);
}
console.log(`  ${r.text.length > 300 ? `${r.text.slice(0, 300)}…` : r.text}`);
