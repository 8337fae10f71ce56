// The plan that travels: with a plan file set (accessctl:planFile / ACCESSCTL_PLAN_FILE), a `pulumi
// preview` writes there, per set, what it showed and what it was computed from; a later `pulumi up`
// with the same setting holds each set to it, and refuses (before any write) a file made for another
// stack, another program or an older state, as Terraform refuses a stale saved plan. A pipeline
// keeps the file of the preview a reviewer approved as an artifact and hands it to the deploy job.
// Like the run record: the file is this user's only (0600), and holds no text of a rule, only
// digests keyed with the account's API key (promise.ts).
import * as fs from "node:fs";
import * as path from "node:path";
import { planFileSetting } from "../config";
import { engineCommand, engineProcess } from "../engine";
import { plainError } from "../errors";
import { ownerOf } from "../ownership";
import { sleep } from "../http/outcomes";
import { listed } from "./apply";
import { Unknown } from "./declared";
import { RuleSeen, Shown } from "./promise";

/** What a set was declared as, in a plan's terms (texts as a keyed digest). */
export type DeclaredSeen = Omit<RuleSeen, "id">;

/** What a preview saved of one set. */
export interface SavedSet {
  /** The rules the state recorded, as the preview saw them (none for a new set). */
  from: RuleSeen[];
  /** The rules the program declared (none when they were not known at preview: any program then). */
  declared?: DeclaredSeen[];
  /** What it showed. */
  shown: Shown;
  /** A takeover's listing: the ids it showed it would take (UNKNOWN_VALUE: whatever the policy holds then). */
  takeover?: string[] | Unknown;
}

interface SavedPlan {
  version: 1;
  /** The `pulumi preview` command that wrote it (its process and start): a later preview starts the file afresh. */
  command: string;
  written: string;
  sets: Record<string, SavedSet>;
}

const LOCK_WAIT_MS = 10_000;

/** `project/stack` of a URN (ownership.ts ownerOf). */
const stackOf = (urn: string) => ownerOf(urn).stack ?? urn;

/** The plan file in play for this command: written by a `pulumi preview`, held to by a `pulumi up`; undefined otherwise. */
function inPlay(): { path: string; setting: string; mode: "write" | "hold" } | undefined {
  const setting = planFileSetting();
  const command = engineCommand();
  if (!setting || (command !== "preview" && command !== "up")) return undefined;
  return { ...setting, path: path.resolve(setting.path), mode: command === "preview" ? "write" : "hold" };
}

/** A `pulumi preview` with a plan file: what it showed of the set `urn`, and what it was computed from. */
export async function savePlan(urn: string, set: SavedSet): Promise<void> {
  const file = inPlay();
  if (file?.mode !== "write") return;
  const me = engineProcess();
  const command = `${me?.pid}-${me?.started}`;
  await locked(file.path, () => {
    const plan = read(file.path);
    const next: SavedPlan = plan && plan.command === command ? plan : { version: 1, command, written: "", sets: {} };
    next.sets[urn] = set;
    next.written = new Date().toISOString();
    const temp = `${file.path}.${process.pid}.tmp`;
    fs.writeFileSync(temp, `${JSON.stringify(next, null, 1)}\n`, { mode: 0o600 });
    fs.renameSync(temp, file.path);
  });
}

/**
 * A `pulumi up` with a plan file: what the saved preview showed of the set `urn`, checked against
 * what it was computed from (undefined: no plan file in play). Throws, before any write, when the
 * file was made for another stack, another program or an older state.
 */
export function savedPlanFor(urn: string | undefined, now: { from: RuleSeen[]; declared: DeclaredSeen[] }, what: string): SavedSet | undefined {
  const file = inPlay();
  if (file?.mode !== "hold") return undefined;
  const refuse = (why: string) =>
    plainError(`${what}: ${file.setting} (${file.path}) ${why}; nothing was changed. Run \`pulumi preview\` with it again, have that reviewed, then \`pulumi up\`.`);
  let plan: SavedPlan | undefined;
  try {
    plan = read(file.path);
  } catch (e) {
    throw refuse(`cannot be read (${(e as Error).message})`);
  }
  if (!plan) throw refuse("holds no plan (no `pulumi preview` wrote it)");
  const saved = urn ? plan.sets[urn] : undefined;
  if (!saved) {
    const stacks = [...new Set(Object.keys(plan.sets).map(stackOf))];
    const mine = urn ? stackOf(urn) : "this stack";
    throw refuse(stacks.includes(mine) ? `holds no plan for this set: its preview did not show it` : `was made for ${stacks.length ? `stack ${stacks.join(", ")}` : "no stack"}, not ${mine}`);
  }
  const program = saved.declared ? differences(saved.declared, now.declared, (r) => `${r.cidr} ${r.action}`) : [];
  if (program.length) throw refuse(`was made for another program: the rules declared now differ from those of its preview (${listed(program)})`);
  const state = differences(saved.from, now.from, (r) => `${r.cidr} ${r.action} (${r.id})`);
  if (state.length) throw refuse(`was made for an older state: the rules this stack records changed since its preview (${listed(state)})`);
  return saved;
}

/** What tells two lists of rules apart, by CIDR: `+ 10.7.0.0/16 allow`, `- …`, `~ … (texts)`. */
function differences<T extends DeclaredSeen>(then: T[], now: T[], name: (r: T) => string): string[] {
  const key = (r: T) => `${r.cidr} ${(r as { id?: string }).id ?? ""}`;
  const before: Record<string, T> = {};
  for (const r of then) before[key(r)] = r;
  const after: Record<string, T> = {};
  for (const r of now) after[key(r)] = r;
  return [
    ...now.filter((r) => !before[key(r)]).map((r) => `+ ${name(r)}`),
    ...then.filter((r) => !after[key(r)]).map((r) => `- ${name(r)}`),
    ...now.filter((r) => before[key(r)] && JSON.stringify(before[key(r)]) !== JSON.stringify(r)).map((r) => `~ ${name(r)} (${before[key(r)].action !== r.action ? `was ${before[key(r)].action}` : "texts"})`),
  ];
}

function read(file: string): SavedPlan | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  const plan = JSON.parse(text) as SavedPlan;
  if (plan?.version !== 1 || typeof plan.sets !== "object") throw plainError("not a plan file of this provider");
  return plan;
}

/** Runs `write` holding the file's lock (the provider processes of one preview write to one file). */
async function locked(file: string, write: () => void): Promise<void> {
  const lock = `${file}.lock`;
  const since = Date.now();
  for (;;) {
    try {
      fs.closeSync(fs.openSync(lock, "wx", 0o600));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      // A lock older than the wait is one a killed process left.
      if (Date.now() - since > LOCK_WAIT_MS) fs.rmSync(lock, { force: true });
      await sleep(20);
    }
  }
  try {
    write();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}
