// What our code itself costs in memory for one IpPolicyRuleSet of N rules (default 5,000), in one
// process and without Pulumi's host: the set's module (dist/provider, `npm run build` first) driven
// directly against the emulator, with the modules a host loads first (@pulumi/pulumi, @grpc/grpc-js,
// node:http2). For each operation (a new set's check twice, create, read, check, diff): the old
// generation's growth at its peak and after a full collection, and the resident memory (RSS) after.
// `--turbofan`: the HTTP parser's WebAssembly recompiled by TurboFan, as before provider/memory.ts
// liftoffOnly (its process state marked as set, the flag left alone), to show what that costs.
//   node --expose-gc bench/memory-parts.js [--rules N] [--turbofan]
/* global gc -- node --expose-gc defines it */
"use strict";
const path = require("node:path");
const v8 = require("node:v8");
const REPO = path.resolve(__dirname, "..");
const { startEmulator } = require("../scripts/emulator-process");

const args = process.argv.slice(2);
const N = args.includes("--rules") ? Number(args[args.indexOf("--rules") + 1]) : 5000;
const mb = (b) => (b / 2 ** 20).toFixed(1);
const oldUsed = () =>
  v8
    .getHeapSpaceStatistics()
    .filter((s) => s.space_name === "old_space" || s.space_name === "large_object_space")
    .reduce((n, s) => n + s.space_used_size, 0);

async function main() {
  if (typeof gc !== "function") throw new Error("run with node --expose-gc");
  const { child, startup } = await startEmulator(["--rate-limit", "off"]);
  try {
    const env = { ACCESSCTL_API_URL: startup.url, ACCESSCTL_API_KEY: startup.adminToken };
    Object.assign(process.env, env, { ACCESSCTL_MAX_REQUESTS_PER_MINUTE: "1000000" });
    for (const m of ["@pulumi/pulumi", "@grpc/grpc-js", "node:http2"]) require(m); // what a host has loaded
    const { processState } = require(path.join(REPO, "dist/provider/state.js"));
    if (args.includes("--turbofan")) processState("wasm", () => ({})).liftoffOnly = true;
    const { RESOURCES } = require(path.join(REPO, "dist/provider/resources.js"));
    const { bounded } = require(path.join(REPO, "dist/provider/operation.js"));
    const set = bounded(RESOURCES.IpPolicyRuleSet.load());
    const urn = "urn:pulumi:dev::accessctl-bench::pulumi-nodejs:dynamic/accessctl:IpPolicyRuleSet::office-allowlist";
    const cidrs = Array.from({ length: N }, (_, i) => `10.${Math.floor(i / 250)}.${i % 250}.0/24`);
    const rules = cidrs.map((cidr) => ({ cidr, action: "allow" }));
    const news = { ipPolicyId: startup.fixtures.ipPolicies[0], rules, __urn: urn };
    let peak = 0;
    const timer = setInterval(() => (peak = Math.max(peak, oldUsed())), 5);
    const rows = [];
    const step = async (label, fn) => {
      gc();
      const before = oldUsed();
      peak = before;
      const result = await fn();
      await new Promise((r) => setImmediate(r));
      const top = peak;
      gc();
      const kept = oldUsed() - before;
      const rssMb = mb(process.memoryUsage.rss());
      rows.push({ operation: label, oldPeakMb: mb(top - before), oldKeptMb: mb(kept), rssMb });
      return result;
    };
    gc();
    const loaded = mb(process.memoryUsage.rss());
    await step("check (preview)", () => set.check({}, news));
    const checked = await step("check (update)", () => set.check({}, news));
    const made = await step("create", () => set.create({ ...checked.inputs, __urn: urn }));
    const read = await step("read", () => set.read(made.id, { ...made.outs, __urn: urn }));
    const again = await step("check (again)", () => set.check(read.inputs, news));
    await step("diff", () => set.diff(made.id, { ...read.props, __urn: urn }, { ...again.inputs, __urn: urn }));
    clearInterval(timer);
    const parser = args.includes("--turbofan") ? "TurboFan" : "Liftoff only";
    console.log(`${N} rules, the parser's WebAssembly by ${parser}; RSS ${loaded} MB once loaded`);
    console.table(rows);
  } finally {
    child.kill("SIGTERM");
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
