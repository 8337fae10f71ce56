// What the provider processes of one `pulumi` command have recorded, shared between them. One command
// starts several: the preview's engine and the update's each start their own plugins, and a program
// may use the dynamic host and the plugin, or two versions of the plugin (an upgrade), at once. What
// one of them knows (a set took over a policy; the rules a preview showed) must hold in the others:
// a rule resource deleted by one process must not take a rule from the set another one just created.
// So records go to a file named after the `pulumi` process (its PID and start time: unique while the
// machine runs), in a directory of Pulumi's home only this user can write, one JSON line each, appended (small appends
// are atomic), tagged with the engine (its address) that wrote them: what one engine checked (claims)
// holds in that engine only; what a preview showed holds for the update after it. Without an engine
// (tests), or where the start time or the directory is not to be had, they stay in each process.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { engineAddress, engineProcess, toStderr } from "./engine";
import { plainError } from "./errors";
import { processState } from "./state";

export interface RunRecord<T = string> {
  /** The engine (its address) of the process that wrote it: the preview's, or the update's. */
  engine: string;
  value: T;
}

/** [list, engine, value]: a value is a string or a JSON value of the list's own type. */
type Line = [string, string, unknown];
const isLine = (l: unknown): l is Line => Array.isArray(l) && l.length === 3 && typeof l[0] === "string" && typeof l[1] === "string";

interface Cache {
  file?: string | null;
  size: number;
  lines: Line[];
  local: Line[];
  warned?: boolean;
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
    if (!st.isDirectory() || (uid !== undefined && (st.uid !== uid || (st.mode & 0o077) !== 0))) return warnOnce(plainError(`${dir} is not a directory only this user can write`));
  } catch (e) {
    return warnOnce(e);
  }
  return dir;
}

function warnOnce(e: unknown): undefined {
  const state = cache();
  if (!state.warned) toStderr(`accessctl: the provider processes of this command cannot share what they recorded (${(e as Error).message}); each holds to its own\n`);
  state.warned = true;
  return undefined;
}

/** Removes the files of `pulumi` commands that have ended (the process is gone), a day after. */
function removeFinished(dir: string, mine: string): void {
  try {
    for (const name of fs.readdirSync(dir)) {
      const pid = Number(/^run-(\d+)-/.exec(name)?.[1]);
      if (name === mine || !pid) continue;
      const file = path.join(dir, name);
      if (Date.now() - fs.statSync(file).mtimeMs > 24 * 3600_000 && !alive(pid)) fs.rmSync(file, { force: true });
    }
  } catch {
    // another process removed it first: nothing to do
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
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
  return all().filter(([l]) => l === list).map(([, engine, value]) => ({ engine, value: value as T }));
}

/**
 * The values of the list `list` written by the processes of this engine: one preview, or one update
 * (the processes one engine starts: the dynamic host, the plugin, two versions of it).
 */
export function engineRecords(list: string): string[] {
  const me = recordEngine();
  return records(list).filter((r) => r.engine === me).map((r) => r.value);
}

function all(): Line[] {
  const state = cache();
  const file = runFile();
  if (!file) return state.local;
  let size = 0;
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
