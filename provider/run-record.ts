// What the provider processes of one `pulumi` command have recorded, shared between them. One command
// starts several: the preview's engine and the update's each start their own plugins, and a program
// may use the dynamic host and the plugin, or two versions of the plugin (an upgrade), at once. What
// one of them knows (a set took over a policy; the rules a preview showed) must hold in the others:
// a rule resource deleted by one process must not take a rule from the set another one just created.
// So records go to a file named after the `pulumi` process (its PID and start time: unique while the
// machine runs), one JSON line each, appended (small appends are atomic), tagged with the engine
// (its address) that wrote them. Without an engine (tests), they stay in this process.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { engineAddress, engineProcess } from "./engine";
import { processState } from "./state";

export interface RunRecord {
  /** The engine (its address) of the process that wrote it: the preview's, or the update's. */
  engine: string;
  value: string;
}

interface Cache {
  file?: string | null;
  size: number;
  lines: [string, string, string][];
  local: [string, string, string][];
}

function cache(): Cache {
  return processState<Cache>("run-record", () => ({ size: 0, lines: [], local: [] }));
}

/** This command's file, or undefined without an engine. Old files (a day) are removed on the way. */
function runFile(): string | undefined {
  const state = cache();
  if (state.file !== undefined) return state.file ?? undefined;
  const pulumi = engineProcess();
  if (engineAddress() && !pulumi) return undefined; // not watched yet: ask again later
  state.file = pulumi ? path.join(os.tmpdir(), `accessctl-run-${pulumi.pid}-${pulumi.started ?? "0"}.jsonl`) : null;
  if (state.file) removeOld(path.basename(state.file));
  return state.file ?? undefined;
}

function removeOld(mine: string): void {
  try {
    for (const name of fs.readdirSync(os.tmpdir())) {
      if (!name.startsWith("accessctl-run-") || name === mine) continue;
      const file = path.join(os.tmpdir(), name);
      if (Date.now() - fs.statSync(file).mtimeMs > 24 * 3600_000) fs.rmSync(file, { force: true });
    }
  } catch {
    // another process removed it first, or tmp is not ours to list: nothing to do
  }
}

/** Adds `value` to the list `list` of this command. */
export function addRecord(list: string, value: string): void {
  const line: [string, string, string] = [list, engineAddress() ?? "local", value];
  const file = runFile();
  if (file) fs.appendFileSync(file, `${JSON.stringify(line)}\n`, { mode: 0o600 });
  else cache().local.push(line);
}

/** The list `list` of this command, in the order written, by every process of it. */
export function records(list: string): RunRecord[] {
  return all().filter(([l]) => l === list).map(([, engine, value]) => ({ engine, value }));
}

/** Whether `value` is in the list `list` of this command. */
export function recorded(list: string, value: string): boolean {
  return all().some(([l, , v]) => l === list && v === value);
}

function all(): [string, string, string][] {
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
        return [JSON.parse(l) as [string, string, string]];
      } catch {
        return []; // the line another process is writing now (or the empty end)
      }
    });
    state.size = Buffer.byteLength(text);
  }
  return state.lines;
}
