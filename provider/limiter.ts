// The client-side rate limiter: one per account per provider process, adaptive.
// It starts with the configured budget (a burst of `perMinute`, then an even pace: a GCRA). The
// service's 429 says the account's budget is shared (other pipelines, other tools), so a 429 halves
// the pace, stops bursts and pushes every later request back by its Retry-After; the pace then
// grows back linearly (AIMD, as TCP does), reaching the full budget again after a few minutes.
import { createHash } from "node:crypto";

interface Limit {
  tat: number; // GCRA theoretical arrival time
  rate: number; // current requests per minute, ≤ the configured budget
  grownAt: number; // when `rate` last grew
  shared: boolean; // a 429 was seen: no more bursts
  noCutBefore: number; // the 429s of one congested moment cut once
  cuts: number;
}

const MIN_FRACTION = 1 / 20; // never slower than 1/20 of the budget
const GROWTH_PER_MINUTE = 1 / 5; // the pace grows by 1/5 of the budget each minute after a cut

// On globalThis, keyed by a symbol made inside the function: Pulumi serializes this code by value
// in this repo, so module variables would not be shared between the provider modules.
function limits(): Record<string, Limit> {
  const global = globalThis as unknown as Record<symbol, Record<string, Limit> | undefined>;
  return (global[Symbol.for("@accessctl/pulumi/limiter")] ??= {});
}

/** Which account a connection talks to, without keeping its key: URL and a hash of the key. */
export function accountOf(conn: { apiUrl: string; apiKey: string }): string {
  return `${conn.apiUrl} ${createHash("sha256").update(conn.apiKey).digest("hex").slice(0, 16)}`;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Waits for a slot of the account's rate limit. `blockForMs` > 0 reports a 429 (its Retry-After,
 * or our backoff): every later request of this process to that account waits that long, and the
 * pace is cut.
 */
export async function takeRateSlot(conn: { apiUrl: string; apiKey: string; maxRequestsPerMinute: number }, blockForMs = 0): Promise<void> {
  const perMinute = conn.maxRequestsPerMinute;
  const all = limits();
  const key = accountOf(conn);
  const now = Date.now();
  const limit = (all[key] ??= { tat: 0, rate: perMinute, grownAt: now, shared: false, noCutBefore: 0, cuts: 0 });
  limit.rate = Math.min(perMinute, limit.rate + ((now - limit.grownAt) / 60_000) * perMinute * GROWTH_PER_MINUTE);
  limit.grownAt = now;
  if (blockForMs > 0) {
    if (now >= limit.noCutBefore) {
      limit.rate = Math.max(perMinute * MIN_FRACTION, limit.rate / 2);
      limit.noCutBefore = now + blockForMs;
      limit.cuts++;
    }
    limit.shared = true;
    limit.tat = Math.max(limit.tat, now + blockForMs);
  }
  for (;;) {
    const interval = 60_000 / limit.rate;
    const tolerance = limit.shared ? 0 : (perMinute - 1) * interval;
    const at = Date.now();
    const tat = Math.max(limit.tat, at);
    const wait = Math.max(0, tat - at - tolerance);
    limit.tat = tat + interval;
    if (wait <= 0) return;
    const cuts = limit.cuts;
    // A little slack: the service starts its clock when a request arrives, a bit after we send it.
    await sleep(wait + interval * 0.02 + 10);
    // A 429 while we slept: our slot was planned at the old pace; take a new one.
    if (limit.cuts === cuts) return;
  }
}

/** The limiter's view of an account, for tests and benchmarks. */
export function limiterState(conn: { apiUrl: string; apiKey: string }): Readonly<Limit> | undefined {
  return limits()[accountOf(conn)];
}
