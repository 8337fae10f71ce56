// What the provider processes of one `pulumi` command have recorded, shared between them. One command
// starts several: the preview's engine and the update's each start their own plugins, and a program
// may use the dynamic host and the plugin, or two versions of the plugin (an upgrade), at once. What
// one of them knows (a set took over a policy; the rules a preview showed) must hold in the others:
// a rule resource deleted by one process must not take a rule from the set another one just created.
// So records go to a file named after the `pulumi` process (its PID and start time: unique while the
// machine runs), in a directory of Pulumi's home only this user can write, one JSON line each, appended (small appends
// are atomic), tagged with the engine (its address) that wrote them: what one engine checked (claims)
// holds in that engine only; what a preview showed holds for the update after it (and the ids of the
// rules its walk found on a new set's policy: noteListed). Without an engine
// (tests), or where the start time or the directory is not to be had, they stay in each process.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { engineAddress, engineGone, engineProcess, toStderr } from "./engine";
import { plainError } from "./errors";
import { processState } from "./state";

export interface RunRecord<T = string> {
  /** The engine (its address) of the process that wrote it: the preview's, or the update's. */
  engine: string;
  value: T;
}

/** [list, engine, value]: a value is a string or a JSON value of the list's own type. */
type Line = [string, string, unknown];
const isLine = (l: unknown): l is Line =>
  Array.isArray(l) && l.length === 3 && typeof l[0] === "string" && typeof l[1] === "string";

interface Cache {
  file?: string | null;
  size: number;
  lines: Line[];
  local: Line[];
  /**
   * Why the processes of this command cannot share their records
   * (no private directory, a write that failed), once that is so.
   */
  unshared?: string;
}

function cache(): Cache {
  return processState<Cache>("run-record", () => ({ size: 0, lines: [], local: [] }));
}

/**
 * This command's file, or undefined without an engine (or without a private directory to put it
 * in). Records written before the file was known (before the engine was watched) are added to it.
 */
function runFile(): string | undefined {
  const state = cache();
  if (state.file !== undefined) return state.file ?? undefined;
  const pulumi = engineProcess();
  if (engineAddress() && !pulumi) return undefined; // not watched yet: ask again later
  const dir = pulumi && pulumi.started ? privateDir() : undefined; // without a start time, a reused PID would share
  state.file = dir ? path.join(dir, `run-${pulumi!.pid}-${pulumi!.started}.jsonl`) : null;
  if (!state.file) return undefined;
  // The command ended (pulumi killed): nothing will read the
  // record (else the next command's first provider removes it).
  processState("run-record-exit", () => (process.once("exit", () => engineGone() && removeRecord()), {}));
  removeFinished(dir!, path.basename(state.file));
  const early = state.local.splice(0);
  if (early.length && !append(early)) return undefined;
  return state.file;
}

/**
 * A directory only this user can write, in Pulumi's home (PULUMI_HOME, else ~/.pulumi), not in a
 * shared temp directory where anyone can create a file under a name they can guess; or undefined:
 * then records stay in each process.
 */
function privateDir(): string | undefined {
  const uid = process.getuid?.();
  const dir = path.join(process.env.PULUMI_HOME || path.join(os.homedir(), ".pulumi"), "accessctl-runs");
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    return warnOnce(e);
  }
  try {
    const st = fs.lstatSync(dir);
    if (!st.isDirectory() || (uid !== undefined && (st.uid !== uid || (st.mode & 0o077) !== 0)))
      return warnOnce(plainError(`${dir} is not a directory only this user can write`));
  } catch (e) {
    return warnOnce(e);
  }
  return dir;
}

function warnOnce(e: unknown): undefined {
  const state = cache();
  if (!state.unshared)
    toStderr(
      `accessctl: the provider processes of this command cannot share what they recorded (${(e as Error).message}); ` +
        `a set's update writes nothing\n`,
    );
  state.unshared ??= (e as Error).message;
  return undefined;
}

/**
 * Why what a preview recorded cannot reach the update of this command (the record's directory is not
 * private, or a write to it failed), or undefined. A set then writes nothing: it fails safe, not open.
 */
export function recordUnshared(): string | undefined {
  if (!engineAddress()) return undefined; // no engine (tests, the program process): one process, nothing to share
  runFile();
  return cache().unshared;
}

/** Removes the files of `pulumi` commands that have ended (the process gone, or its PID another process's). */
function removeFinished(dir: string, mine: string): void {
  try {
    for (const name of fs.readdirSync(dir)) {
      const [, pid, started] = /^run-(\d+)-(\w+)\.jsonl$/.exec(name) ?? [];
      if (name === mine || !pid) continue;
      if (!alive(Number(pid), started)) fs.rmSync(path.join(dir, name), { force: true });
    }
  } catch {
    // another process removed it first: nothing to do
  }
}

/** Whether the process `pid` that started at `started` (its /proc start time) still runs. */
function alive(pid: number, started: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(")").pop()!.trim().split(" ")[19] === started;
  } catch {
    return true; // no /proc: the PID is all there is to go by
  }
}

/** The command has ended (its engine is gone): its record is of no more use. */
export function removeRecord(): void {
  const file = cache().file;
  if (file) fs.rmSync(file, { force: true });
}

/** Appends lines to the file (small appends are atomic); false, and records kept here, if it cannot. */
function append(lines: Line[]): boolean {
  const state = cache();
  try {
    fs.appendFileSync(state.file!, lines.map((l) => `${JSON.stringify(l)}\n`).join(""), { mode: 0o600 });
    return true;
  } catch (e) {
    warnOnce(e);
    state.file = null;
    state.local.push(...state.lines, ...lines); // what was read from the file, and what could not be added
    return false;
  }
}

/** The engine this process's records are tagged with. */
export function recordEngine(): string {
  return engineAddress() ?? "local";
}

/** Adds `value` to the list `list` of this command. */
export function addRecord<T = string>(list: string, value: T): void {
  const line: Line = [list, recordEngine(), value];
  if (!runFile() || !append([line])) cache().local.push(line);
}

/** The list `list` of this command, in the order written, by every process of it. */
export function records<T = string>(list: string): RunRecord<T>[] {
  return all()
    .filter(([l]) => l === list)
    .map(([, engine, value]) => ({ engine, value: value as T }));
}

/**
 * The values of the list `list` written by the processes of this engine: one preview, or one update
 * (the processes one engine starts: the dynamic host, the plugin, two versions of it).
 */
export function engineRecords(list: string): string[] {
  const me = recordEngine();
  return records(list)
    .filter((r) => r.engine === me)
    .map((r) => r.value);
}

function all(): Line[] {
  const state = cache();
  const file = runFile();
  if (!file) return state.local;
  let size: number;
  try {
    size = fs.statSync(file).size;
  } catch {
    return []; // nothing recorded yet
  }
  if (size !== state.size) {
    // Read again only when it grew (a check of every rule of a set asks many times).
    const text = fs.readFileSync(file, "utf8");
    state.lines = text.split("\n").flatMap((l) => {
      try {
        const line: unknown = JSON.parse(l);
        return isLine(line) ? [line] : [];
      } catch {
        return []; // the line another process is writing now (or the empty end)
      }
    });
    state.size = Buffer.byteLength(text);
  }
  return state.lines;
}

/**
 * A policy's rules as a walk of one engine of this command
 * found them: ids only (what the record may hold: ownership.md).
 */
interface Listed {
  policy: string;
  ids: string[];
}

/**
 * Records the ids of a policy's rules as this engine's walk found them (a preview's: the update of
 * this command reads them again by id, not by a walk).
 */
export function noteListed(policy: string, ids: string[]): void {
  addRecord<Listed>("listed", { policy, ids });
}

/**
 * The ids of a policy's rules as the last walk of another engine
 * of this command (the preview's) found them; or undefined.
 */
export function listedElsewhere(policy: string): string[] | undefined {
  const me = recordEngine();
  return records<Listed>("listed")
    .filter((r) => r.engine !== me && r.value?.policy === policy)
    .pop()?.value.ids;
}

/** A policy's rules as a walk of one engine of this command listed them: ids, CIDRs, actions (the record may hold). */
interface RulesListed {
  policy: string;
  rules: { id: string; cidr: string; action: "allow" | "deny" }[];
}

/**
 * Records a policy's rules as this engine's walk listed them (a refresh's: the preview after it, in
 * another engine, judges a rule beside them).
 */
export function noteRulesListed(policy: string, rules: RulesListed["rules"]): void {
  addRecord<RulesListed>("rules-listed", { policy, rules });
}

/** A policy's rules as the last walk of an engine of this command listed them; or undefined: none did. */
export function rulesListedInCommand(policy: string): RulesListed["rules"] | undefined {
  return records<RulesListed>("rules-listed")
    .filter((r) => r.value?.policy === policy)
    .pop()?.value.rules;
}
