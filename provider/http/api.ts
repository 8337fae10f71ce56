// One API call: the contract's headers, retries with backoff that never repeat a create the server
// may have acted on, the time limit (the call's budget from its start, time queued in the rate
// limiter included, and the bound of the provider operation it is part of: ../operation), the rate
// limiter (../limiter), and the one switch to ACCESSCTL_API_KEY after the config key is refused
// (../config says where keys come from).
import { SERVICE_VERSION } from "../../contract/common";
import { authHint, Connection, connection, refuseConfigKey, unprovenFallback, urlHint } from "../config";
import { setMessage } from "../errors";
import { stopped, stopSignal } from "../engine";
import { limiterState, SlotDone, takeRateSlot, WaitEnded } from "../limiter";
import { boundHint, boundText, currentOperation, Operation } from "../operation";
import { processState } from "../state";
import { ApiFailure, failure, finish } from "./failures";
import { backoff, LOST, NOT_CONNECTED_RETRIES, outcomeOf, RETRY_BUDGET_MS, sleep } from "./outcomes";
import { baseProblem, believe404, keyDigest, keyProven, proveBase, proveKey, underWay } from "./trust";
import { ApiResponse, Attempt, attempt, ATTEMPT_DEADLINE_MS, RequestOptions, silence, userAgent } from "./transport";

interface Counters {
  requests: number;
  retries: number;
  rateLimited: number;
}

/** Request counts of this process (tests and benchmarks read them). */
export function counters(): Counters {
  return processState<Counters>("http-counters", () => ({ requests: 0, retries: 0, rateLimited: 0 }));
}

/** Builds a path whose interpolated values are each URL-encoded: ids never reach another path. */
export function apiPath(strings: TemplateStringsArray, ...values: string[]): string {
  for (const value of values) {
    // URL parsers read "." and ".." (even percent-encoded) as path steps: such an id is never sent.
    if (/^(\.|%2e){0,2}$/i.test(value)) throw failure(`invalid id ${JSON.stringify(value)}`, {});
  }
  return strings.reduce((out, s, i) => out + s + (i < values.length ? encodeURIComponent(values[i]) : ""), "");
}

/** One API call, with retries. `pathOrUrl` is a path (use apiPath) or a URL on the API's origin. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an answer no caller typed is JSON it checks itself
export async function api<T = any>(
  method: string,
  pathOrUrl: string,
  options: RequestOptions,
): Promise<ApiResponse<T>> {
  const call = prepare(method, pathOrUrl, options);
  for (let n = 0; ; n++) {
    const sent = await takeTurn(call, n);
    counters().requests++;
    const sentAt = Date.now();
    const result = await send<T>(call, sent, sentAt, n);
    if ("response" in result) return answered(call, result.response);
    if (result.status === 401 && call.conn.fallbackApiKey) {
      // The key from the stack config was refused: try the one in ACCESSCTL_API_KEY, once, and keep to it.
      call.conn = refuseConfigKey(call.conn);
      call.headers.authorization = `Bearer ${call.conn.apiKey}`;
      continue;
    }
    await failed(call, result, n, sentAt);
  }
}

/** One call under way: what it sends, and how long it may go on. */
interface Call {
  method: string;
  url: URL;
  options: RequestOptions;
  conn: Connection;
  headers: Record<string, string>;
  payload?: string;
  /** One attempt's deadline (ms). */
  deadlineMs: number;
  /**
   * No attempt starts after this (Date.now() time): the call's budget
   * from its start, waits included, or its operation's bound if sooner.
   */
  until: number;
  /** `until` is the operation's bound (../operation), not the call's own budget. */
  bound?: Operation;
  retries: number;
  /** The Retry-After of the last 429: the next attempt waits that long in the rate limiter. */
  blockFor: number;
  lastError?: ApiFailure;
  rateLimited: boolean;
}

/** The call's URL (refused unless on the API's origin), headers, body and time limits. */
function prepare(method: string, pathOrUrl: string, options: RequestOptions): Call {
  const conn = connection(options.source);
  // A path is appended to the API URL (which may have a path of its own); a next_page_uri is absolute.
  const url = new URL(pathOrUrl.startsWith("/") ? conn.apiUrl + pathOrUrl : pathOrUrl);
  if (url.origin !== new URL(conn.apiUrl).origin) {
    throw failure(
      `${options.what}: refusing to send the API key to ${url.origin}, which is not the configured API (` +
        `${new URL(conn.apiUrl).origin})`,
      {},
    );
  }
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = {
    authorization: `Bearer ${conn.apiKey}`,
    "service-version": SERVICE_VERSION,
    "user-agent": userAgent(),
    accept: "application/json",
  };
  if (payload !== undefined) headers["content-type"] = "application/json";
  // The budget counts from now: time queued in the rate limiter is time of the call.
  const own = Date.now() + (options.budgetMs ?? RETRY_BUDGET_MS);
  const op = currentOperation();
  const byOperation = op !== undefined && op.deadline <= own;
  return {
    method,
    url,
    options,
    conn,
    headers,
    payload,
    deadlineMs: options.deadlineMs ?? ATTEMPT_DEADLINE_MS,
    until: byOperation ? op.deadline : own,
    bound: byOperation ? op : undefined,
    retries: conn.maxRetries,
    blockFor: 0,
    rateLimited: false,
  };
}

/** Waits for the call's turn in the account's rate limit, within its time limit; fails at once when requests stop. */
async function takeTurn(call: Call, n: number): Promise<SlotDone> {
  checkNotStopped(call.options, n);
  checkNotSilent(call, n);
  await checkCreateKey(call, n);
  if (Date.now() >= call.until) throw overTime(call, n);
  let sent: SlotDone;
  try {
    sent = await takeRateSlot(call.conn, call.blockFor > 0, { until: call.until, signal: stopSignal() });
  } catch (e) {
    if ((e as WaitEnded).waitEnded === "stopped") checkNotStopped(call.options, n);
    if ((e as WaitEnded).waitEnded) throw overTime(call, n);
    throw e;
  }
  call.blockFor = 0;
  try {
    // The service may have fallen silent during the wait, or the engine gone, or the run been cancelled.
    checkNotStopped(call.options, n);
    checkNotSilent(call, n);
  } catch (e) {
    sent();
    throw e;
  }
  return sent;
}

/** One attempt; its slot of the rate limit is given back with its status (or none: no answer), a 429 with its wait. */
async function send<T>(call: Call, sent: SlotDone, sentAt: number, n: number): Promise<Attempt<T>> {
  const { method, url, headers, payload, options, conn } = call;
  const run = () =>
    attempt<T>(method, url, headers, payload, { ...options, urlHint: urlHint(conn) }, call.deadlineMs, [
      conn.apiKey,
      conn.fallbackApiKey,
    ]);
  // a read or delete under way: see trust.ts believe404
  const result = await (options.allow404 ? underWay(run) : run()).catch((e) => {
    sent();
    throw Object.assign(e as ApiFailure, { sentAt });
  });
  const status = "response" in result ? result.response.status : result.status;
  // A 429's Retry-After (or a backoff without one): the retry, and every request of the account, wait it.
  if (status === 429 && "error" in result) call.blockFor = backoff(n, result.retryAfter);
  sent(status, call.blockFor);
  return result;
}

/** A usable answer: a 404 to a read or delete is believed only as trust.ts allows; a success proves key and URL. */
async function answered<T>(call: Call, answer: ApiResponse<T>): Promise<ApiResponse<T>> {
  const { conn, options } = call;
  const keyUsed = keyDigest(conn);
  const response = { ...answer, keyUsed, ...(conn.rejected ? { fallbackKey: keyUsed } : {}) };
  if (options.allow404 && response.status === 404)
    await believe404(call.method, conn, response, options, [conn.apiKey, conn.fallbackApiKey], api);
  // a read or delete of an object this stack holds worked: the key is of its account
  else if (options.allow404) proveKey(keyUsed);
  if (options.expect && response.status !== 204) proveBase(conn.apiUrl);
  return response;
}

/**
 * A failed attempt: throws unless another may follow, after its
 * wait (a backoff; a Retry-After is waited in the rate limiter).
 */
async function failed(
  call: Call,
  result: Extract<Attempt<unknown>, { error: ApiFailure }>,
  n: number,
  sentAt: number,
): Promise<void> {
  const { url, options } = call;
  const count = counters();
  const err = (call.lastError = result.error);
  if (result.status === 401) err.hint = authHint(call.conn);
  if (result.status === 404) await explainNotFound(err, call.method, url, call.conn, options);
  const outcome = result.status !== undefined ? outcomeOf(String(result.status)) : (outcomeOf(result.code!) ?? LOST);
  if (!outcome?.retry) throw finish(err, 1, url.origin, options.unseen);
  // A create that may have acted says so, whatever comes next (a timed-out POST is one).
  err.ambiguous = call.method === "POST" && outcome.mayHaveActed;
  err.sentAt = sentAt;
  // No retry to a service that let an attempt time out with no answer (this one, or another one's).
  if (silence(url.origin) !== undefined) throw finish(err, n + 1, url.origin, options.unseen);
  if (outcome.quick) call.retries = Math.min(call.retries, NOT_CONNECTED_RETRIES);
  if (result.status === 429) {
    count.rateLimited++;
    call.rateLimited = true;
  }
  const delay = call.blockFor || backoff(n, result.retryAfter);
  if (err.ambiguous || n >= call.retries) throw finish(err, n + 1, url.origin, options.unseen);
  // Give up before a wait that would pass the call's time limit.
  if (Date.now() + delay > call.until) throw overTime(call, n + 1, delay);
  count.retries++;
  if (call.blockFor) return;
  try {
    await sleep(delay, stopSignal());
  } catch {
    checkNotStopped(options, n + 1);
  }
}

/**
 * The call's time is up (`n` attempts made), or the wait before its next attempt (`waitMs`) would
 * pass it: its last failure, or "not sent"; when the operation's bound is what ended it, the error
 * says so and what to do.
 */
function overTime(call: Call, n: number, waitMs?: number): ApiFailure {
  const { options, url } = call;
  const spent = !call.bound
    ? ""
    : waitMs === undefined
      ? `${boundText(call.bound)} is spent`
      : `the next try (in ${Math.round(waitMs / 1000)} s) would pass ${boundText(call.bound)}`;
  // This call, or another of the account's in this process, was answered 429: the pace is cut.
  const limited = call.rateLimited || (limiterState(call.conn)?.rateLimited ?? 0) > 0;
  let err = call.lastError;
  if (err && spent) setMessage(err, `${err.message}; gave up: ${spent}`);
  if (!err) {
    const waited = spent
      ? `${limited ? "the service answered 429 and requests wait their turn; " : ""}${spent}`
      : `its time budget (${((options.budgetMs ?? RETRY_BUDGET_MS) / 1000).toFixed(0)} s) is spent waiting for the ` +
        `account's rate limit (${call.conn.maxRequestsPerMinute} requests a minute)`;
    err = failure(`${options.what}: not sent: ${waited}`, {});
  }
  if (call.bound) err.hint = boundHint(limited);
  return finish(err, n, url.origin, options.unseen);
}

/** The engine is gone or the run was cancelled (../engine): nothing more is sent. */
function checkNotStopped(options: RequestOptions, n: number): void {
  const why = stopped();
  if (why) throw failure(`${options.what}: not sent${n ? ` (after ${n} attempts)` : ""}: ${why}`, {});
}

/** An earlier attempt to this origin timed out with no answer: fail now rather than wait again. */
function checkNotSilent({ url, options, conn }: Call, n: number): void {
  const earlier = silence(url.origin);
  if (earlier === undefined) return;
  const err = failure(
    `${options.what}: not sent: ${url.origin} did not answer an earlier request of this run (${earlier})`,
    {},
  );
  err.hint = urlHint(conn);
  throw finish(err, n + 1, url.origin, options.unseen);
}

/**
 * A create names nothing of the stack's account (a key names nothing at all): through a fallback
 * key not proven to be of that account, it could make the object in another account.
 */
async function checkCreateKey({ method, conn, options, url }: Call, n: number): Promise<void> {
  if (method !== "POST" || !conn.rejected || (await keyProven(keyDigest(conn)))) return;
  const unproven = unprovenFallback("create");
  const err = failure(`${options.what}: not sent: ${unproven.why}`, {});
  err.hint = unproven.hint;
  throw finish(err, n + 1, url.origin, options.unseen);
}

/**
 * A 404 to a create, an update or a list: about a named object (an IP policy that does not exist),
 * or the API URL has a wrong path. Unless the URL has served the contract in this run, one proving
 * request tells; then the error names the full path sent and says where the URL was set.
 */
async function explainNotFound(
  err: ApiFailure,
  method: string,
  url: URL,
  conn: Connection,
  options: RequestOptions,
): Promise<void> {
  if (options.proof) return;
  const wrong = await baseProblem(conn, options.source, api);
  if (!wrong) return;
  setMessage(
    err,
    `${err.message}; ${method} ${url.pathname} was not found, and neither was the list of rules (${wrong})`,
  );
  err.hint = `the API URL looks wrong: is ${conn.apiUrlSetting} (${conn.apiUrl}) the API's base URL?`;
}
