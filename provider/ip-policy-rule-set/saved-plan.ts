// The plan that travels, signed. Each job of a reviewed pipeline says its role (config.ts planRole;
// nothing is guessed from the command line): with ACCESSCTL_PLAN_SAVE=<file>, a `pulumi preview`
// writes there, per set, what it showed and what it was computed from, and the job writes nothing
// else (operation.ts refuses its creates, updates and deletes); with ACCESSCTL_PLAN_HOLD=<file>, a
// `pulumi up` holds each set to it and refuses, before any write, a file made for another stack,
// another program or an older state, as Terraform refuses a stale saved plan (a `pulumi preview`
// with it checks the same, and neither ever writes it). The file is signed as a whole with a key
// derived from the pipeline's secret and read strictly (plan-file.ts): an edit, a forged entry or
// another key is refused before anything else is read from it. The file is this user's only (0600),
// and holds no text of a rule, only digests bound to their rule.
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { PLAN_HOLD, PLAN_KEY, PLAN_SAVE, planRole, planSecret } from "../config";
import { engineProcess } from "../engine";
import { plainError } from "../errors";
import { holdRefusesDeleteWords } from "../messages";
import { ownerOf } from "../ownership";
import { sleep } from "../http/outcomes";
import { listed } from "./apply";
import {
  accessMatches,
  Binding,
  bindDeclared,
  bindRule,
  bindSet,
  FileSet,
  newPlan,
  PlanFile,
  planKeys,
  PlanKeys,
} from "./plan-file";
import { setDeleteUnderRole } from "./plan-file";
import { SetSeen, signed, unbindSteps, verify } from "./plan-file";
import { RuleSeen } from "./promise";

/** What a set was declared as, in a plan's terms (texts as a keyed digest). */
export type DeclaredSeen = Omit<RuleSeen, "id">;

/** What a preview saved of one set (in the terms of this process's promise): see plan-file.ts SetSeen. */
export type SavedSet = SetSeen;

/**
 * A set as an operation sees it now: its policy, the rules recorded and declared; whether this command refreshed it.
 */
export interface SetNow {
  policy: string;
  from: RuleSeen[];
  declared: DeclaredSeen[];
  refreshed: boolean;
}

const LOCK_WAIT_MS = 10_000;
const AGAIN =
  "Run the review's `pulumi preview` (with ACCESSCTL_PLAN_SAVE) again, have that reviewed, then deploy with its file.";
const derived = (setting: string) =>
  `derived from the API key in ${setting}, as no ${PLAN_KEY} is set: this job's API key is not the one of the job ` +
  `that saved it`;
const MAX_FILE_BYTES = 64 * 1024 * 1024;

/** `project/stack` of a URN (ownership.ts ownerOf). */
const stackOf = (urn: string) => ownerOf(urn).stack ?? urn;

/** The keys of this job's secret (config.ts planSecret), and where the secret came from. */
function signing(): { keys: PlanKeys; setting: string; fromApiKey: boolean } {
  const { secret, setting, fromApiKey } = planSecret();
  return { keys: planKeys(secret), setting, fromApiKey };
}

/** A preview saving a plan (ACCESSCTL_PLAN_SAVE): what it showed of the set `urn`, and what it was computed from. */
export async function savePlan(urn: string, set: SavedSet, refreshed: boolean): Promise<void> {
  const role = planRole();
  if (role?.role !== "save") return;
  const file = path.resolve(role.path);
  const { keys } = signing();
  const me = engineProcess();
  const command = `${me?.pid ?? ""}-${me?.started ?? ""}`;
  await locked(file, () => {
    const prior = readText(file);
    const found = prior === undefined ? undefined : verify(keys, prior);
    // This command's file goes on; any other (an earlier preview's, another key's, not a plan) is replaced.
    const mine = found && "plan" in found && found.plan.command === command ? found.plan : undefined;
    const plan: Omit<PlanFile, "mac"> = mine ? withoutMac(mine) : newPlan(keys, command);
    const policy = typeof set.policy === "string" && /^[A-Za-z0-9_]{1,100}$/.test(set.policy) ? set.policy : "";
    plan.sets[urn] = bindSet({ keys, nonce: plan.nonce, policy }, { ...set, policy }, refreshed);
    plan.written = new Date().toISOString();
    // A new file of a random name, made here (O_EXCL: a file or link planted at that name fails it).
    const temp = `${file}.${randomBytes(8).toString("hex")}.tmp`;
    const fd = fs.openSync(temp, "wx", 0o600);
    try {
      fs.writeFileSync(fd, signed(keys, plan));
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temp, file);
  });
}

function withoutMac(plan: PlanFile): Omit<PlanFile, "mac"> {
  const { mac: _mac, ...body } = plan;
  return body;
}

/** A set's Delete, before its first request: refused in a job holding to a reviewed plan (no plan shows one). */
export function refuseDeleteWhenHolding(what: string): void {
  const role = planRole();
  if (setDeleteUnderRole(role?.role).kind === "delete" || !role) return;
  throw plainError(holdRefusesDeleteWords(what, role.setting, path.resolve(role.path)));
}

/**
 * An operation holding to a reviewed plan (ACCESSCTL_PLAN_HOLD): what the saved preview showed of
 * the set `urn`, in this process's terms, checked against what it was computed from (undefined: no
 * such role). Throws, before any write, when the file is not one this job's key signed as it is, or
 * was made for another stack, another program or an older state.
 */
export function savedPlanFor(urn: string | undefined, now: SetNow, what: string): SavedSet | undefined {
  const role = planRole();
  if (role?.role !== "hold") return undefined;
  const file = path.resolve(role.path);
  const refuse = (why: string, todo = AGAIN) =>
    plainError(`${what}: ${PLAN_HOLD} (${file}) ${why}; nothing was changed. ${todo}`);
  const { plan, keys } = verified(file, refuse);
  const saved = urn ? plan.sets[urn] : undefined;
  if (!saved) {
    const stacks = [...new Set(Object.keys(plan.sets).map(stackOf))];
    const mine = urn ? stackOf(urn) : "this stack";
    if (stacks.includes(mine)) throw refuse("holds no plan for this set: its preview did not show it");
    throw refuse(`was made for ${stacks.length ? `stack ${stacks.join(", ")}` : "no stack"}, not ${mine}`);
  }
  if (!saved.known) {
    throw refuse(
      "holds a plan its preview did not know: the set's rules, or a value of one, depended on other resources then, " +
        "and a reviewed plan holds only values its reviewers saw",
      "Make the rules known at preview (values that do not wait for other resources), or deploy this change without " +
        "a reviewed plan.",
    );
  }
  // Signed by this key, and yet saying of access what its own rules do not: no file this provider wrote.
  if (!accessMatches(saved)) {
    throw refuse("is not a plan file of this provider (its access is not what its rules open and close)");
  }
  if (saved.policy !== now.policy)
    throw refuse(`was made for another program: its preview's set was on ${saved.policy}, not ${now.policy}`);
  const b: Binding = { keys, nonce: plan.nonce, policy: now.policy };
  const program = differences(
    saved.declared,
    now.declared.map((d) => bindDeclared(b, d)),
    (r) => `${r.cidr} ${r.action}`,
  );
  if (program.length) {
    throw refuse(
      `was made for another program: the rules declared now differ from those of its preview (${listed(program)})`,
    );
  }
  const state = differences(
    saved.from,
    now.from.map((r) => bindRule(b, r)),
    (r) => `${r.cidr} ${r.action} (${r.id})`,
  );
  if (state.length) {
    throw refuse(
      `was made for an older state: the rules this stack records changed since its preview (${listed(state)})` +
        `${refreshHint(saved, now)}`,
    );
  }
  const shown = { steps: unbindSteps(b, saved.steps, now) };
  const takeover = saved.takesOver ? { takeover: saved.taken } : {};
  return { policy: saved.policy, from: now.from, declared: now.declared, shown, access: saved.access, ...takeover };
}

/**
 * Why the states differ where a refresh explains it: the reviewed
 * preview refreshed and this command did not, or the reverse.
 */
function refreshHint(saved: FileSet, now: SetNow): string {
  if (saved.refreshed && !now.refreshed) {
    return (
      ". Its preview refreshed (`pulumi preview --refresh`) and found the policy changed since the state recorded " +
      "it; " +
      "this command did not refresh. Deploy it as `pulumi up --refresh`, which holds to the same plan"
    );
  }
  if (!saved.refreshed && now.refreshed) {
    return (
      ". This command refreshed and its preview did not: review with `pulumi preview --refresh`, and deploy " +
      "with `pulumi up --refresh`"
    );
  }
  return "";
}

/** The plan the file holds, signed with this job's key and unchanged since; else throws `refuse`'s error naming why. */
function verified(file: string, refuse: (why: string, todo?: string) => Error): { plan: PlanFile; keys: PlanKeys } {
  let text: string | undefined;
  try {
    text = readText(file);
  } catch (e) {
    throw refuse(`cannot be read (${(e as Error).message})`);
  }
  if (text === undefined) throw refuse(`holds no plan (no \`pulumi preview\` with ${PLAN_SAVE} wrote it)`);
  const { keys, setting, fromApiKey } = signing();
  const found = verify(keys, text);
  if ("plan" in found) return { plan: found.plan, keys };
  switch (found.refused) {
    case "another key":
      throw refuse(
        `was signed with another key than this job's (${fromApiKey ? derived(setting) : setting})`,
        `Set ${PLAN_KEY} (or the secret config accessctl:planKey) to one secret in the job that saves the plan and ` +
          `in this one, ` +
          "then run the review's `pulumi preview` again.",
      );
    case "changed":
      throw refuse("was changed after its preview wrote it: its signature does not verify");
    case "older":
      throw refuse(`was written by an older version of this provider, ${found.detail}`);
    default:
      throw refuse(`is not a plan file of this provider (${found.detail})`);
  }
}

/** What tells two lists of rules apart, by CIDR: `+ 10.7.0.0/16 allow`, `- …`, `~ … (texts)`. */
function differences<T extends DeclaredSeen>(then: T[], now: T[], name: (r: T) => string): string[] {
  const key = (r: T) => `${r.cidr} ${(r as { id?: string }).id ?? ""}`;
  const before: Record<string, T> = {};
  for (const r of then) before[key(r)] = r;
  const after: Record<string, T> = {};
  for (const r of now) after[key(r)] = r;
  const was = (r: T) => before[key(r)];
  return [
    ...now.filter((r) => !was(r)).map((r) => `+ ${name(r)}`),
    ...then.filter((r) => !after[key(r)]).map((r) => `- ${name(r)}`),
    ...now
      .filter((r) => was(r) && (was(r).action !== r.action || was(r).texts !== r.texts))
      .map((r) => `~ ${name(r)} (${was(r).action !== r.action ? `was ${was(r).action}` : "texts"})`),
  ];
}

/**
 * The file's text, or undefined when there is none; at most MAX_FILE_BYTES, and only of a regular file
 * (opened without waiting: a FIFO or a device put at the path would hold the process or never end).
 */
function readText(file: string): string | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw plainError("is not a regular file");
    if (stat.size > MAX_FILE_BYTES)
      throw plainError(`it holds ${stat.size} bytes, more than a plan file's ${MAX_FILE_BYTES}`);
    const buffer = Buffer.alloc(stat.size + 1); // one byte more: a file that grows while read is seen
    let length = 0;
    for (let n = 1; n > 0 && length < buffer.length; length += n)
      n = fs.readSync(fd, buffer, length, buffer.length - length, null);
    if (length > stat.size) throw plainError("it changed while it was read");
    return buffer.subarray(0, length).toString("utf8");
  } finally {
    fs.closeSync(fd);
  }
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
