// The emulator's own data (issue 11): fixtures that cannot be lost, a data file checked whole
// before use and never overwritten when it cannot be loaded, one emulator per file, nothing
// acknowledged lost to kill -9, and a cost per request that does not grow with what is stored.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { call, client, listAll, REPO, RunningEmulator, startEmulator } from "../helpers/emulator";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** A fresh data file written by the emulator itself; returns its path. */
async function dataFile(): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-data-"));
  dirs.push(dir);
  const file = path.join(dir, "state.json");
  await (await startEmulator(["--data", file])).stop();
  return file;
}

/** Starting with these flags fails with this message (an emulator that starts anyway is stopped). */
async function expectRefused(flags: string[], message: RegExp) {
  const result = await startEmulator(flags).catch((e: Error) => e);
  if (!(result instanceof Error)) await result.stop();
  expect(result).toBeInstanceOf(Error);
  expect((result as Error).message).toMatch(message);
}

const read = (file: string) => JSON.parse(fs.readFileSync(file, "utf8"));
const write = (file: string, value: unknown) =>
  fs.writeFileSync(file, typeof value === "string" ? value : JSON.stringify(value));
const alnum = (n: number) =>
  randomBytes(n)
    .toString("base64")
    .replace(/[^A-Za-z0-9]/g, "a")
    .slice(0, n);

describe("fixtures", () => {
  it("refuses to delete a fixture key (403), and restarts on a data file that lost one", async () => {
    const file = await dataFile();
    const emu = await startEmulator(["--data", file, "--rate-limit", "off"]);
    try {
      const keys = await listAll(emu.url, emu.adminToken, "/api_keys", "keys");
      const fixtures = keys.filter((k) => /^emulator fixture/.test(k.description));
      expect(fixtures).toHaveLength(2); // the admin's and the member's; the other account's is not listed here
      for (const key of fixtures) {
        const res = await client(emu.url, emu.adminToken).delete(`/api_keys/${key.id}`);
        expect(res.status).toBe(403);
        expect(res.body.msg).toMatch(/fixture key/);
      }
    } finally {
      await emu.stop();
    }
    // A data file from before the protection, whose member key was deleted.
    const state = read(file);
    state.keys = state.keys.filter((k: any) => k.fixture !== "member");
    write(file, state);
    fs.rmSync(`${file}.journal`, { force: true });
    const again = await startEmulator(["--data", file]);
    try {
      expect((await client(again.url, again.memberToken).get("/api_keys")).status).toBe(200);
    } finally {
      await again.stop();
    }
  });
});

describe("data file", () => {
  it("refuses a data file of the wrong structure, naming what is wrong, and leaves it as it was", async () => {
    const file = await dataFile();
    const good = read(file);
    const { keys: _dropped, ...noKeys } = good;
    const cases: [unknown, RegExp][] = [
      [{ ...good, rules: "x" }, /rules must be an array/],
      [{ ...good, accounts: [] }, /accounts must hold the emulator's 2 accounts/],
      [noKeys, /keys must be an array/],
      [{ ...good, keys: [{ ...good.keys[0], accountId: "acct_nope" }] }, /keys\[0\]\.accountId/],
      [{ ...good, rules: [{ id: "ipr_x" }] }, /rules\[0\]\.accountId must be a string/],
      [[], /JSON object/],
      ["{not json", /valid JSON/],
    ];
    for (const [content, message] of cases) {
      write(file, content);
      const before = fs.readFileSync(file);
      await expectRefused(["--data", file], message);
      expect(fs.readFileSync(file).equals(before)).toBe(true);
      expect(fs.existsSync(`${file}.lock`)).toBe(false);
    }
  });

  it("refuses a journal with a damaged line, and skips a last line cut short by a kill", async () => {
    const file = await dataFile();
    fs.writeFileSync(`${file}.journal`, `{"seq":99,"op":"deleteKey","id":"ak_x"}\n{"seq": 100, "op": "ke`);
    await (await startEmulator(["--data", file])).stop();
    fs.writeFileSync(`${file}.journal`, `garbage\n{"seq":99,"op":"deleteKey","id":"ak_x"}\n`);
    await expectRefused(["--data", file], /state\.json\.journal: line 1: the content must be valid JSON/);
  });

  it("refuses a second emulator on the same data file, and takes over the lock of one that was killed", async () => {
    const file = await dataFile();
    const first = await startEmulator(["--data", file]);
    try {
      await expectRefused(["--data", file], new RegExp(`in use by another emulator \\(pid ${first.process.pid}\\)`));
    } finally {
      await first.kill();
    }
    expect(fs.existsSync(`${file}.lock`)).toBe(true);
    const second = await startEmulator(["--data", file]);
    expect(await second.stop()).toBe(0);
    expect(fs.existsSync(`${file}.lock`)).toBe(false);
  });

  it("reads the lock file of an older version: refuses while its PID runs, takes it over once it is gone", async () => {
    const file = await dataFile();
    write(`${file}.lock`, String(process.pid)); // this test runner: alive
    await expectRefused(["--data", file], new RegExp(`in use by another emulator \\(pid ${process.pid}\\)`));
    const gone = spawn(process.execPath, ["-e", ""]);
    await new Promise((resolve) => gone.once("exit", resolve));
    write(`${file}.lock`, String(gone.pid));
    const emu = await startEmulator(["--data", file]);
    expect(fs.statSync(`${file}.lock`).isDirectory()).toBe(true);
    expect(await emu.stop()).toBe(0);
    expect(fs.existsSync(`${file}.lock`)).toBe(false);
  });

  it("removes temp files of writes interrupted by a kill", async () => {
    const file = await dataFile();
    const temp = path.join(path.dirname(file), ".state.json.99999.tmp");
    fs.writeFileSync(temp, "{half");
    await (await startEmulator(["--data", file])).stop();
    expect(fs.existsSync(temp)).toBe(false);
  });
});

describe("durability", () => {
  it("loses no acknowledged change to kill -9 during concurrent writes", async () => {
    const file = await dataFile();
    const emu = await startEmulator(["--data", file, "--rate-limit", "off"]);
    const admin = client(emu.url, emu.adminToken);
    const acknowledged: string[] = [];
    let killed: Promise<void> | undefined;
    await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        const res = await (
          i % 3 === 0
            ? admin.post("/api_keys", { description: `k${i}` })
            : admin.post("/ip_policy_rules", {
                cidr: `10.77.${i}.0/24`,
                ip_policy_id: emu.fixtures.ipPolicies[i % 2],
                action: "allow",
              })
        ).catch(() => undefined);
        if (res?.status === 201) acknowledged.push(res.body.id);
        if (acknowledged.length === 100) killed ??= emu.kill();
      }),
    );
    await (killed ?? emu.kill());
    expect(acknowledged.length).toBeGreaterThanOrEqual(100);
    const again = await startEmulator(["--data", file, "--rate-limit", "off"]);
    try {
      const keys = await listAll(again.url, again.adminToken, "/api_keys", "keys");
      const rules = await listAll(again.url, again.adminToken, "/ip_policy_rules", "ip_policy_rules");
      const stored = new Set([...keys, ...rules].map((o) => o.id));
      expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    } finally {
      await again.stop();
    }
  });

  it("folds the journal into the snapshot once it outgrows it, and loses nothing doing so", async () => {
    const file = await dataFile();
    const emu = await startEmulator(["--data", file, "--rate-limit", "off"]);
    const admin = client(emu.url, emu.adminToken);
    const ids: string[] = [];
    let next = 0;
    try {
      // About 1.3 MB of journal: past the 1 MiB at which a small snapshot is rewritten.
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          while (next < 1000) {
            const res = await admin.post("/api_keys", { description: `bulk ${next++}`, metadata: "m".repeat(1200) });
            expect(res.status).toBe(201);
            ids.push(res.body.id);
          }
        }),
      );
      expect(fs.statSync(`${file}.journal`).size).toBeLessThan(1 << 20);
      expect(fs.statSync(file).size).toBeGreaterThan(500_000);
    } finally {
      await emu.kill();
    }
    const again = await startEmulator(["--data", file, "--rate-limit", "off"]);
    try {
      const stored = new Set((await listAll(again.url, again.adminToken, "/api_keys", "keys")).map((k) => k.id));
      expect(ids.filter((id) => !stored.has(id))).toEqual([]);
    } finally {
      await again.stop();
    }
  });

  it("keeps exactly one rule among concurrent creates of one CIDR", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    try {
      const admin = client(emu.url, emu.adminToken);
      const body = { cidr: "192.0.2.0/24", ip_policy_id: emu.fixtures.ipPolicies[0], action: "allow" };
      const statuses = (await Promise.all(Array.from({ length: 100 }, () => admin.post("/ip_policy_rules", body)))).map(
        (r) => r.status,
      );
      expect(statuses.filter((s) => s === 201)).toHaveLength(1);
      expect(statuses.filter((s) => s === 409)).toHaveLength(99);
    } finally {
      await emu.stop();
    }
  });
});

describe("kills and races (issue 20)", () => {
  it("lets exactly one of two emulators started at once over the lock of a killed one run, 30 times in a row", async () => {
    const file = await dataFile();
    let holder = await startEmulator(["--data", file]);
    const outcomes: string[] = [];
    try {
      for (let i = 0; i < 30; i++) {
        await holder.kill(); // leaves its lock behind
        const both = await Promise.allSettled([startEmulator(["--data", file]), startEmulator(["--data", file])]);
        const running = both.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
        const refusals = both.flatMap((r) => (r.status === "rejected" ? [(r.reason as Error).message] : []));
        outcomes.push(
          `${running.length} running${refusals.every((m) => /in use by another emulator \(pid \d+\)/.test(m)) ? "" : `, ${refusals.join("; ")}`}`,
        );
        for (const extra of running.slice(1)) await extra.kill();
        if (running.length === 0) holder = await startEmulator(["--data", file]);
        else holder = running[0];
      }
    } finally {
      await holder.kill();
    }
    expect(outcomes).toEqual(Array(30).fill("1 running"));
  }, 120_000);

  it("starts on whatever a kill -9 during the first start leaves (80 kills: timed, and at each file change)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-first-"));
    dirs.push(dir);
    const failures: string[] = [];
    for (let i = 0; i < 80; i++) {
      const file = path.join(dir, `try${i}`, "state.json");
      fs.mkdirSync(path.dirname(file));
      const child = spawn(process.execPath, [path.join(REPO, "dist/emulator/main.js"), "--port", "0", "--data", file], {
        stdio: "ignore",
      });
      const exited = new Promise((resolve) => child.once("exit", resolve));
      const kill = () => child.kill("SIGKILL");
      // Even tries: at a time spread over the start (0–250 ms); odd ones: at the k-th change the
      // emulator makes in the directory (1–10), which is where the snapshot and journal are written.
      let watcher: fs.FSWatcher | undefined;
      if (i % 2 === 0) setTimeout(kill, Math.round((i / 80) * 250));
      else {
        let changes = 0;
        const k = 1 + ((i >> 1) % 10);
        watcher = fs.watch(path.dirname(file), () => ++changes === k && kill());
        setTimeout(kill, 2000); // fewer changes than k: the start had finished
      }
      await exited;
      watcher?.close();
      const left = fs.readdirSync(path.dirname(file)).join(" ");
      const started = await startEmulator(["--data", file]).catch((e: Error) => e);
      if (started instanceof Error) failures.push(`try ${i} (left: ${left}): ${started.message.trim()}`);
      else await started.stop();
    }
    expect(failures).toEqual([]);
  }, 180_000);

  it("starts on a journal an older emulator left without its snapshot when killed in its first start; refuses any other", async () => {
    const file = await dataFile();
    const fixture = read(file).keys.find((k: any) => k.fixture === "admin");
    const lost = { ...fixture, accountId: "acct_neverwritten", ownerId: "usr_neverwritten" };
    fs.rmSync(file);
    write(`${file}.journal`, `${JSON.stringify({ op: "key", key: lost, seq: 4 })}\n{"op":"ke`);
    const emu = await startEmulator(["--data", file]);
    await emu.stop();
    expect(read(file).accounts).toHaveLength(2);
    fs.rmSync(file);
    const rule = {
      id: "ipr_x",
      accountId: "acct_x",
      ipPolicyId: "ipp_x",
      cidr: "10.0.0.0/8",
      action: "allow",
      description: "",
      metadata: "",
      createdAt: "",
      seq: 5,
    };
    const journal = `${JSON.stringify({ op: "key", key: lost, seq: 4 })}\n${JSON.stringify({ op: "rule", rule, seq: 5 })}\n`;
    write(`${file}.journal`, journal);
    await expectRefused(["--data", file], /state\.json\.journal: its snapshot .*state\.json is missing/);
    expect(fs.readFileSync(`${file}.journal`, "utf8")).toBe(journal);
    expect(fs.existsSync(file)).toBe(false);
  });
});

describe("many objects", () => {
  /** A data file holding `keys` extra API keys and `rules` extra rules, as if made through the API. */
  async function seeded(keys: number, rules: number): Promise<string> {
    const file = await dataFile();
    const state = read(file);
    const [main] = state.accounts;
    const createdAt = new Date().toISOString();
    for (let i = 0; i < keys; i++) {
      state.keys.push({
        id: `ak_${alnum(24)}`,
        accountId: main.id,
        ownerId: main.users[0].id,
        description: `seeded ${i}`,
        metadata: "",
        createdAt,
        seq: ++state.seq,
        tokenHash: randomBytes(32).toString("hex"),
      });
    }
    for (let i = 0; i < rules; i++) {
      const cidr = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`;
      state.rules.push({
        id: `ipr_${alnum(24)}`,
        accountId: main.id,
        ipPolicyId: main.ipPolicies[0],
        cidr,
        action: "allow",
        description: `seeded ${i}`,
        metadata: "",
        createdAt,
        seq: ++state.seq,
      });
    }
    write(file, state);
    return file;
  }

  /** Bytes the process has written (files and sockets) so far, from /proc. */
  const written = (emu: RunningEmulator) =>
    Number(/wchar: (\d+)/.exec(fs.readFileSync(`/proc/${emu.process.pid}/io`, "utf8"))![1]);

  async function medianMs(times: number, request: () => Promise<unknown>): Promise<number> {
    const ms: number[] = [];
    for (let i = 0; i < times; i++) {
      const started = process.hrtime.bigint();
      await request();
      ms.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    return ms.sort((a, b) => a - b)[Math.floor(times / 2)];
  }

  it("with 50,000 keys and 20,000 rules: an invalid token costs what a valid one does, and a change writes little", async () => {
    const emu = await startEmulator(["--data", await seeded(50_000, 20_000), "--rate-limit", "off"]);
    try {
      const admin = client(emu.url, emu.adminToken);
      // Tokens with `_` whose first part names no key were compared with every key.
      const invalid = () => call(emu.url, `${alnum(24)}_${alnum(32)}`, "GET", "/api_keys/ak_nope");
      const valid = () => admin.get("/api_keys/ak_nope");
      await medianMs(20, valid);
      const validMs = await medianMs(100, valid);
      const invalidMs = await medianMs(100, invalid);
      expect(invalidMs).toBeLessThan(validMs + 3);

      const before = written(emu);
      for (let i = 0; i < 20; i++) {
        expect(
          (
            await admin.post("/ip_policy_rules", {
              cidr: `10.99.${i}.0/24`,
              ip_policy_id: emu.fixtures.ipPolicies[0],
              action: "allow",
            })
          ).status,
        ).toBe(201);
      }
      // The data file holds about 12 MB; each create once rewrote all of it.
      expect((written(emu) - before) / 20).toBeLessThan(20_000);
      expectError409(
        await admin.post("/ip_policy_rules", {
          cidr: "10.0.0.7/32",
          ip_policy_id: emu.fixtures.ipPolicies[0],
          action: "deny",
        }),
      );
    } finally {
      await emu.stop();
    }
  });
});

function expectError409(res: { status: number; body: any }) {
  expect(res.status).toBe(409);
  expect(res.body.msg).toMatch(/10\.0\.0\.7\/32: ipr_/);
}
