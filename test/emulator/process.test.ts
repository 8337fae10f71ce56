// The emulator as a process: flags, rate limits, injected faults, persistence across a kill.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { client, listAll, startEmulator } from "../helpers/emulator";

describe("rate limit", () => {
  it("answers 429 with Retry-After and the error shape once an account spends its budget", async () => {
    const emu = await startEmulator(["--rate-limit", "3/60"]);
    try {
      const admin = client(emu.url, emu.adminToken);
      for (let i = 0; i < 3; i++) expect((await admin.get("/api_keys")).status).toBe(200);
      const limited = await admin.get("/api_keys");
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(limited.body).toMatchObject({ error_code: "ERR_RATE_LIMITED", status_code: 429, details: { operation_id: expect.stringMatching(/^op_/) } });
      // Per account: the other account still has its budget.
      expect((await client(emu.url, emu.otherAccountToken).get("/api_keys")).status).toBe(200);
    } finally {
      await emu.stop();
    }
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
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) => admin.post("/api_keys", { description: `k${i}` })));
      const ok = results.filter((r) => r.status === 201).length;
      expect(ok).toBeGreaterThan(0);
      expect(ok).toBeLessThan(40);
      expect(results.every((r) => r.status === 201 || r.status === 503)).toBe(true);
      // Reading back may itself meet 503s: retry each page until it passes.
      let keys: any[] | undefined;
      for (let i = 0; i < 50 && !keys; i++) keys = await listAll(emu.url, emu.adminToken, "/api_keys", "keys").catch(() => undefined);
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
    const rule = (await admin.post("/ip_policy_rules", { cidr: "2001:db8::/32", ip_policy_id: first.fixtures.ipPolicies[0], action: "deny" })).body;
    const edgePath = `/edges/tls/${first.fixtures.tlsEdges[0]}/mutual_tls`;
    const module = (await admin.put(edgePath, { enabled: false, certificate_authority_ids: first.fixtures.certificateAuthorities })).body;
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
      expect(reloaded.certificate_authorities.map((c: any) => c.id)).toEqual(module.certificate_authorities.map((c: any) => c.id));
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
