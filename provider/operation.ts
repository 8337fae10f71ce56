// One provider operation, and its time bound. An operation is one call of a host into a provider
// module (check, diff, create, read, update, delete of one resource, however many requests it
// makes: a set's hundreds of calls are one operation). Once its bound is spent, no new request of
// it starts, and every wait of it (the rate limiter's queue, a backoff, a walk of a list in flight)
// ends: the operation fails, recording what exists as any failure does. So an operation ends within
// its bound plus one attempt (http/transport.ts ATTEMPT_DEADLINE_MS), and a command within that
// times the longest chain of operations that wait for each other (the engine runs the others at once).
// The bound: ACCESSCTL_OPERATION_TIMEOUT seconds, else DEFAULT_OPERATION_BOUND_MS; it grows with the
// work the operation has measured (growBound): each page of a list it reads, or waits for, adds that
// page's time at the pace (http/pages.ts walkLimits), so that a walk of a large account is not failed
// half done. Still bounded: a walk follows at most http/pages.ts UNLIMITED_PAGES pages, and an error
// names the growth (boundText).
import { AsyncLocalStorage } from "node:async_hooks";
import { refuseWriteWhenSaving } from "./config";
import { plainError } from "./errors";
import { afterOperation } from "./memory";
import { processState } from "./state";

/**
 * 10 minutes: a 300-rule set at the service's 120 requests a minute takes about 2.5 (100,000 rules listed: about 8.5).
 */
export const DEFAULT_OPERATION_BOUND_MS = 10 * 60_000;
export const OPERATION_BOUND_SETTING = "ACCESSCTL_OPERATION_TIMEOUT";

/** Which call of the host an operation is (none: a walk's own, a function's). */
export type OperationKind = "check" | "diff" | "create" | "read" | "update" | "delete";

export interface Operation {
  /** What the host called: a 404 read in a `read` may be taken at the user's word (http/trust.ts), never in a write. */
  kind?: OperationKind;
  started: number;
  /** No request of the operation starts after this (Date.now() time). */
  deadline: number;
  boundMs: number;
  /** What the bound grew by (growBound): ms, and the pages of lists that earned them. */
  grown: { ms: number; pages: number };
}

function storage(): AsyncLocalStorage<Operation> {
  return processState<{ als: AsyncLocalStorage<Operation> }>("operation", () => ({
    als: new AsyncLocalStorage<Operation>(),
  })).als;
}

/** The bound of one operation: ACCESSCTL_OPERATION_TIMEOUT (seconds, at least 1), else 10 minutes. */
export function operationBoundMs(): number {
  const text = process.env[OPERATION_BOUND_SETTING];
  if (text === undefined || text.trim() === "") return DEFAULT_OPERATION_BOUND_MS;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds < 1) {
    throw plainError(
      `${OPERATION_BOUND_SETTING}: expected a number of seconds (at least 1), got ${JSON.stringify(text)}`,
      {},
    );
  }
  return seconds * 1000;
}

/** Runs `fn` as one operation (of `kind`): its requests and waits end by `boundMs` from now. */
export function inOperation<T>(fn: () => Promise<T>, boundMs?: number, kind?: OperationKind): Promise<T> {
  let bound: number;
  try {
    bound = boundMs ?? operationBoundMs();
  } catch (e) {
    return Promise.reject(e);
  }
  const started = Date.now();
  // What a large operation leaves is collected before the host answers, and after (memory.ts).
  const op: Operation = {
    ...(kind ? { kind } : {}),
    started,
    deadline: started + bound,
    boundMs: bound,
    grown: { ms: 0, pages: 0 },
  };
  return storage().run(op, fn).finally(afterOperation);
}

/**
 * Runs a write (create, update, delete) as one operation: refused,
 * before it starts, in a job that saves a plan for review (config.ts).
 */
export function inWriteOperation<T>(fn: () => Promise<T>, kind: OperationKind): Promise<T> {
  try {
    refuseWriteWhenSaving();
  } catch (e) {
    return Promise.reject(e);
  }
  return inOperation(fn, undefined, kind);
}

/** The operation the caller is part of, if any (none: a test calling a module directly, a walk's own). */
export function currentOperation(): Operation | undefined {
  return storage().getStore();
}

/**
 * The bound grows by `ms`, the time `pages` pages of a list
 * take at the pace: the operation read them or waited for them.
 */
export function growBound(op: Operation, ms: number, pages: number): void {
  op.deadline += ms;
  op.grown.ms += ms;
  op.grown.pages += pages;
}

/**
 * How the bound of an operation is named in errors: "this operation's time bound (10 min,
 * ACCESSCTL_OPERATION_TIMEOUT)", and what it grew by: "…, grown by 500 s for 1000 pages of lists at the pace".
 */
export function boundText(op: Pick<Operation, "boundMs"> & { grown?: Operation["grown"] }): string {
  const s = op.boundMs / 1000;
  const grownS = Math.round((op.grown?.ms ?? 0) / 1000);
  const grown = grownS ? `, grown by ${grownS} s for ${op.grown!.pages} pages of lists at the pace` : "";
  const bound = s % 60 === 0 ? `${s / 60} min` : `${s} s`;
  return `this operation's time bound (${bound}, ${OPERATION_BOUND_SETTING}${grown})`;
}

/** What to do when an operation's bound is spent. */
export function boundHint(rateLimited: boolean): string {
  return (
    (rateLimited
      ? "the service kept answering 429 (another client is using the account's rate limit): run again when it is " +
        "quieter, or lower accessctl:maxRequestsPerMinute; "
      : "") + `what was done is recorded: run the command again to go on, or raise ${OPERATION_BOUND_SETTING} (seconds)`
  );
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any module operation; its arguments are passed on
type Fn = (...args: any[]) => Promise<unknown>;

/** One operation: `fn` on `args`, within the bound (a write: refused in a job that saves a plan). */
function operate(fn: Fn, args: unknown[], kind: OperationKind): Promise<unknown> {
  const write = kind === "create" || kind === "update" || kind === "delete";
  return write ? inWriteOperation(() => fn(...args), kind) : inOperation(() => fn(...args), undefined, kind);
}

/**
 * The provider module with each operation bounded (the plugin's server, in process): the same
 * functions, each run by inOperation. The dynamic host, whose provider Pulumi serializes, gets
 * provider/bounded/<module>.ts instead, plain modules serialized as the others are. (Written out one by one, each
 * naming what it captures at its top: Pulumi's closure serializer keeps one value per captured name, so closures made
 * in a loop would all call the same function, and it misses a name used only in a nested closure.)
 */
export function bounded<M extends object>(module: M): M {
  const m = module as unknown as Partial<Record<"check" | "diff" | "create" | "read" | "update" | "delete", Fn>>;
  const out: Record<string, unknown> = { ...(module as Record<string, unknown>) };
  if (m.check) out.check = (a: unknown, b: unknown) => operate(m.check!, [a, b], "check");
  if (m.diff) out.diff = (a: unknown, b: unknown, c: unknown) => operate(m.diff!, [a, b, c], "diff");
  if (m.create) out.create = (a: unknown) => operate(m.create!, [a], "create");
  if (m.read) out.read = (a: unknown, b: unknown) => operate(m.read!, [a, b], "read");
  if (m.update) out.update = (a: unknown, b: unknown, c: unknown) => operate(m.update!, [a, b, c], "update");
  if (m.delete) out.delete = (a: unknown, b: unknown) => operate(m.delete!, [a, b], "delete");
  return out as M;
}
