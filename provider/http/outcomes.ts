// What a failed attempt means (another? could the server have acted?), how long to wait before the
// next, and how long one operation may go on.

// One call starts no attempt more than this long after it began (every wait counts: the rate
// limiter's queue, backoff, Retry-After), so it ends within this plus one attempt's deadline; the
// bound of the provider operation it is part of (../operation) may end it sooner.
export const RETRY_BUDGET_MS = 5 * 60_000;
// A service that refuses connections is down, not busy: a couple of quick retries, then say so.
export const NOT_CONNECTED_RETRIES = 2;

/** A wait (backoff, or polling for other work of this process); with a signal, it rejects at once when that aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    // (each name declared before a closure uses it: Pulumi's closure serializer needs that)
    let timer: ReturnType<typeof setTimeout> | undefined = undefined;
    const stop = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    timer = setTimeout(() => {
      signal?.removeEventListener("abort", stop);
      resolve();
    }, ms);
    signal?.addEventListener("abort", stop, { once: true });
  });
}

/** What a failed attempt means: worth another? could the server have acted on it (then a POST is not repeated)? */
export interface Outcome {
  retry: boolean;
  mayHaveActed: boolean;
  /** Down or stuck, not busy: a couple of quick retries (NOT_CONNECTED_RETRIES), not minutes of them. */
  quick?: boolean;
  /** No connection was made: "cannot connect", and a hint. */
  down?: boolean;
}

const DOWN: Outcome = { retry: true, mayHaveActed: false, quick: true, down: true };
/**
 * Failed attempts by HTTP status or network error code; any other status is final, any other
 * network error is LOST. A plain object literal: Pulumi's closure serializer keeps no Set or Map.
 */
const OUTCOMES: Record<string, Outcome> = {
  429: { retry: true, mayHaveActed: false }, // limited before anything was done
  502: { retry: true, mayHaveActed: true }, // a gateway that may have forwarded the create: like a lost answer
  503: { retry: true, mayHaveActed: false },
  504: { retry: true, mayHaveActed: true },
  ECONNREFUSED: DOWN,
  ENOTFOUND: DOWN,
  EAI_AGAIN: DOWN,
  UND_ERR_CONNECT_TIMEOUT: DOWN,
  EHOSTUNREACH: DOWN,
  ENETUNREACH: DOWN,
  TIMEOUT: { retry: true, mayHaveActed: true, quick: true }, // no complete answer within the attempt's deadline
};
// undici's own timeouts (the Agent's headersTimeout and bodyTimeout) are timeouts too, not lost connections.
const TIMEOUT_CODES: Record<string, string> = {
  UND_ERR_HEADERS_TIMEOUT: "no answer within",
  UND_ERR_BODY_TIMEOUT: "the answer stopped for",
};
/** A connection lost after the request went out: the server may have acted. */
export const LOST: Outcome = { retry: true, mayHaveActed: true };

export function outcomeOf(key: string): Outcome | undefined {
  return Object.prototype.hasOwnProperty.call(OUTCOMES, key) ? OUTCOMES[key] : undefined;
}

/** How undici words one of its timeouts ("no answer within"), or undefined for any other code. */
export function undiciTimeout(code: string | undefined): string | undefined {
  return code && Object.prototype.hasOwnProperty.call(TIMEOUT_CODES, code) ? TIMEOUT_CODES[code] : undefined;
}

export function backoff(attempt: number, retryAfter: string | undefined): number {
  // Retry-After is a number of seconds or an HTTP date.
  const seconds =
    retryAfter === undefined
      ? NaN
      : /^\d+$/.test(retryAfter.trim())
        ? Number(retryAfter)
        : (Date.parse(retryAfter) - Date.now()) / 1000;
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds, 120) * 1000 + Math.random() * 250;
  const ceiling = Math.min(30_000, 250 * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}
