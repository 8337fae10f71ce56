// The pace of new requests to an account, as congestion control sets a sender's rate: pure functions
// of the state, the time and a random draw (../limiter applies them). The service tells us only 429s
// and their Retry-After (the contract shows no rate headers, and the emulator sends none), so:
// - a process starts slowly (half the budget's steady pace, doubled every 2 s, unpaced once at 8
//   times it): pipelines that start together find the window full with little in flight;
// - a 429 cuts the rate to BETA of SHARE of what this process got accepted in the last window (its
//   share of the account when the account was full), once per signal: the 429s of requests sent
//   before the cut are the same news. Every request waits the Retry-After (api() adds up to 250 ms
//   at random, so processes told the same time do not come back together);
// - the rate then grows back as CUBIC's does, as a function of the time since the cut: back at the
//   peak (the rate the 429 found) after BACK seconds, flat around it, then faster (15% above it after
//   twice that, double after three times). Time spent waiting (a Retry-After) or idle (no request
//   queued) does not count: the rate grows only while it is being tried. So processes that share an
//   account hover just under its limit; the larger shares meet more 429s and are cut more often,
//   which brings shares together; one left alone is soon back at the whole budget;
// - requests are spaced by 1/rate, each gap drawn between half and one and a half of it.
// Rates are in requests per window (the budget's unit); at the budget or above, no pace: the window's
// log (../limiter) alone holds a process to the budget, bursts included. Times are in sixtieths of the
// window (seconds of the service's 60 s), so a test that runs the window faster runs all of it faster.

/** The cut on a 429: the rate goes to BETA of its peak (SHARE of what this process got accepted in the last window). */
export const BETA = 0.85;
/**
 * Seconds back to the peak after a cut (the cubic's flat middle):
 * 15% above it after twice that, doubled after three times.
 */
export const BACK = 30;
/**
 * The peak, the rate a 429 finds, is this much of what this process got accepted in the last window: room for jitter.
 */
export const SHARE = 0.9;
/**
 * The slow start: from this much of the budget's steady pace,
 * doubled every SLOW_START_DOUBLING seconds, unpaced at 8 times it.
 */
export const SLOW_START = 0.5;
export const SLOW_START_DOUBLING = 2;

export interface Pace {
  /** When this process's slow start began. */
  startedAt: number;
  /** The rate when the last 429 came (requests per window); undefined: none yet. */
  peak?: number;
  /** When the rate was last cut. */
  cutAt: number;
  /** When its regrowth began: after the cut's wait, later by every wait since. */
  growFrom: number;
  /** No new request before this: the spacing of the last one. */
  next: number;
  /** No request before this: the last Retry-After. */
  blockedUntil: number;
}

export function newPace(now: number): Pace {
  return { startedAt: now, cutAt: -Infinity, growFrom: now, next: 0, blockedUntil: 0 };
}

/** The rate (requests per window) new requests go at now; undefined: unpaced (the window's log holds them). */
export function rateAt(p: Pace, now: number, perWindow: number, windowMs: number): number | undefined {
  const second = windowMs / 60;
  let rate: number;
  if (p.peak === undefined) rate = SLOW_START * perWindow * 2 ** ((now - p.startedAt) / second / SLOW_START_DOUBLING);
  else {
    const t = Math.max(0, now - p.growFrom) / second;
    rate = Math.max(1, p.peak * (1 + ((1 - BETA) / BACK ** 3) * (t - BACK) ** 3));
  }
  const unpaced = rate >= (p.peak === undefined ? 8 * perWindow : perWindow);
  return unpaced ? undefined : rate;
}

/** The earliest time a new request may go (a retry too: it goes first, at the same pace). */
export function mayGoAt(p: Pace): number {
  return Math.max(p.next, p.blockedUntil);
}

/** A request went at `now`: the next one waits 1/rate, drawn between half and one and a half of it. */
export function sent(p: Pace, now: number, perWindow: number, windowMs: number, random: number): void {
  const rate = rateAt(p, now, perWindow, windowMs);
  if (rate === undefined) return;
  p.next = Math.max(p.next, now) + (windowMs / rate) * (0.5 + random);
}

/**
 * A 429 at `now` to a request sent at `sentAt`, with its Retry-After (ms): every request waits that;
 * unless the request went before the last cut (the same news), the rate is cut to BETA of SHARE of
 * `accepted`, what this process got accepted in the last window (its share of the account), or of
 * its rate if that is less.
 */
export function limited(
  p: Pace,
  now: number,
  sentAt: number,
  retryAfterMs: number,
  accepted: number,
  perWindow: number,
  windowMs: number,
): void {
  const until = Math.max(p.blockedUntil, now + retryAfterMs);
  if (sentAt < p.cutAt) {
    // (the regrowth waits too: nothing is learned while every request waits)
    if (p.peak !== undefined) p.growFrom += until - Math.max(p.blockedUntil, now);
    p.blockedUntil = until;
    return;
  }
  const rate = rateAt(p, now, perWindow, windowMs) ?? perWindow;
  p.peak = Math.max(1, SHARE * Math.min(rate, accepted));
  p.cutAt = now;
  p.growFrom = until;
  p.blockedUntil = until;
}

/** No request waited for `ms`: the rate did not meet the account then, and does not grow for that time. */
export function idle(p: Pace, ms: number): void {
  if (p.peak !== undefined) p.growFrom += ms;
}
