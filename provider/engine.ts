// The Pulumi engine that started this provider process, whichever host serves it (the dynamic-provider
// host or our plugin): both are started by the `pulumi` process, with the engine's gRPC address as
// an argument.
// - Messages go to its Log service with the resource's URN, so that Pulumi shows them under that
//   resource: live in its row when ephemeral (progress), in Diagnostics otherwise (a plan). What a
//   provider writes to stderr, Pulumi shows under the stack instead.
// - Whether it is still there: a killed `pulumi` leaves its plugins running (they have process
//   groups of their own), and nothing should reach the service on behalf of a run nobody records.
//   The `pulumi` process is this process's parent (or the parent of the shell script that started
//   it): once it is gone, no request starts, and the process exits.
// - Whether the run was cancelled (Ctrl-C, a CI's SIGINT to pulumi: the engine's Cancel call to every
//   provider; the plugin's own handler, or heard in the dynamic-provider host, which ignores it): no
//   request is started after that.
import * as fs from "node:fs";
import * as net from "node:net";
import { scrub } from "./http/redact";
import { processState } from "./state";

interface EngineState {
  /** The engine's address, once looked up (null: none, e.g. in tests). */
  address?: string | null;
  client?: { makeUnaryRequest: (...args: unknown[]) => unknown };
  /** The engine's process (pulumi), once watched. */
  process?: { pid: number; started?: string };
  /** The engine is gone: nothing is sent, not even a message. */
  gone?: boolean;
  /** Why no request may start any more, once that is so. */
  stopped?: string;
  /** Aborted when requests stop (stopRequests, or the engine gone): every wait of the process wakes and fails. */
  stop?: AbortController;
  /** Messages held back by URN, until the step they are about has begun (holdReports). */
  held?: Record<string, { message: string; how: Report }[]>;
}

function engine(): EngineState {
  return processState<EngineState>("engine", () => ({}));
}

/** The engine's process (pulumi), once watched (see watchEngine); undefined outside a provider process. */
export function engineProcess(): { pid: number; started?: string } | undefined {
  return engine().process;
}

/**
 * host:port of the engine: the first argument of this process that looks like one (flags such as -v=9 may come first).
 */
export function engineAddress(): string | undefined {
  const state = engine();
  if (state.address === undefined)
    state.address = process.argv.slice(2).find((a) => /^(127\.0\.0\.1|localhost|\[::1\]):\d+$/.test(a)) ?? null;
  return state.address ?? undefined;
}

export interface Report {
  /** Shown live in the resource's row and then replaced (progress); not kept in Diagnostics. */
  ephemeral?: boolean;
  warning?: boolean;
}

/**
 * Writes `text` to stderr (which Pulumi shows under the stack, and logs), scrubbed of every credential of the process.
 */
export function toStderr(text: string): void {
  process.stderr.write(scrub(text));
}

/**
 * Shows `message` under the resource `urn` (without a URN or an engine: on stderr, which Pulumi
 * shows under the stack), scrubbed of every credential of the process. Never fails and never
 * waits: a message is not worth an error.
 */
export function report(urn: string | undefined, text: string, how: Report = {}): void {
  const message = scrub(text);
  const client = urn ? logClient() : undefined;
  if (!client) {
    if (!how.ephemeral) process.stderr.write(`${message}\n`);
    return;
  }
  const held = engine().held?.[urn!];
  if (held) return void held.push({ message, how });
  void send(client, urn!, message, how);
}

/**
 * Holds back what is reported about `urn` until releaseReports(urn). Pulumi shows a message in the
 * row of the resource's current step, and reprints that row's last message each time the row
 * changes (a non-interactive display prints a line each time): a plan reported by Diff, which runs
 * before the step it plans exists, lands on the row of the step before (a refresh) and is printed
 * again on the update's. The plugin holds what Check and Diff say until the step's own call
 * (Create or Update, in a preview too), so that it is said once, on the step's row.
 */
export function holdReports(urn: string): void {
  const state = engine();
  state.held ??= {};
  state.held[urn] ??= [];
}

/**
 * Sends what was held back about `urn`, one message after the other, and holds nothing more.
 * Resolves once the engine has taken each (at most 5 s each): the call that releases them may be
 * the last of a preview, which must not end before they are shown.
 */
export async function releaseReports(urn: string): Promise<void> {
  const state = engine();
  const held = state.held?.[urn];
  if (!held) return;
  delete state.held![urn];
  const client = logClient();
  for (const { message, how } of held) {
    if (client) await send(client, urn, message, how);
    else if (!how.ephemeral) process.stderr.write(`${message}\n`);
  }
}

/** One message to the engine's Log service; resolves when the engine has answered (or after 5 s). */
function send(client: NonNullable<EngineState["client"]>, urn: string, message: string, how: Report): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded by the first message, not on import
  const { LogRequest, LogSeverity } = require("@pulumi/pulumi/proto/engine_pb");
  const req = new LogRequest();
  req.setSeverity(how.warning ? LogSeverity.WARNING : LogSeverity.INFO);
  req.setMessage(message);
  req.setUrn(urn);
  req.setEphemeral(!!how.ephemeral);
  const serialize = (m: { serializeBinary(): Uint8Array }) => Buffer.from(m.serializeBinary());
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, 5000);
    timer.unref();
    client.makeUnaryRequest(
      "/pulumirpc.Engine/Log",
      serialize,
      (b: Buffer) => b,
      req,
      () => {
        clearTimeout(timer);
        resolve();
      },
    );
  });
}

function logClient(): EngineState["client"] {
  const state = engine();
  const address = engineAddress();
  if (!address || state.gone) return undefined;
  if (!state.client) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded by the first message, not on import
    const grpc = require("@grpc/grpc-js");
    state.client = new grpc.Client(address, grpc.credentials.createInsecure());
  }
  return state.client;
}

/**
 * Why requests may not start any more ("the Pulumi engine is
 * gone", "cancelled"), or undefined. Looks at the engine now.
 */
export function stopped(): string | undefined {
  const state = engine();
  if (!state.stopped && !engineAlive(state)) gone(state);
  return state.stopped;
}

/** Whether the engine's `pulumi` process has ended (this provider process is on its way out). */
export function engineGone(): boolean {
  return !!engine().gone;
}

/** The run was cancelled (Ctrl-C, the plugin's Cancel): start no more requests, and end every wait now. */
export function stopRequests(reason: string): void {
  const state = engine();
  state.stopped ??= reason;
  stopper().abort(state.stopped);
}

function stopper(): AbortController {
  return (engine().stop ??= new AbortController());
}

/**
 * Aborted once requests stop: a wait (the rate limiter's queue, a backoff, a walk of a list in
 * flight) listens to it and fails at once with `stopped()` as its reason.
 */
export function stopSignal(): AbortSignal {
  return stopper().signal;
}

/** A process's state, parent and start time (Linux /proc), or undefined when it is gone or cannot be read. */
function processInfo(pid: number): { state: string; parent: number; started: string } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // after "pid (comm) "
    return { state: fields[0], parent: Number(fields[1]), started: fields[19] };
  } catch {
    return undefined;
  }
}

/**
 * The program a process runs (the file /proc/<pid>/exe links to: the interpreter of a script; else
 * `ps`), or "" when it cannot be read.
 * Only the watch below asks, to step over the shell script that starts the dynamic host: nothing
 * reads the CLI's command line. The job says what it does (config.ts planRole).
 */
function programOf(pid: number): string {
  try {
    return fs.readlinkSync(`/proc/${pid}/exe`);
  } catch {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- only where /proc is missing
      const { execFileSync } = require("node:child_process") as typeof import("node:child_process");
      return String(execFileSync("ps", ["-o", "comm=", "-p", String(pid)], { timeout: 5000 })).trim();
    } catch {
      return "";
    }
  }
}

/**
 * Whether the engine's process still runs: not a zombie, and not another process that took its PID (its start time).
 */
function engineAlive(state: EngineState): boolean {
  const engine = state.process;
  if (!engine) return true; // not watched: no engine (tests)
  try {
    process.kill(engine.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ESRCH") return false;
  }
  if (engine.started === undefined) return true; // no /proc: the PID is all there is to go by
  const now = processInfo(engine.pid);
  return now !== undefined && now.state !== "Z" && now.started === engine.started;
}

const CANCEL_PATH = "/pulumirpc.ResourceProvider/Cancel";

/**
 * Hears the engine's Cancel call in this process's gRPC server (the one server listening in a provider
 * process). Pulumi sends it to every provider when the command is cancelled (Ctrl-C in a terminal, or
 * SIGINT to pulumi alone, as a CI's cancel does: plugins run in process groups of their own, so no
 * signal reaches them) and before it closes them. @pulumi/pulumi's dynamic-provider host answers it
 * and does nothing, so an update there ran on to its time bound; heard here, requests stop at once.
 * Without the server to be had (Node.js without process._getActiveHandles), the time bound is all.
 */
function hearCancel(): void {
  const handles = (process as unknown as { _getActiveHandles?: () => unknown[] })._getActiveHandles?.() ?? [];
  for (const server of handles) {
    if (!(server instanceof net.Server) || server.listenerCount("stream") === 0) continue; // not an HTTP/2 server
    server.prependListener("stream", (_stream: unknown, headers: Record<string, unknown>) => {
      if (headers[":path"] === CANCEL_PATH) stopRequests("the operation was cancelled");
    });
  }
}

/** The engine is gone: say so once, stop, and exit (nobody will ask this process for anything again). */
function gone(state: EngineState): void {
  if (state.gone) return;
  state.gone = true;
  state.stopped = "the Pulumi engine that started this provider is gone (pulumi was killed)";
  stopper().abort(state.stopped);
  toStderr(`accessctl: ${state.stopped}; no more requests are sent, and this provider process exits\n`);
  process.exit(1);
}

/**
 * Starts watching the engine (once per process; only in a provider process, which has an engine
 * address): its process is looked at before every request (stopped()) and every half second.
 */
export function watchEngine(): void {
  const state = engine();
  if (!engineAddress() || state.process) return;
  let pid = process.ppid;
  let info = processInfo(pid);
  // The dynamic-provider host is started through a shell script (`#!/bin/sh`), which waits for it:
  // pulumi is that shell's parent.
  if (info && /(^|\/)(sh|bash|dash|ash|busybox)$/.test(programOf(pid))) {
    pid = info.parent;
    info = processInfo(pid);
  }
  state.process = { pid, started: info?.started };
  if (pid === 1) return gone(state); // already adopted by init: whatever started us has ended
  hearCancel();
  setInterval(() => {
    if (!engineAlive(state)) gone(state);
  }, 500).unref();
}
