// The per-account rate limit of the front. "window" (the default, as the service documents it): at
// most N requests in any rolling window of S seconds; "bucket": a token bucket, a burst of N
// refilled at N per S seconds.
export interface RateLimit {
  requests: number;
  seconds: number;
  model?: "window" | "bucket";
}

/** Takes a slot of an account's limit: undefined, or the whole seconds until one frees (at least 1). */
export type TakeSlot = (accountId: string) => number | undefined;

/** No limit when `limit` is undefined. `clock` gives the time in ms. */
export function rateLimiter(limit: RateLimit | undefined, clock: () => number): TakeSlot {
  if (!limit) return () => undefined;
  return limit.model === "bucket" ? tokenBucket(limit, clock) : rollingWindow(limit, clock);
}

// Rolling window: a ring of the last N accepted times per account. The oldest of them is the one
// that must have left the window (S seconds) before another request is accepted.
function rollingWindow(limit: RateLimit, clock: () => number): TakeSlot {
  const windows = new Map<string, { times: number[]; next: number }>();
  const windowMs = limit.seconds * 1000;
  return (accountId) => {
    const now = clock();
    let ring = windows.get(accountId);
    if (!ring) windows.set(accountId, (ring = { times: [], next: 0 }));
    if (ring.times.length < limit.requests) {
      ring.times.push(now);
      return undefined;
    }
    const oldest = ring.times[ring.next];
    if (now - oldest >= windowMs) {
      ring.times[ring.next] = now;
      ring.next = (ring.next + 1) % limit.requests;
      return undefined;
    }
    return Math.max(1, Math.ceil((oldest + windowMs - now) / 1000));
  };
}

// Token bucket: a burst of N, refilled at N per window.
function tokenBucket(limit: RateLimit, clock: () => number): TakeSlot {
  const buckets = new Map<string, { tokens: number; updated: number }>();
  const perMs = limit.requests / (limit.seconds * 1000);
  return (accountId) => {
    const now = clock();
    const bucket = buckets.get(accountId) ?? { tokens: limit.requests, updated: now };
    bucket.tokens = Math.min(limit.requests, bucket.tokens + (now - bucket.updated) * perMs);
    bucket.updated = now;
    buckets.set(accountId, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
  };
}
