// The emulator as a process: flags, rate limits, injected faults, persistence across a kill.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { client, listAll, startEmulator } from "../helpers/emulator";
import { compiled } from "../helpers/provider";

/** The compiled emulator in this process, on a clock the test moves. */
async function emulatorOnClock(rateLimit: { requests: number; seconds: number; model?: string }) {
  const { createEmulator } = compiled("emulator/server.js");
  const { Store } = compiled("emulator/store.js");
  const clock = { now: 1_000_000 };
  const store = new Store();
  const tokens = store.issueFixtureTokens();
  const emulator = createEmulator({ store, rateLimit, now: () => clock.now });
  const url = await emulator.listen(0, "127.0.0.1");
  return {
    clock,
    admin: client(url, tokens.admin),
    other: client(url, tokens.other),
    close: () => emulator.close().then(() => store.close()),
  };
}

describe("rate limit", () => {
  it("answers 429 with Retry-After and the error shape once an account spends its budget", async () => {
    const emu = await startEmulator(["--rate-limit", "3/60"]);
    try {
      const admin = client(emu.url, emu.adminToken);
      for (let i = 0; i < 3; i++) expect((await admin.get("/api_keys")).status).toBe(200);
      const limited = await admin.get("/api_keys");
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(limited.body).toMatchObject({
        error_code: "ERR_RATE_LIMITED",
        status_code: 429,
        details: { operation_id: expect.stringMatching(/^op_/) },
      });
      // Per account: the other account still has its budget.
      expect((await client(emu.url, emu.otherAccountToken).get("/api_keys")).status).toBe(200);
    } finally {
      await emu.stop();
    }
  });

  it("is a rolling window by default: 120 in a minute, the 121st waits for the first to leave the window", async () => {
    const emu = await emulatorOnClock({ requests: 120, seconds: 60 });
    try {
      for (let i = 0; i < 120; i++) {
        expect((await emu.admin.get("/api_keys?limit=1")).status).toBe(200);
        emu.clock.now += 100; // 120 requests over 12 s
      }
      // 12 s after the first: it leaves the window 48 s from now. A bucket would have let 24 more through by now.
      const limited = await emu.admin.get("/api_keys?limit=1");
      expect(limited.status).toBe(429);
      expect(limited.headers.get("retry-after")).toBe("48");
      expect(limited.body).toMatchObject({ error_code: "ERR_RATE_LIMITED", status_code: 429 });
      emu.clock.now += 47_900; // 59.9 s after the first: still inside its window; 100 ms left, rounded up to 1 s
      const almost = await emu.admin.get("/api_keys?limit=1");
      expect(almost.status).toBe(429);
      expect(almost.headers.get("retry-after")).toBe("1");
      emu.clock.now = 1_000_000 + 61_000; // 61 s after the first: the first 11 have left the window
      for (let i = 0; i < 11; i++) expect((await emu.admin.get("/api_keys?limit=1")).status).toBe(200);
      const twelfth = await emu.admin.get("/api_keys?limit=1");
      expect(twelfth.status).toBe(429);
      expect(twelfth.headers.get("retry-after")).toBe("1"); // the 12th of the first leaves at 61.1 s
      expect((await emu.other.get("/api_keys?limit=1")).status).toBe(200); // per account
    } finally {
      await emu.close();
    }
  });

  it("keeps the token bucket as --rate-limit-model bucket: after a burst of N, N per window", async () => {
    const emu = await emulatorOnClock({ requests: 120, seconds: 60, model: "bucket" });
    try {
      for (let i = 0; i < 120; i++) expect((await emu.admin.get("/api_keys?limit=1")).status).toBe(200);
      const limited = await emu.admin.get("/api_keys?limit=1");
      expect(limited.status).toBe(429);
      expect(limited.headers.get("retry-after")).toBe("1");
      emu.clock.now += 10_000; // 2 per second
      for (let i = 0; i < 20; i++) expect((await emu.admin.get("/api_keys?limit=1")).status).toBe(200);
      expect((await emu.admin.get("/api_keys?limit=1")).status).toBe(429);
    } finally {
      await emu.close();
    }
  });

  it("the process takes --rate-limit-model window|bucket, window by default, and refuses anything else", async () => {
    const window = await startEmulator(["--rate-limit", "5/2"]);
    const bucket = await startEmulator(["--rate-limit", "5/2", "--rate-limit-model", "bucket"]);
    try {
      for (const emu of [window, bucket]) {
        const admin = client(emu.url, emu.adminToken);
        const first = await Promise.all(Array.from({ length: 6 }, () => admin.get("/api_keys?limit=1")));
        expect(first.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 429]);
      }
      // 0.8 s later: the bucket has refilled 2, the window nothing.
      await new Promise((r) => setTimeout(r, 800));
      expect((await client(window.url, window.adminToken).get("/api_keys?limit=1")).status).toBe(429);
      expect((await client(bucket.url, bucket.adminToken).get("/api_keys?limit=1")).status).toBe(200);
    } finally {
      await window.stop();
      await bucket.stop();
    }
    await expect(startEmulator(["--rate-limit-model", "leaky"])).rejects.toThrow(
      /--rate-limit-model: expected window or bucket/,
    );
  });

  it("can be turned off", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    try {
      const admin = client(emu.url, emu.adminToken);
      const statuses = await Promise.all(Array.from({ length: 150 }, () => admin.get("/api_keys?limit=1")));
      expect(statuses.every((r) => r.status === 200)).toBe(true);
    } finally {
      await emu.stop();
    }
  });
});

describe("faults", () => {
  it("--fail-rate 1 answers 503 before making any change", async () => {
    const emu = await startEmulator(["--fail-rate", "1"]);
    try {
      const admin = client(emu.url, emu.adminToken);
      const res = await admin.post("/api_keys", { description: "never" });
      expect(res.status).toBe(503);
      expect(res.body.error_code).toBe("ERR_SERVICE_UNAVAILABLE");
    } finally {
      await emu.stop();
    }
  });

  it("--fail-rate 0.5 fails some requests and leaves only the ones that succeeded", async () => {
    const emu = await startEmulator(["--fail-rate", "0.5", "--rate-limit", "off"]);
    try {
      const admin = client(emu.url, emu.adminToken);
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => admin.post("/api_keys", { description: `k${i}` })),
      );
      const ok = results.filter((r) => r.status === 201).length;
      expect(ok).toBeGreaterThan(0);
      expect(ok).toBeLessThan(40);
      expect(results.every((r) => r.status === 201 || r.status === 503)).toBe(true);
      // Reading back may itself meet 503s: retry each page until it passes.
      let keys: any[] | undefined;
      for (let i = 0; i < 50 && !keys; i++)
        keys = await listAll(emu.url, emu.adminToken, "/api_keys", "keys").catch(() => undefined);
      expect(keys!.filter((k) => /^k\d+$/.test(k.description ?? "")).length).toBe(ok);
    } finally {
      await emu.stop();
    }
  });

  it("--latency delays every answer", async () => {
    const emu = await startEmulator(["--latency", "300"]);
    try {
      const started = Date.now();
      await client(emu.url, emu.adminToken).get("/api_keys");
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    } finally {
      await emu.stop();
    }
  });
});

describe("flags", () => {
  it("takes the admin token from --admin-token, else from ACCESSCTL_EMULATOR_ADMIN_TOKEN", async () => {
    const fromFlag = await startEmulator(["--admin-token", "flag-token-0123456789"]);
    expect(fromFlag.adminToken).toBe("flag-token-0123456789");
    expect((await client(fromFlag.url, "flag-token-0123456789").get("/api_keys")).status).toBe(200);
    await fromFlag.stop();
    const fromEnv = await startEmulator([], { ACCESSCTL_EMULATOR_ADMIN_TOKEN: "env-token-0123456789" });
    expect(fromEnv.adminToken).toBe("env-token-0123456789");
    await fromEnv.stop();
  });

  it("refuses unknown flags and bad values", async () => {
    await expect(startEmulator(["--nope"])).rejects.toThrow(/unknown flag --nope/);
    await expect(startEmulator(["--rate-limit", "fast"])).rejects.toThrow(/--rate-limit/);
    await expect(startEmulator(["--fail-rate", "2"])).rejects.toThrow(/--fail-rate/);
  });

  it("exits 0 on SIGTERM and on SIGINT", async () => {
    const a = await startEmulator();
    expect(await a.stop()).toBe(0);
    const b = await startEmulator();
    const exited = new Promise((r) => b.process.once("exit", r));
    b.process.kill("SIGINT");
    expect(await exited).toBe(0);
  });
});

describe("persistence", () => {
  it("keeps fixtures, keys, rules and modules across a SIGKILL and restart with --data", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-data-"));
    const data = path.join(dir, "state.json");
    const first = await startEmulator(["--data", data]);
    const admin = client(first.url, first.adminToken);
    const key = (await admin.post("/api_keys", { description: "survives" })).body;
    const rule = (
      await admin.post("/ip_policy_rules", {
        cidr: "2001:db8::/32",
        ip_policy_id: first.fixtures.ipPolicies[0],
        action: "deny",
      })
    ).body;
    const edgePath = `/edges/tls/${first.fixtures.tlsEdges[0]}/mutual_tls`;
    const module = (
      await admin.put(edgePath, { enabled: false, certificate_authority_ids: first.fixtures.certificateAuthorities })
    ).body;
    await first.kill();
    expect(fs.readFileSync(data, "utf8")).not.toContain(key.token);
    // No temp file left behind: the snapshot, its journal and the lock of the killed emulator.
    expect(fs.readdirSync(dir).sort()).toEqual(["state.json", "state.json.journal", "state.json.lock"]);

    const second = await startEmulator(["--data", data]);
    try {
      expect(second.fixtures).toEqual(first.fixtures);
      const again = client(second.url, second.adminToken);
      expect((await again.get(`/api_keys/${key.id}`)).body.description).toBe("survives");
      expect((await again.get(`/ip_policy_rules/${rule.id}`)).body.cidr).toBe("2001:db8::/32");
      const reloaded = (await again.get(edgePath)).body;
      expect(reloaded.enabled).toBe(false);
      expect(reloaded.certificate_authorities.map((c: any) => c.id)).toEqual(
        module.certificate_authorities.map((c: any) => c.id),
      );
      // A user-created key's token keeps working; only the fixture tokens are issued anew.
      expect((await client(second.url, key.token).get("/api_keys")).status).toBe(200);
      expect((await client(second.url, first.adminToken).get("/api_keys")).status).toBe(401);
      const keys = await listAll(second.url, second.adminToken, "/api_keys", "keys");
      expect(keys.map((k) => k.id)).toContain(key.id);
    } finally {
      await second.stop();
    }
  });
});
