// One API operation: the contract's headers, retries with backoff that never repeat a create the
// server may have acted on, the time budget, the rate limiter (../limiter), and the one switch to
// ACCESSCTL_API_KEY after the config key is refused (../config says where keys come from).
import { SERVICE_VERSION } from "../../contract/common";
import { authHint, Connection, connection, refuseConfigKey, unprovenFallback, urlHint } from "../config";
import { setMessage } from "../errors";
import { stopped } from "../engine";
import { takeRateSlot } from "../limiter";
import { processState } from "../state";
import { ApiFailure, failure, finish } from "./failures";
import { backoff, LOST, NOT_CONNECTED_RETRIES, outcomeOf, RETRY_BUDGET_MS, sleep } from "./outcomes";
import { baseProblem, believe404, keyDigest, keyProven, proveBase, proveKey, underWay } from "./trust";
import { ApiResponse, attempt, ATTEMPT_DEADLINE_MS, RequestOptions, silence, userAgent } from "./transport";

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

/** One API operation, with retries. `pathOrUrl` is a path (use apiPath) or a URL on the API's origin. */
export async function api<T = any>(method: string, pathOrUrl: string, options: RequestOptions): Promise<ApiResponse<T>> {
  let conn = connection(options.source);
  // A path is appended to the API URL (which may have a path of its own); a next_page_uri is absolute.
  const url = new URL(pathOrUrl.startsWith("/") ? conn.apiUrl + pathOrUrl : pathOrUrl);
  if (url.origin !== new URL(conn.apiUrl).origin) {
    throw failure(`${options.what}: refusing to send the API key to ${url.origin}, which is not the configured API (${new URL(conn.apiUrl).origin})`, {});
  }
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = {
    authorization: `Bearer ${conn.apiKey}`,
    "service-version": SERVICE_VERSION,
    "user-agent": userAgent(),
    accept: "application/json",
  };
  if (payload !== undefined) headers["content-type"] = "application/json";
  const count = counters();
  const deadlineMs = options.deadlineMs ?? ATTEMPT_DEADLINE_MS;
  const budgetMs = options.budgetMs ?? RETRY_BUDGET_MS;
  let retries = conn.maxRetries;
  let started = 0;
  let blockFor = 0;
  let lastError: ApiFailure | undefined;
  for (let n = 0; ; n++) {
    checkNotStopped(options, n);
    checkNotSilent(url, options, n, conn);
    // A create names nothing of the stack's account (a key names nothing at all): through a fallback
    // key not proven to be of that account, it could make the object in another account.
    if (method === "POST" && conn.rejected && !(await keyProven(keyDigest(conn.apiKey)))) {
      const unproven = unprovenFallback("create");
      const err = failure(`${options.what}: not sent: ${unproven.why}`, {});
      err.hint = unproven.hint;
      throw finish(err, n + 1, url.origin, options.unseen);
    }
    const sent = await takeRateSlot(conn, blockFor);
    try {
      // The service may have fallen silent during the wait, or the engine gone, or the run been cancelled.
      checkNotStopped(options, n);
      checkNotSilent(url, options, n, conn);
    } catch (e) {
      sent();
      throw e;
    }
    // The limiter's queue can be longer than the Retry-After we asked for: that wait counts too.
    if (lastError && Date.now() - started > budgetMs) {
      sent();
      throw finish(lastError, n, url.origin, options.unseen);
    }
    blockFor = 0;
    if (n === 0) started = Date.now();
    count.requests++;
    const sentAt = Date.now();
    const run = () => attempt<T>(method, url, headers, payload, { ...options, urlHint: urlHint(conn) }, deadlineMs, [conn.apiKey, conn.fallbackApiKey]);
    // a read or delete under way: see trust.ts believe404
    const result = await (options.allow404 ? underWay(run) : run()).catch((e) => {
      sent();
      throw Object.assign(e as ApiFailure, { sentAt });
    });
    sent("response" in result ? result.response.status : result.status);
    if ("response" in result) {
      const response = conn.rejected ? { ...result.response, fallbackKey: keyDigest(conn.apiKey) } : result.response;
      if (options.allow404 && response.status === 404) await believe404(conn, response, options, [conn.apiKey, conn.fallbackApiKey], api);
      else if (options.allow404) proveKey(response.fallbackKey); // a read or delete of an object this stack holds worked
      if (options.expect && response.status !== 204) proveBase(conn.apiUrl);
      return response;
    }
    if (result.status === 401 && conn.fallbackApiKey) {
      // The key from the stack config was refused: try the one in ACCESSCTL_API_KEY, once, and keep to it.
      conn = refuseConfigKey(conn);
      headers.authorization = `Bearer ${conn.apiKey}`;
      continue;
    }
    lastError = result.error;
    if (result.status === 401) lastError.hint = authHint(conn);
    if (result.status === 404) await explainNotFound(lastError, method, url, conn, options);
    const outcome = result.status !== undefined ? outcomeOf(String(result.status)) : (outcomeOf(result.code!) ?? LOST);
    if (!outcome?.retry) throw finish(lastError, 1, url.origin, options.unseen);
    // A create that may have acted says so, whatever comes next (a timed-out POST is one).
    lastError.ambiguous = method === "POST" && outcome.mayHaveActed;
    lastError.sentAt = sentAt;
    // No retry to a service that let an attempt time out with no answer (this one, or another one's).
    if (silence(url.origin) !== undefined) throw finish(lastError, n + 1, url.origin, options.unseen);
    if (outcome.quick) retries = Math.min(retries, NOT_CONNECTED_RETRIES);
    if (result.status === 429) {
      count.rateLimited++;
      blockFor = backoff(n, result.retryAfter);
    }
    const delay = blockFor || backoff(n, result.retryAfter);
    if (lastError.ambiguous || n >= retries || Date.now() - started + delay > budgetMs) throw finish(lastError, n + 1, url.origin, options.unseen);
    count.retries++;
    if (!blockFor) await sleep(delay);
  }
}

/** The engine is gone or the run was cancelled (../engine): nothing more is sent. */
function checkNotStopped(options: RequestOptions, n: number): void {
  const why = stopped();
  if (why) throw failure(`${options.what}: not sent${n ? ` (after ${n} attempts)` : ""}: ${why}`, {});
}

/** An earlier attempt to this origin timed out with no answer: fail now rather than wait again. */
function checkNotSilent(url: URL, options: RequestOptions, n: number, conn: Connection): void {
  const earlier = silence(url.origin);
  if (earlier === undefined) return;
  const err = failure(`${options.what}: not sent: ${url.origin} did not answer an earlier request of this run (${earlier})`, {});
  err.hint = urlHint(conn);
  throw finish(err, n + 1, url.origin, options.unseen);
}

/**
 * A 404 to a create, an update or a list: about a named object (an IP policy that does not exist),
 * or the API URL has a wrong path. Unless the URL has served the contract in this run, one proving
 * request tells; then the error names the full path sent and says where the URL was set.
 */
async function explainNotFound(err: ApiFailure, method: string, url: URL, conn: Connection, options: RequestOptions): Promise<void> {
  if (options.proof) return;
  const wrong = await baseProblem(conn, options.source, api);
  if (!wrong) return;
  setMessage(err, `${err.message}; ${method} ${url.pathname} was not found, and neither was the list of rules (${wrong})`);
  err.hint = `the API URL looks wrong: is ${conn.apiUrlSetting} (${conn.apiUrl}) the API's base URL?`;
}
