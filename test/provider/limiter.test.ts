// The adaptive rate limiter (provider/limiter.ts): three processes (three pipelines) sharing one
// account, each configured with the account's whole budget, learn from the service's 429s and
// stay close to its limit instead of overshooting it threefold.
import { spawn } from "node:child_process";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO, startEmulator } from "../helpers/emulator";
import { compiled } from "../helpers/provider";

// One pipeline: `count` list requests through our client, 4 at a time, with the service's budget.
const PIPELINE = `
const client = require(${JSON.stringify(path.join(REPO, "dist/provider/client.js"))});
const count = Number(process.argv[1]);
let left = count;
const worker = async () => { while (left-- > 0) await client.api("GET", "/api_keys", { what: "list" }); };
Promise.all([worker(), worker(), worker(), worker()]).then(
  () => process.stdout.write(JSON.stringify(client.counters())),
  (e) => { process.stderr.write(String(e)); process.exit(1); });
`;

function pipeline(url: string, token: string, perMinute: number, count: number): Promise<{ requests: number; rateLimited: number }> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, ACCESSCTL_API_URL: url, ACCESSCTL_API_KEY: token, ACCESSCTL_MAX_REQUESTS_PER_MINUTE: String(perMinute) };
    const child = spawn(process.execPath, ["-e", PIPELINE, String(count)], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.once("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`pipeline failed: ${err}`))));
  });
}

describe("adaptive rate", () => {
  it("three pipelines with the whole budget each share the account: all succeed, under 5% answered 429", async () => {
    // The service's 120/60, twelve times faster, so that the test takes seconds: 60 per 5 s.
    const emu = await startEmulator(["--rate-limit", "60/5"]);
    try {
      const started = Date.now();
      const results = await Promise.all([0, 1, 2].map(() => pipeline(emu.url, emu.adminToken, 720, 100)));
      const seconds = (Date.now() - started) / 1000;
      const stats = await emu.stats();
      const limited = stats.byStatus["429"] ?? 0;
      expect(stats.byStatus["200"]).toBe(300);
      expect(limited / stats.requests).toBeLessThan(0.05);
      // The bound: a burst of 60, then 12 per second. Slower than that, but not by much.
      expect(seconds).toBeLessThan(((300 - 60) / 12) * 2);
      expect(results.reduce((sum, r) => sum + r.rateLimited, 0)).toBe(limited);
    } finally {
      await emu.stop();
    }
  });

  it("halves the pace at a 429 (once for the 429s of one moment) and grows it back linearly", async () => {
    const limiter = compiled("provider/limiter.js");
    const conn = { apiUrl: "http://127.0.0.1:1", apiKey: "limiter-test-key", maxRequestsPerMinute: 600 };
    await limiter.takeRateSlot(conn);
    expect(limiter.limiterState(conn).rate).toBe(600);
    await Promise.all([limiter.takeRateSlot(conn, 100), limiter.takeRateSlot(conn, 100)]);
    const cut = limiter.limiterState(conn);
    expect(cut.rate).toBeCloseTo(300, 0);
    expect(cut.cuts).toBe(1);
    await new Promise((r) => setTimeout(r, 1000));
    await limiter.takeRateSlot(conn);
    // + 1/5 of the budget per minute: 2 per second here
    expect(limiter.limiterState(conn).rate).toBeGreaterThan(301);
    expect(limiter.limiterState(conn).rate).toBeLessThan(305);
  });
});
