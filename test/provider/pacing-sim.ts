// Pipelines sharing an account, simulated on a fake clock: each stack a `pulumi up` of one
// IpPolicyRuleSet of `rules` rules as the provider makes it (a preview's walk of the account, then
// in a new process the update's walk, its first rule, a walk, the other rules 16 at once), every
// request through the real limiter (provider/limiter.ts) and answered by the emulator's rolling
// window (emulator/rate-limit.ts). Used by limiter.test.ts; runTeam fakes the clock and Math.random.
import { vi } from "vitest";
import { compiled } from "../helpers/provider";

const limiter = compiled("provider/limiter.js");
const rateLimit = compiled("emulator/rate-limit.js");

export interface TeamRun {
  /** When each stack's `up` ended, from the start (ms). */
  ends: number[];
  accepted: number;
  rateLimited: number;
  /** When each 429 came (ms from the start). */
  limitedAt: number[];
  /** Calls that ran out of retries. */
  failed: number;
}

export interface Team {
  stacks: number;
  rules: number;
  perMinute?: number;
  /** Each stack's engine starts within this (ms). */
  spreadMs?: number;
  /** The preview's process and the update's are two (true) or one. */
  twoProcesses?: boolean;
  maxRetries?: number;
}

/** Forgets this process's limiter of an account: the next request starts a new process's, from the run record. */
function newProcess(apiKey: string, apiUrl: string): void {
  const all = (globalThis as unknown as Record<symbol, Record<string, any> | undefined>)[
    Symbol.for("@accessctl/pulumi/state/v1")
  ];
  const accounts = all?.["limiter-paced"]?.accounts;
  if (accounts) delete accounts[limiter.accountOf({ apiUrl, apiKey })];
}

let runs = 0;

export async function simulateTeam(team: Team): Promise<TeamRun> {
  const { stacks, rules, perMinute = 120, spreadMs = 3_000, twoProcesses = true, maxRetries = 8 } = team;
  const t0 = Date.now();
  const take = rateLimit.rateLimiter({ requests: perMinute, seconds: 60 }, () => Date.now());
  const run: TeamRun = { ends: [], accepted: 0, rateLimited: 0, limitedAt: [], failed: 0 };
  let inAccount = 0;
  const apiUrl = `http://sim-${++runs}`; // an account no earlier run's limiter or record knows
  const request = async (apiKey: string, create: boolean) => {
    const conn = { apiUrl, apiKey, maxRequestsPerMinute: perMinute };
    let retryAfterMs = 0;
    for (let attempt = 0; attempt <= maxRetries; attempt++) {
      // (a retry says so with its Retry-After: true in the limiter of today, the wait in the one before)
      const done = await limiter.takeRateSlot(conn, retryAfterMs);
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 60)); // there
      const retryAfter = take("account");
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 60)); // and back
      if (retryAfter === undefined) {
        run.accepted++;
        if (create) inAccount++;
        done(200);
        return;
      }
      run.rateLimited++;
      run.limitedAt.push(Date.now() - t0);
      retryAfterMs = retryAfter * 1000 + Math.random() * 250;
      done(429, retryAfterMs);
    }
    run.failed++;
  };
  const walk = async (key: string) => {
    for (let page = 0; page < Math.ceil((inAccount + 1) / 100); page++) await request(key, false);
  };
  const pool = async (n: number, key: string) => {
    let left = n;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (left-- > 0) await request(key, true);
      }),
    );
  };
  const stack = async (i: number) => {
    const key = `sim-key-${t0}-${i}`;
    await new Promise((r) => setTimeout(r, Math.random() * spreadMs));
    await walk(key); // the preview's check
    await new Promise((r) => setTimeout(r, 2_000 + Math.random() * 2_000));
    if (twoProcesses) newProcess(key, apiUrl);
    await walk(key); // the create's listing
    await request(key, true);
    await walk(key); // which set came first
    await pool(rules - 1, key);
    run.ends[i] = Date.now() - t0;
  };
  await Promise.all(Array.from({ length: stacks }, (_, i) => stack(i)));
  return run;
}

/** A random number generator from a seed (mulberry32): the same run each time. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Runs a team on a fake clock, with Math.random seeded; the clock and Math.random are restored after. */
export async function runTeam(team: Team, seed: number): Promise<TeamRun> {
  vi.useFakeTimers({ now: 1_000_000_000 });
  const random = vi.spyOn(Math, "random").mockImplementation(seeded(seed));
  try {
    let done = false;
    const run = simulateTeam(team).finally(() => (done = true));
    while (!done) await vi.advanceTimersByTimeAsync(1000);
    return await run;
  } finally {
    random.mockRestore();
    vi.useRealTimers();
  }
}

/** The figures the bench reports: wall time over the bound of the accepted requests (their number / 2 per s at 120/60), the 429 share, slowest over fastest. */
export function figures(
  run: TeamRun,
  perMinute = 120,
): { wallOverBound: number; share429: number; slowestOverFastest: number } {
  const wall = Math.max(...run.ends);
  return {
    wallOverBound: wall / ((run.accepted / perMinute) * 60_000),
    share429: run.rateLimited / (run.accepted + run.rateLimited),
    slowestOverFastest: wall / Math.min(...run.ends),
  };
}
