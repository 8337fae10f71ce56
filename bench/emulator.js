#!/usr/bin/env node
// The emulator alone (`npm run build && node bench/emulator.js`; also the last part of `npm run bench`):
// requests per second, p50 and p99 latency of rule create / get / delete (medians of 3 rounds) with
// 1,000 and 100,000 objects already stored, in memory and with --data (every change fsync'd before its answer).
// Objects are stored beforehand: through the API in memory, written into the data file with --data.
// Prints a table and returns the figures; standalone it writes bench/results-emulator.json.
"use strict";
const { randomBytes } = require("node:crypto");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const emulatorProcess = require("../scripts/emulator-process");
const { table } = require("./table");

const REPO = path.resolve(__dirname, "..");
const SIZES = [1_000, 100_000];
const REQUESTS = 5_000; // per operation and round, after 500 of each untimed to warm up
const ROUNDS = 3;
const PARALLEL = 16; // requests in flight

const alnum = (n) =>
  randomBytes(n * 2)
    .toString("base64")
    .replace(/[^A-Za-z0-9]/g, "")
    .slice(0, n);
const cidrOf = (i, first) => `${first}.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`;

async function startEmulator(args) {
  const { child, startup, exited } = await emulatorProcess.startEmulator(["--rate-limit", "off", ...args]);
  return { child, exited, ...startup };
}
const stop = async (emu) => {
  emu.child.kill("SIGTERM");
  await emu.exited;
};

/** Runs `count` calls `PARALLEL` at a time; returns requests/s and latency percentiles in ms. */
async function load(count, call) {
  const ms = [];
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < count) {
        const i = next++;
        const t = process.hrtime.bigint();
        await call(i);
        ms.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  ms.sort((a, b) => a - b);
  const at = (p) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))];
  return { perSecond: Math.round(count / seconds), p50Ms: +at(0.5).toFixed(2), p99Ms: +at(0.99).toFixed(2) };
}

/** A data file holding `n` rules of the main account, written as the emulator writes it. */
async function seededDataFile(dir, n) {
  const file = path.join(dir, "emu.json");
  await stop(await startEmulator(["--data", file]));
  const state = JSON.parse(fs.readFileSync(file, "utf8"));
  const [main] = state.accounts;
  const createdAt = new Date().toISOString();
  for (let i = 0; i < n; i++) {
    state.rules.push({
      id: `ipr_${alnum(24)}`,
      accountId: main.id,
      ipPolicyId: main.ipPolicies[i % 2],
      cidr: cidrOf(i, 10),
      action: "allow",
      description: "",
      metadata: "",
      createdAt,
      seq: ++state.seq,
    });
  }
  fs.writeFileSync(file, JSON.stringify(state));
  return file;
}

async function measure(n, withData, request) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-bench-emu-"));
  try {
    const args = withData ? ["--data", await seededDataFile(dir, n)] : [];
    const started = Date.now();
    const emu = await startEmulator(args);
    const startSeconds = (Date.now() - started) / 1000;
    try {
      const call = async (method, p, body) => {
        const res = await request(emu.url + p, {
          method,
          headers: {
            authorization: `Bearer ${emu.adminToken}`,
            "service-version": "2",
            "content-type": "application/json",
          },
          body: body && JSON.stringify(body),
        });
        const text = await res.body.text();
        if (res.statusCode >= 300) throw new Error(`${method} ${p}: ${res.statusCode} ${text}`);
        return text && JSON.parse(text);
      };
      const rule = (i, first) => ({
        cidr: cidrOf(i, first),
        ip_policy_id: emu.fixtures.ipPolicies[i % 2],
        action: "allow",
      });
      if (!withData) {
        process.stderr.write(`bench emulator: storing ${n} rules through the API…\n`);
        await load(n, (i) => call("POST", "/ip_policy_rules", rule(i, 10)));
      }
      const cycle = async (count, first) => {
        const ids = [];
        const create = await load(count, async (i) =>
          ids.push((await call("POST", "/ip_policy_rules", rule(i, first))).id),
        );
        const get = await load(count, (i) => call("GET", `/ip_policy_rules/${ids[i]}`));
        const del = await load(count, (i) => call("DELETE", `/ip_policy_rules/${ids[i]}`));
        return { create, get, delete: del };
      };
      await cycle(500, 12);
      // Each figure is the median of ROUNDS rounds: the machine may be shared.
      const rounds = [];
      for (let r = 0; r < ROUNDS; r++) rounds.push(await cycle(REQUESTS, 20 + r));
      const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
      const figures = {};
      for (const op of ["create", "get", "delete"]) {
        figures[op] = Object.fromEntries(
          ["perSecond", "p50Ms", "p99Ms"].map((k) => [k, median(rounds.map((round) => round[op][k]))]),
        );
      }
      const rssMb = Math.round(
        Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${emu.child.pid}/status`, "utf8"))[1]) / 1024,
      );
      return { stored: n, data: withData, startSeconds, ...figures, rssMb };
    } finally {
      await stop(emu);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function run() {
  const { Agent, request } = require(path.join(REPO, "node_modules/undici"));
  const agent = new Agent({ connections: PARALLEL });
  const viaAgent = (url, options) => request(url, { ...options, dispatcher: agent });
  const rows = [];
  try {
    for (const n of SIZES) {
      for (const withData of [false, true]) {
        process.stderr.write(`bench emulator: ${n} stored, ${withData ? "--data" : "in memory"}…\n`);
        rows.push(await measure(n, withData, viaAgent));
      }
    }
  } finally {
    await agent.close();
  }
  console.log(
    `\nEmulator alone: ${REQUESTS} requests per operation, ${PARALLEL} in flight, --rate-limit off; medians of ${ROUNDS} rounds\n`,
  );
  const data = (r) => (r.data ? "--data" : "memory");
  table(
    ["stored rules", "data", "operation", "requests/s", "p50 ms", "p99 ms"],
    rows.flatMap((r) =>
      ["create", "get", "delete"].map((op) => [r.stored, data(r), op, r[op].perSecond, r[op].p50Ms, r[op].p99Ms]),
    ),
  );
  console.log("");
  table(
    ["stored rules", "data", "start s", "emulator RSS MB"],
    rows.map((r) => [r.stored, data(r), r.startSeconds.toFixed(2), r.rssMb]),
  );
  return { requestsPerOperation: REQUESTS, parallel: PARALLEL, rounds: ROUNDS, rows };
}

module.exports = { run };

if (require.main === module) {
  const started = Date.now();
  run()
    .then((figures) => {
      const machine = `${os.availableParallelism()} cores, linux ${os.release()}, node ${process.version}`;
      const out = path.join(REPO, "bench/results-emulator.json");
      fs.writeFileSync(
        out,
        `${JSON.stringify({ date: new Date().toISOString(), machine, command: "node bench/emulator.js", seconds: (Date.now() - started) / 1000, ...figures }, null, 2)}\n`,
      );
      console.log(`\ntotal ${Math.round((Date.now() - started) / 1000)} s; figures in ${path.relative(REPO, out)}`);
    })
    .catch((e) => {
      process.stderr.write(`bench emulator failed: ${e.stack || e}\n`);
      process.exit(1);
    });
}
