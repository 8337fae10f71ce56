// The client-side rate limiter: one per account per provider process.
// The service allows N requests in any rolling 60-second window per account. We keep a log of what
// this process sent in the last window and send a request only while fewer than N are in it: exact
// for a rolling window, and safe for a token bucket of the same size. A request counts from when it
// is sent until a window after its answer came back (the service counted it somewhere in between);
// one answered 429 was not counted by the service, and leaves the log.
// Within that, new requests go at the pace ./pace sets, as congestion control does: a slow start, a
// cut on a 429 to a share of what this process got accepted, every request waiting the 429's
// Retry-After, then a regrowth; the log holds no more than the pace in a window, and at most a
// thirtieth of the budget is in flight. So pipelines that share the account, each configured with the
// whole budget, come to shares just under its limit with few 429s. The processes of one command (a
// preview's and its update's) share what they sent and learned through the run record
// (./run-record): a lone pipeline's update does not spend again what its preview spent.
// A retry goes first, at the same pace.
import { createHash } from "node:crypto";
import { processState } from "./state";
import { plainError } from "./errors";
import { idle, mayGoAt, newPace, Pace, rateAt, limited, sent } from "./pace";
import { addRecord, records } from "./run-record";

interface Entry {
  sent: number;
  end: number; // when the answer came back; Infinity while in flight
}

interface Waiter {
  until?: number; // when its wait ends
  go: (entry: Entry) => void;
  leave: () => void; // its wait ends now (its time will be up before it may go)
}

interface Limit {
  account: string;
  log: Entry[]; // this process's requests that still count: in flight, or answered less than a window ago
  waiters: Waiter[]; // in arrival order, retries first
  pace: Pace;
  timer?: ReturnType<typeof setTimeout>;
  timerAt: number;
  rateLimited: number; // 429s reported
  idleSince?: number; // no request waiting since
  unrecorded: number[]; // answers not yet in the run record
  recording?: ReturnType<typeof setTimeout>;
}

interface Limiters {
  windowMs: number;
  accounts: Record<string, Limit>;
}

function limiters(): Limiters {
  return processState<Limiters>("limiter-paced", () => ({ windowMs: 60_000, accounts: {} }));
}

/** Which account a connection talks to, without keeping its key: URL and a hash of the key. */
export function accountOf(conn: { apiUrl: string; apiKey: string }): string {
  return `${conn.apiUrl} ${createHash("sha256").update(conn.apiKey).digest("hex").slice(0, 16)}`;
}

/** Lets out every waiter that may go now, in order; sets a timer for the next that may. */
function pump(limit: Limit, perWindow: number): void {
  const { windowMs } = limiters();
  const now = Date.now();
  limit.log = limit.log.filter((e) => e.end + windowMs > now);
  // No more in the window than the rate: jitter in the spacing never adds up to more.
  const cap = Math.min(perWindow, Math.ceil(rateAt(limit.pace, now, perWindow, windowMs) ?? perWindow));
  // At most a thirtieth of the budget in flight (4 at 120): what is in flight when the account's
  // window fills is answered 429, whatever the pace.
  let inFlight = limit.log.filter((e) => e.end === Infinity).length;
  const flying = Math.max(1, Math.ceil(perWindow / 30));
  // (1 ms of slack: at a pace of many a millisecond, several go at once; a retry is first in the queue)
  while (limit.waiters.length > 0 && inFlight < flying && limit.log.length < cap && mayGoAt(limit.pace) <= now + 1) {
    inFlight++;
    const entry: Entry = { sent: now, end: Infinity };
    limit.log.push(entry);
    sent(limit.pace, now, perWindow, windowMs, Math.random());
    limit.waiters.shift()!.go(entry);
  }
  if (limit.waiters.length === 0) limit.idleSince ??= now;
  if (limit.waiters.length === 0 || inFlight >= flying) return; // (an answer pumps)
  // A slot frees when an entry leaves the window, or when the pace (or the Retry-After) allows the next.
  let next = mayGoAt(limit.pace);
  if (limit.log.length >= cap) next = Math.max(next, Math.min(...limit.log.map((e) => e.end + windowMs)));
  if (cap < perWindow) next = Math.min(next, now + windowMs / 60); // (the cap grows)
  schedule(limit, perWindow, Math.max(next, now));
}

/** Pumps again at `at`, unless a timer is set for sooner. */
function schedule(limit: Limit, perWindow: number, at: number): void {
  if (at === Infinity || (limit.timer && limit.timerAt <= at)) return;
  if (limit.timer) clearTimeout(limit.timer);
  limit.timerAt = at;
  limit.timer = setTimeout(
    () => {
      limit.timer = undefined;
      pump(limit, perWindow);
    },
    Math.max(0, at - Date.now()),
  );
}

/** What the caller reports when the answer is in: its HTTP status (undefined: no answer), and a 429's wait (ms). */
export type SlotDone = (status?: number, retryAfterMs?: number) => void;

/**
 * How long a request may wait for its slot: until a time, and
 * no longer than requests are allowed (../engine stopSignal).
 */
export interface WaitLimit {
  until?: number;
  signal?: AbortSignal;
}

/** The error a wait ends with when its time is up ("time") or requests stopped ("stopped"): it left the queue. */
export interface WaitEnded extends Error {
  waitEnded: "time" | "stopped";
}

type Conn = { apiUrl: string; apiKey: string; maxRequestsPerMinute: number };

/**
 * Waits for a slot of the account's rate limit, and returns the function to call with the answer
 * (a 429 with its Retry-After: every request of this process to the account waits it, and the
 * pace is cut). `retry` (true, or a Retry-After > 0): the retry of a request just answered 429: it
 * goes first. A wait that reaches `limit.until` (or would only end after it: a Retry-After), or whose
 * signal aborts, leaves the queue and rejects with a WaitEnded.
 */
export async function takeRateSlot(
  conn: Conn,
  retry: boolean | number = false,
  limit: WaitLimit = {},
): Promise<SlotDone> {
  const perWindow = conn.maxRequestsPerMinute;
  const account = accountLimit(conn);
  const entry = await queue(account, perWindow, Boolean(retry), limit);
  let reported = false;
  return (status, retryAfterMs = 0) => {
    if (reported) return;
    reported = true;
    const now = (entry.end = Date.now());
    if (status !== 429) {
      remember(account, now);
      return pump(account, perWindow);
    }
    // Not counted by the service: its slot is free again.
    account.log = account.log.filter((e) => e !== entry);
    const accepted = account.log.filter((e) => e.end !== Infinity && e.end + limiters().windowMs > now).length;
    limited(account.pace, now, entry.sent, retryAfterMs, accepted, perWindow, limiters().windowMs);
    // A wait that would end before the Retry-After does ends now.
    for (const w of account.waiters.filter((x) => x.until !== undefined && x.until <= account.pace.blockedUntil))
      w.leave();
    account.rateLimited++;
    remember(account);
    setTimeout(() => pump(account, perWindow), 0);
  };
}

/** This process's limit of the account; a new one starts from what other processes of the command recorded. */
function accountLimit(conn: Conn): Limit {
  const accounts = limiters().accounts;
  const key = accountOf(conn);
  if (accounts[key]) return accounts[key];
  const now = Date.now();
  const limit: Limit = {
    account: key,
    log: [],
    waiters: [],
    pace: newPace(now),
    timerAt: 0,
    rateLimited: 0,
    unrecorded: [],
  };
  const { windowMs } = limiters();
  const account = createHash("sha256").update(key).digest("hex").slice(0, 16);
  for (const { value } of records<Spent>("limiter")) {
    if (value.account !== account) continue;
    for (const t of value.answers) if (t + windowMs > now) limit.log.push({ sent: t, end: t });
    if (value.pace) limit.pace = { ...value.pace, startedAt: Math.min(now, value.pace.startedAt), next: 0 };
  }
  return (accounts[key] = limit);
}

/** What a process recorded of an account (a hash of accountOf): answers it got (times), and its pace then. */
interface Spent {
  account: string;
  answers: number[];
  pace?: Pace;
}

/**
 * Adds an answer (its time) to what the run record will hold, written within 100 ms (or at once
 * after a 429, with the pace): the next process of the command (the update after its preview)
 * counts them in its window and starts at the pace learned.
 */
function remember(limit: Limit, answeredAt?: number): void {
  if (answeredAt !== undefined) limit.unrecorded.push(answeredAt);
  const write = () => {
    limit.recording = undefined;
    const account = createHash("sha256").update(limit.account).digest("hex").slice(0, 16);
    addRecord<Spent>("limiter", {
      account,
      answers: limit.unrecorded.splice(0),
      pace: limit.pace.peak === undefined ? undefined : limit.pace,
    });
  };
  if (answeredAt === undefined) {
    clearTimeout(limit.recording);
    return write();
  }
  if (limit.recording) return;
  limit.recording = setTimeout(write, 100);
  limit.recording.unref?.();
}

/** Joins the queue (a retry at its head: it waited its turn already) until let out, or until the wait ends. */
function queue(limit: Limit, perWindow: number, retry: boolean, bounds: WaitLimit): Promise<Entry> {
  return new Promise<Entry>((resolve, reject) => {
    const ended = (why: WaitEnded["waitEnded"]) =>
      plainError(`the wait for the rate limit ended (${why})`, { waitEnded: why });
    if (bounds.signal?.aborted) return reject(ended("stopped"));
    // (time up, or up before the account's Retry-After has passed)
    if (bounds.until !== undefined && Math.max(Date.now(), limit.pace.blockedUntil) >= bounds.until)
      return reject(ended("time"));
    // (each name declared before a closure uses it: Pulumi's closure serializer needs that)
    let timer: ReturnType<typeof setTimeout> | undefined = undefined;
    let onStop: () => void = () => {};
    const waiter: Waiter = { until: bounds.until, go: () => {}, leave: () => {} };
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
    waiter.leave = () => leave("time");
    waiter.go = (entry) => {
      settle();
      resolve(entry);
    };
    if (bounds.until !== undefined) timer = setTimeout(() => leave("time"), bounds.until - Date.now());
    bounds.signal?.addEventListener("abort", onStop, { once: true });
    if (limit.idleSince !== undefined) idle(limit.pace, Date.now() - limit.idleSince);
    limit.idleSince = undefined;
    if (retry) limit.waiters.unshift(waiter);
    else limit.waiters.push(waiter);
    pump(limit, perWindow);
  });
}

/**
 * The limiter's view of an account, for tests, benchmarks and
 * progress lines (`rate`: requests per window; undefined: unpaced).
 */
export function limiterState(conn: {
  apiUrl: string;
  apiKey: string;
  maxRequestsPerMinute?: number;
}): { inWindow: number; waiting: number; rate?: number; rateLimited: number; blocked: boolean } | undefined {
  const limit = limiters().accounts[accountOf(conn)];
  const now = Date.now();
  const rate =
    limit && conn.maxRequestsPerMinute
      ? rateAt(limit.pace, now, conn.maxRequestsPerMinute, limiters().windowMs)
      : undefined;
  return (
    limit && {
      inWindow: limit.log.length,
      waiting: limit.waiters.length,
      rate,
      rateLimited: limit.rateLimited,
      blocked: limit.pace.blockedUntil > now,
    }
  );
}

/** The window the limiter counts in (ms). */
export function rateWindowMs(): number {
  return limiters().windowMs;
}

/** The window the limiter counts in (60 s, as the service does); tests run the same limits faster. */
export function setRateWindow(ms: number): void {
  limiters().windowMs = ms;
}
