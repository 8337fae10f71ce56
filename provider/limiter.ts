// The client-side rate limiter: one per account per provider process.
// The service allows N requests in any rolling 60-second window per account. We keep a log of what
// this process sent in the last window and send a request only while fewer than N are in it: exact
// for a rolling window, and safe for a token bucket of the same size. A request counts from when it
// is sent until a window after its answer came back (the service counted it somewhere in between),
// so no slack is needed; one answered 429 was not counted by the service, and leaves the log.
// A 429 is news about other users of the account, not about our pace: the request that got it waits
// its Retry-After, and so do the requests behind it (the service refuses them until then), no
// longer; the refused requests then go first, one at a time (a Retry-After announces one free slot).
// New requests keep within the share the service granted this process (what it got accepted in the
// last window, leaving room for its retries), so that pipelines sharing the account settle near the
// limit; once the last Retry-After has passed the share grows back to N over one window (the next 429
// sets it again), so a pipeline left alone is soon at full pace. Retries are held only to N.
import { createHash } from "node:crypto";
import { processState } from "./state";
import { plainError } from "./errors";

interface Entry {
  end: number; // when the answer came back; Infinity while in flight
  retry: boolean;
}

interface Waiter {
  retry: boolean; // a retry after a 429: not held to the share, only to N
  go: (entry: Entry) => void;
}

interface Limit {
  log: Entry[]; // this process's requests that still count: in flight, or answered less than a window ago
  waiters: Waiter[]; // in arrival order
  share?: number; // the share learned from the last 429 (undefined: none, the whole budget)
  learnedAt: number;
  blockedUntil: number; // the last Retry-After: new requests wait for it
  timer?: ReturnType<typeof setTimeout>;
  timerAt: number;
  rateLimited: number; // 429s reported
}

interface Limiters {
  windowMs: number;
  accounts: Record<string, Limit>;
}

function limiters(): Limiters {
  return processState<Limiters>("limiter", () => ({ windowMs: 60_000, accounts: {} }));
}

/** Which account a connection talks to, without keeping its key: URL and a hash of the key. */
export function accountOf(conn: { apiUrl: string; apiKey: string }): string {
  return `${conn.apiUrl} ${createHash("sha256").update(conn.apiKey).digest("hex").slice(0, 16)}`;
}

/** How many requests new ones may have in the window now: the learned share, growing back to N over one window once the last Retry-After has passed. */
function capOf(limit: Limit, perWindow: number, now: number, windowMs: number): number {
  const share = limit.share;
  if (share === undefined) return perWindow;
  const cap = share + (perWindow * Math.max(0, now - limit.blockedUntil)) / windowMs;
  if (cap < perWindow) return cap;
  limit.share = undefined;
  return perWindow;
}

/** Lets out every waiter that may go now, in arrival order; sets a timer for the next that may. */
function pump(limit: Limit, perWindow: number): void {
  const { windowMs } = limiters();
  const now = Date.now();
  limit.log = limit.log.filter((e) => e.end + windowMs > now);
  const cap = capOf(limit, perWindow, now, windowMs);
  let next = Infinity;
  // The retries waiting are part of this process's share: new requests leave room for them.
  let retries = limit.waiters.filter((w) => w.retry).length;
  // One retry at a time: a Retry-After announces one free slot, not one for each request refused.
  let retrying = limit.log.some((e) => e.retry && e.end === Infinity);
  if (limit.blockedUntil > now) next = limit.blockedUntil;
  else for (let i = 0; i < limit.waiters.length; ) {
    const w = limit.waiters[i];
    if (w.retry ? !retrying && limit.log.length < perWindow : limit.log.length + retries < cap) {
      limit.waiters.splice(i, 1);
      if (w.retry) {
        retries--;
        retrying = true;
      }
      const entry: Entry = { end: Infinity, retry: w.retry };
      limit.log.push(entry);
      w.go(entry);
      continue;
    }
    i++;
  }
  if (limit.waiters.length === 0) return;
  // Slots free when entries leave the window (those in flight free theirs when answered: done()
  // pumps), and a little more each second while the share grows back.
  for (const e of limit.log) next = Math.min(next, e.end + windowMs);
  if (cap < perWindow) next = Math.min(next, now + 1000);
  if (next === Infinity || (limit.timer && limit.timerAt <= next)) return;
  if (limit.timer) clearTimeout(limit.timer);
  limit.timerAt = next;
  limit.timer = setTimeout(() => {
    limit.timer = undefined;
    pump(limit, perWindow);
  }, Math.max(0, next - now));
}

/** What the caller reports when the answer is in: its HTTP status (undefined: no answer). */
export type SlotDone = (status?: number) => void;

/** How long a request may wait for its slot: until a time, and no longer than requests are allowed (../engine stopSignal). */
export interface WaitLimit {
  until?: number;
  signal?: AbortSignal;
}

/** The error a wait ends with when its time is up ("time") or requests stopped ("stopped"): it left the queue. */
export interface WaitEnded extends Error {
  waitEnded: "time" | "stopped";
}

/**
 * Waits for a slot of the account's rate limit, and returns the function to call with the answer.
 * `retryAfterMs` > 0: the retry of a request just answered 429 with that Retry-After: it waits that
 * long, and so does every other request of this process to the account. A wait that reaches
 * `limit.until`, or whose signal aborts, leaves the queue and rejects with a WaitEnded.
 */
export async function takeRateSlot(conn: { apiUrl: string; apiKey: string; maxRequestsPerMinute: number }, retryAfterMs = 0, limit: WaitLimit = {}): Promise<SlotDone> {
  const perWindow = conn.maxRequestsPerMinute;
  const account = (limiters().accounts[accountOf(conn)] ??= { log: [], waiters: [], learnedAt: 0, blockedUntil: 0, timerAt: 0, rateLimited: 0 });
  if (retryAfterMs > 0) learn429(account, retryAfterMs);
  const entry = await queue(account, perWindow, retryAfterMs > 0, limit);
  let reported = false;
  return (status) => {
    if (reported) return;
    reported = true;
    entry.end = Date.now();
    if (status !== 429) return pump(account, perWindow);
    // Not counted by the service: its slot is free again, for the retry (which api() asks for at
    // once, with the Retry-After) rather than for a new request.
    account.log = account.log.filter((e) => e !== entry);
    setTimeout(() => pump(account, perWindow), 0);
  };
}

/** A 429 with this Retry-After: the share the service granted this process, and the wait of every request. */
function learn429(limit: Limit, retryAfterMs: number): void {
  const { windowMs } = limiters();
  const now = Date.now();
  // What the service granted this process in the last window: its share while others are about.
  limit.log = limit.log.filter((e) => e.end + windowMs > now);
  // (At the turn of a window it can be low for a moment: the share held so far stands.)
  const accepted = limit.log.filter((e) => e.end !== Infinity).length;
  const held = limit.share !== undefined && now < limit.learnedAt + windowMs;
  limit.share = Math.max(1, accepted, held ? limit.share! : 0);
  limit.learnedAt = now;
  limit.blockedUntil = Math.max(limit.blockedUntil, now + retryAfterMs);
  limit.rateLimited++;
}

/** Joins the queue (a retry at its head: it waited its turn already) until let out, or until the wait ends. */
function queue(limit: Limit, perWindow: number, retry: boolean, bounds: WaitLimit): Promise<Entry> {
  return new Promise<Entry>((resolve, reject) => {
    const ended = (why: WaitEnded["waitEnded"]) => plainError(`the wait for the rate limit ended (${why})`, { waitEnded: why });
    if (bounds.signal?.aborted) return reject(ended("stopped"));
    if (bounds.until !== undefined && Date.now() >= bounds.until) return reject(ended("time"));
    // (each name declared before a closure uses it: Pulumi's closure serializer needs that)
    let timer: ReturnType<typeof setTimeout> | undefined = undefined;
    let onStop: () => void = () => {};
    const waiter: Waiter = { retry, go: () => {} };
    const settle = () => {
      clearTimeout(timer);
      bounds.signal?.removeEventListener("abort", onStop);
    };
    const leave = (why: WaitEnded["waitEnded"]) => {
      const i = limit.waiters.indexOf(waiter);
      if (i < 0) return; // already let out
      limit.waiters.splice(i, 1);
      settle();
      reject(ended(why));
      pump(limit, perWindow); // one waiter fewer: those behind it may go
    };
    onStop = () => leave("stopped");
    waiter.go = (entry) => {
      settle();
      resolve(entry);
    };
    if (bounds.until !== undefined) timer = setTimeout(() => leave("time"), bounds.until - Date.now());
    bounds.signal?.addEventListener("abort", onStop, { once: true });
    // Every request waits for the account's last Retry-After.
    if (retry) limit.waiters.unshift(waiter);
    else limit.waiters.push(waiter);
    pump(limit, perWindow);
  });
}

/** The limiter's view of an account, for tests and benchmarks. */
export function limiterState(conn: { apiUrl: string; apiKey: string }): { inWindow: number; waiting: number; share?: number; rateLimited: number; blocked: boolean } | undefined {
  const limit = limiters().accounts[accountOf(conn)];
  return limit && { inWindow: limit.log.length, waiting: limit.waiters.length, share: limit.share, rateLimited: limit.rateLimited, blocked: limit.blockedUntil > Date.now() };
}

/** The window the limiter counts in (ms). */
export function rateWindowMs(): number {
  return limiters().windowMs;
}

/** The window the limiter counts in (60 s, as the service does); tests run the same limits faster. */
export function setRateWindow(ms: number): void {
  limiters().windowMs = ms;
}
