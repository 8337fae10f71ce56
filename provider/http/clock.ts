// The service's clock, learnt from its own successful answers (provider/ownership.ts decides by it
// what this run can have created).
import { ConfigSource, connection } from "../config";
import { processState } from "../state";

/** Bounds on the service's clock minus ours (ms), learnt from its answers; undefined until one told. */
export interface ClockBounds {
  lower?: number;
  upper?: number;
}

/**
 * What the answers of the service at `source`'s API URL tell of its clock. Recovery takes over or
 * deletes only what was created at or after `sentAt + upper` (provider/ownership.ts): provably
 * after a request of ours was sent.
 */
export function serverClock(source?: ConfigSource): ClockBounds {
  const bounds = clocks()[new URL(connection(source).apiUrl).origin];
  // Bounds that contradict each other: some answer's time was not the service's (a cache, a proxy
  // that rewrites it); the clock is unknown, and nothing is taken over or deleted on its word.
  if (!bounds || (bounds.lower !== undefined && bounds.upper !== undefined && bounds.lower > bounds.upper)) return {};
  return { ...bounds };
}

function clocks(): Record<string, ClockBounds> {
  return processState<Record<string, ClockBounds>>("server-clock", () => ({}));
}

/**
 * The service read `serverMs` on its clock, cut to `resolutionMs`, at some moment between `sentAt`
 * (ours) and now: its clock minus ours is at least `serverMs - now` and less than
 * `serverMs + resolutionMs - sentAt`. The tightest bounds seen are kept.
 */
export function noteServerTime(origin: string, serverMs: number, resolutionMs: number, sentAt: number): void {
  if (!Number.isFinite(serverMs)) return;
  const bounds = (clocks()[origin] ??= {});
  const lower = serverMs - Date.now();
  const upper = serverMs + resolutionMs - sentAt;
  if (bounds.lower === undefined || lower > bounds.lower) bounds.lower = lower;
  if (bounds.upper === undefined || upper < bounds.upper) bounds.upper = upper;
}

/** The resolution an RFC 3339 time proves: its fraction of a second without trailing zeros, else a whole second. */
export function timeResolution(time: string): number {
  // Trailing zeros prove nothing: ".000Z" may be whole seconds printed with a fraction.
  const digits = (/\.(\d+)/.exec(time)?.[1] ?? "").replace(/0+$/, "");
  return digits ? Math.max(1, 1000 / 10 ** digits.length) : 1000;
}
