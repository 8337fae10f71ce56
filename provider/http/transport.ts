// One attempt of a request, on undici: one connection pool per process, the contract's headers'
// User-Agent, the attempt's deadline and size cap, JSON parsing, the check that a success has the
// fields we need, and the origins that fell silent.
import * as fs from "node:fs";
import * as path from "node:path";
import { Agent, Dispatcher, request } from "undici";
import { ConfigSource } from "../config";
import { liftoffOnly } from "../memory";
import { processState } from "../state";
import { noteServerTime, timeResolution } from "./clock";
import { ApiFailure, describeError, failure } from "./failures";
import { outcomeOf, undiciTimeout } from "./outcomes";
import { quote } from "./redact";

const MAX_RESPONSE_BYTES = 8 << 20;
// One attempt: from sending to the last byte of the answer, however slowly the server trickles it.
export const ATTEMPT_DEADLINE_MS = 60_000;
// No answer (headers), or no byte of the body, for this long ends the attempt sooner (undici's timeouts).
const AGENT_TIMEOUT_MS = 30_000;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an answer no caller typed is JSON it checks itself
export interface ApiResponse<T = any> {
  status: number;
  body: T;
  /**
   * Set when a fallback key (ACCESSCTL_API_KEY after a 401 to the
   * config key) got this answer: its digest (see trust.ts proveKey).
   */
  fallbackKey?: string;
  /**
   * The digest of the key that got this answer, whichever it was
   * (trust.ts: a 404 to a key is believed once the key is proven).
   */
  keyUsed?: string;
}

export interface RequestOptions {
  /** What the caller was doing, for error messages ("create IP policy rule"). */
  what: string;
  body?: unknown;
  /** 404 is an answer, not an error (reads and deletes of objects that may be gone). */
  allow404?: boolean;
  /** Connection settings given by the caller (the program process); else the provider's configure / env. */
  source?: ConfigSource;
  /**
   * Fields a successful answer must have ("ip_policy.id":
   * "string"): an answer without them is an error, not empty state.
   */
  expect?: Record<string, "string" | "boolean" | "array">;
  /**
   * Nobody sees this request's error (a walk whose failure costs
   * GETs): it does not use up the advice (failures.ts finish).
   */
  unseen?: boolean;
  /** Overrides of ATTEMPT_DEADLINE_MS and RETRY_BUDGET_MS (tests, and a walk's remaining budget). */
  deadlineMs?: number;
  budgetMs?: number;
  /** What to check when nothing answers (set by api(): the URL, named where the user set it). */
  urlHint?: string;
  /** The request that proves the API URL (trust.ts): a 404 to it is the answer, not a question for another proof. */
  proof?: boolean;
}

interface TransportState {
  agent?: Agent;
  /** origin → how an attempt there timed out with no answer: later requests fail at once, until one is answered. */
  silent: Record<string, string>;
}

function shared(): TransportState {
  return processState<TransportState>("http-transport", () => ({ silent: {} }));
}

/** How an earlier attempt to this origin timed out with no answer, if one did and none was answered since. */
export function silence(origin: string): string | undefined {
  return shared().silent[origin];
}

function agent(): Agent {
  const state = shared();
  if (!state.agent) {
    liftoffOnly(); // before undici compiles its HTTP parser (memory.ts)
    state.agent = new Agent({
      connections: 16,
      connectTimeout: 10_000,
      headersTimeout: AGENT_TIMEOUT_MS,
      bodyTimeout: AGENT_TIMEOUT_MS,
      keepAliveTimeout: 4_000,
    });
  }
  return state.agent;
}

// This file is dist/provider/http/transport.js, three levels below package.json, installed or not.
// A string computed at load: a provider serialized by value (inside this repository) keeps it,
// whereas `__dirname` inside a function would name the loader's directory there.
const PACKAGE_JSON = path.join(__dirname, "..", "..", "..", "package.json");

/**
 * The User-Agent, with this package's version: the plugin's bundle says it (setVersion), else it is
 * read from package.json by the first request (a small file; not hard-coded), once a process (a set
 * of 5,000 rules read it 5,000 times: 0.7 s).
 */
export function userAgent(): string {
  const known = processState<{ version?: string }>("package", () => ({}));
  known.version ??= (JSON.parse(fs.readFileSync(PACKAGE_JSON, "utf8")) as { version: string }).version;
  return `accessctl-pulumi/${known.version} node/${process.versions.node}`;
}

/** The version a bundle was built from (a bundle has no package.json three directories up). */
export function setVersion(version: string): void {
  processState<{ version?: string }>("package", () => ({})).version = version;
}

async function readBody(body: Dispatcher.ResponseData["body"], what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_RESPONSE_BYTES) {
      body.destroy();
      throw failure(`${what}: the answer is over ${MAX_RESPONSE_BYTES} bytes; giving up on it`, {});
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Checks that an answer has the fields we turn into outputs, so that a short answer never wipes state. */
export function checkAnswer(body: unknown, expect: NonNullable<RequestOptions["expect"]>, what: string): void {
  for (const [field, type] of Object.entries(expect)) {
    const value = field
      .split(".")
      .reduce<unknown>(
        (v, k) => (v === null || typeof v !== "object" ? undefined : (v as Record<string, unknown>)[k]),
        body,
      );
    const ok = type === "array" ? Array.isArray(value) : typeof value === type;
    if (!ok)
      throw failure(
        `${what}: the answer has no valid ${field} (expected a ${type}); nothing was changed in the state`,
        {},
      );
  }
}

/** How one attempt ended: an answer for the caller, or a failure with its status or network error code. */
export type Attempt<T> =
  { response: ApiResponse<T> } | { error: ApiFailure; status?: number; code?: string; retryAfter?: string };

/**
 * One attempt: send, read the answer within the attempt's deadline and size cap, parse it, check a
 * success has the fields we need. Throws what no retry can help (an answer we cannot use).
 */
export async function attempt<T>(
  method: string,
  url: URL,
  headers: Record<string, string>,
  payload: string | undefined,
  options: RequestOptions,
  deadlineMs: number,
  secrets: (string | undefined)[],
): Promise<Attempt<T>> {
  const deadline = AbortSignal.timeout(deadlineMs);
  const sentAt = Date.now();
  try {
    const res = await request(url, {
      method: method as Dispatcher.HttpMethod,
      headers,
      body: payload,
      dispatcher: agent(),
      signal: deadline,
    });
    delete shared().silent[url.origin]; // it answers
    const succeeded = res.statusCode >= 200 && res.statusCode < 300;
    // A success we cannot use means a create may have happened all the same.
    const unusable = (e: ApiFailure) =>
      Object.assign(e, { status: res.statusCode, ambiguous: method === "POST" && succeeded });
    const text = await readBody(res.body, options.what).catch((e) => {
      // a network error mid-body goes the network way
      throw (e as { code?: string }).code || deadline.aborted ? e : unusable(e);
    });
    const { body, parsed } = parseJson(text);
    if (succeeded) {
      // (its text is not shown: it may be anything, a new token cut short among others)
      const notJson = `HTTP ${res.statusCode} but the answer is not JSON (${Buffer.byteLength(text)} bytes, not shown)`;
      if (!parsed) throw unusable(failure(`${options.what}: ${notJson}`, {}));
      if (options.expect && res.statusCode !== 204) {
        try {
          checkAnswer(body, options.expect, options.what);
        } catch (e) {
          throw unusable(e as ApiFailure);
        }
      }
      noteClock(url.origin, method, res.headers.date, body, sentAt);
      return { response: { status: res.statusCode, body: body as T } };
    }
    if (res.statusCode === 404 && options.allow404) return { response: { status: 404, body: body as T } };
    const header = res.headers["retry-after"];
    const error = describeError(options.what, res.statusCode, body, text, secrets, `${url.pathname} ${payload ?? ""}`);
    return { error, status: res.statusCode, retryAfter: Array.isArray(header) ? header[0] : header };
  } catch (e) {
    return networkFailure(e, url, options, deadline, deadlineMs, secrets);
  }
}

/** An attempt that got no (complete) answer, as its error; what is no network failure is thrown again. */
function networkFailure(
  e: unknown,
  url: URL,
  options: RequestOptions,
  deadline: AbortSignal,
  deadlineMs: number,
  secrets: (string | undefined)[],
): Attempt<never> {
  const err = e as ApiFailure & { code?: string };
  // an answer we already judged, or our own failure
  if (err.status !== undefined || !(err.code || deadline.aborted)) throw err;
  const timeout = undiciTimeout(err.code);
  const code = deadline.aborted || timeout ? "TIMEOUT" : String(err.code);
  const detail = deadline.aborted
    ? `no complete answer within ${deadlineMs / 1000} s`
    : timeout
      ? `${timeout} ${AGENT_TIMEOUT_MS / 1000} s`
      : outcomeOf(code)?.down
        ? "cannot connect"
        : err.message;
  // Only the library's text is quoted: ours ("create API key: …") is no secret, and would read as one.
  const error = failure(`${options.what}: ${code}: ${quote(detail, secrets, 1000)} (${url.origin})`, {});
  if (outcomeOf(code)?.down || code === "TIMEOUT") error.hint = options.urlHint;
  // The service accepts and does not answer: the rest of this process fails at once instead of waiting again.
  if (code === "TIMEOUT") shared().silent[url.origin] = `${code}: ${detail}`;
  return { error, code };
}

/** An answer's text as JSON (undefined for none); `parsed` is false when it is not JSON. */
function parseJson(text: string): { body: unknown; parsed: boolean } {
  try {
    return { body: text ? JSON.parse(text) : undefined, parsed: true };
  } catch {
    return { body: undefined, parsed: false };
  }
}

/**
 * The service's clock, from its own successes only (a gateway's 502 carries the gateway's Date): the Date header,
 * in whole seconds, and the creation time of what a create made.
 */
function noteClock(
  origin: string,
  method: string,
  date: string | string[] | undefined,
  body: unknown,
  sentAt: number,
): void {
  noteServerTime(origin, Date.parse(Array.isArray(date) ? date[0] : (date ?? "")), 1000, sentAt);
  const createdAt = method === "POST" ? (body as { created_at?: unknown } | undefined)?.created_at : undefined;
  if (typeof createdAt === "string") noteServerTime(origin, Date.parse(createdAt), timeResolution(createdAt), sentAt);
}
