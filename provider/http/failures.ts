// The errors the client throws: plain Errors with fields (subclasses lose their message through
// Pulumi's serialization), a server's error answer as one line, and the advice once per service.
import { plainError, setMessage } from "../errors";
import { processState } from "../state";
import { heldValues, quote, redact } from "./redact";
import { idsIn, KeyMaterial, keyWindows, renderMsg } from "./render-msg";

/** An API failure. */
export interface ApiFailure extends Error {
  status?: number; // HTTP status, when the server answered
  errorCode?: string;
  operationId?: string;
  /** True when a create may or may not have happened (the answer was lost). */
  ambiguous?: boolean;
  /** What to do about it, appended to the message when it is thrown. */
  hint?: string;
  /** When the attempt that may have acted was sent (Date.now()): what it made is no older. */
  sentAt?: number;
  /**
   * A walk of a list stopped early (a loop, too many pages, its time budget): what it yielded is right but incomplete.
   */
  partial?: boolean;
}

export const failure = (message: string, fields: Partial<ApiFailure>): ApiFailure => plainError(message, fields);

/**
 * A server's error answer as an error: its status and the fields of the service's error shape, each
 * checked and bounded (error_code, msg quoted, details.operation_id); nothing else of the body is shown.
 * `request`: the request's path and body, whose ids (and those of `what`) the msg may name.
 */
export function describeError(
  what: string,
  status: number,
  body: unknown,
  text: string,
  secrets: (string | undefined)[],
  request = "",
): ApiFailure {
  type Known = { error_code?: unknown; msg?: unknown; details?: { operation_id?: unknown } };
  const b = (body !== null && typeof body === "object" ? body : {}) as Known;
  // A code or an operation id is server text too: shown only when renderMsg keeps it whole (words, an id
  // of the contract's shapes, no window of a credential); a free 64-character field held the whole key.
  const whole = (v: unknown, shape: RegExp): v is string =>
    typeof v === "string" && shape.test(v) && renderMsg(v, "", credentialWindows(secrets), "any") === v;
  const code = b.error_code;
  const errorCode = whole(code, /^[A-Za-z][A-Za-z0-9_.]{0,63}$/) ? code : undefined;
  const id = b.details?.operation_id;
  const operationId = whole(id, /^[A-Za-z0-9_.:-]{1,80}$/) ? id : undefined;
  // Redact before truncating (quote): a key cut in half at the limit would leave its first characters.
  const size = Buffer.byteLength(text);
  const unknown = text ? `an answer that is not the service's error (${size} bytes, not shown)` : "empty answer";
  const render = (plain: string) => renderMsg(plain, what, credentialWindows(secrets), idsIn(request));
  const detail = typeof b.msg === "string" ? quote(b.msg, secrets, undefined, render) : unknown;
  const message =
    `${what}: HTTP ${status}${errorCode ? ` ${errorCode}` : ""}: ${detail}` +
    `${operationId ? ` (operation ${operationId})` : ""}`;
  return failure(redact(message, secrets), { status, errorCode, operationId });
}

/** What renderMsg keeps out: of the request's credentials and of every one the process holds (cached). */
export function credentialWindows(secrets: (string | undefined)[] = []): KeyMaterial {
  type Cache = { of: string; windows: KeyMaterial };
  const empty = keyWindows([]);
  const cache = processState<Cache>("msg-key-material", () => ({ of: "", windows: empty }));
  const held = heldValues();
  const own = [...new Set(secrets.filter((s): s is string => typeof s === "string"))].sort();
  const all = [...new Set([...own, ...held.values])].sort();
  const of = `${all.join("\u0000")}\u0001${held.open.join("\u0000")}\u0001${own.join("\u0000")}`;
  if (cache.of !== of) Object.assign(cache, { of, windows: keyWindows(all, held.open, own) });
  return cache.windows;
}

/** The error an operation ends with: how many attempts it took, and what to do about it (once per process). */
export function finish(err: ApiFailure, attempts: number, origin: string, unseen?: boolean): ApiFailure {
  // Once per service: a refresh of 24 resources shows the advice once, not 24 times.
  const given = processState<{ hints: string[] }>("http-hints", () => ({ hints: [] })).hints;
  const key = `${origin} ${err.hint}`;
  const hint = !err.hint
    ? ""
    : given.includes(key)
      ? "; what to do: see the one error of this run that says it in full"
      : `; ${err.hint}`;
  if (err.hint && !unseen && !given.includes(key)) given.push(key);
  err.hint = undefined;
  return setMessage(err, `${err.message}${attempts > 1 ? ` (after ${attempts} attempts)` : ""}${hint}`);
}
