// Reads answered from the list endpoints, from one walk of a list per account that every reader of
// the process shares. A refresh reads every object of a stack at once; one GET each costs N
// requests of the account's budget, a walk of the list ⌈N/100⌉. And the API lists every rule of
// the account (no filter by policy): a set's rules are found by walking the whole account, so the
// sets and single rules of one command share one walk rather than walk it each.
// - readObject: an object found in the walk is answered from it; one missing from it is confirmed
//   with its own GET before it is reported gone (the list may be older than a create of this run,
//   or cut short), and that GET's 404 is believed only as http/trust.ts believe404 allows.
// - policyRulesOf: the rules of one IP policy, from a walk that reached the last page, or an error.
// Which walk serves (whichWalk): one with no write of this process since it started, and
// - for reads (a refresh): one in flight or started within MAX_AGE_MS;
// - `fresh` (what a write is planned and checked against): one that started after the operation
//   asking began (a change made before the operation began is seen);
// - `anyAge` (a view that a later walk checks again before anything else is written: a new set's
//   view before its first rule, create.ts): any whole walk of this process.
// Askers share the walk in flight, and their operations' bounds grow with its pages as they wait
// (operation.ts growBound).
// What a walk keeps: the objects its askers asked for (by id, or by policy) when their page was
// read; of every other object, only its id and policy (100,000 rules: a few MB). An object asked
// for after its page went by costs a GET. Limits of a walk: http/pages.ts walkLimits.
// ACCESSCTL_READ_MODE=get reads each object with its own GET (for comparison, or as a way out).
import { IP_POLICY_RULE_ANSWER, IP_POLICY_RULES_PATH, IpPolicyRuleBody } from "../contract/ip-policy-rule";
import { api } from "./http/api";
import { ApiFailure, failure } from "./http/failures";
import { checkAnswer, RequestOptions } from "./http/transport";
import { proveKey, underWay } from "./http/trust";
import { ConfigSource, connection } from "./config";
import { stopped, stopSignal } from "./engine";
import { accountOf } from "./limiter";
import { listPages, walkLimits } from "./http/pages";
import { boundHint, boundText, currentOperation, growBound, inOperation, Operation } from "./operation";
import { processState } from "./state";

// A refresh issues its reads in one burst; a read that comes later than this after the walk began
// (and after it ended) gets a fresh walk, however often reads come.
const MAX_AGE_MS = 10_000;
// A walk keeps every object it reads up to this many (about 5 MB of rules), then only what was asked for.
const KEEP_ALL = 10_000;

/** What one asker wants kept of a walk: an object by id, or every object of a group (a policy's rules). */
type Interest = { id: string } | { group: string };

interface Walk {
  generation: number;
  started: number;
  what: string;
  /** Ids and groups asked for: their objects are kept from the next page on. */
  wantIds: Record<string, true>;
  wantGroups: Record<string, true>;
  /**
   * id → object, for the objects asked for, and every object while there
   * are fewer than KEEP_ALL (ids come from the server: no prototype).
   */
  kept: Record<string, unknown>;
  keptCount: number;
  /** id → the key its page was read with (http/transport.ts ApiResponse.keyUsed), for kept objects. */
  keyOf: Record<string, string | undefined>;
  /** group → the key a page holding an object of it was read with: that key sees the group (a policy's rules). */
  groupKey: Record<string, string | undefined>;
  /** id → group, for every object read but not kept (nobody had asked for it yet, or it lacked a field). */
  passed: Record<string, string>;
  pages: number;
  /** The operations waiting for it: each page read grows their bounds (operation.ts growBound). */
  waiters: Operation[];
  /** Resolves when the walk ends, however it ends. */
  done: Promise<void>;
  finished?: boolean;
  /** The walk reached the last page. */
  complete?: boolean;
  /** Why it ended early: `partial` (a page cap, its time) or another failure. */
  error?: ApiFailure;
}

interface Cache {
  generation: number; // bumped by every write of this process
  /**
   * The generation of the last write of each group (a policy's
   * rules); "": of a write of no group named (of every group).
   */
  wrote: Record<string, number>;
  walks: Record<string, Walk>;
}

function cache(): Cache {
  return processState<Cache>("list-reads", () => ({ generation: 0, wrote: {}, walks: {} }));
}

/**
 * Called after every create, update or delete: walks started before it no longer tell the truth, of
 * the group written (a policy's rules: a set's write), or of every object when no group is named.
 */
export function listsChanged(group?: unknown): void {
  const state = cache();
  state.generation++;
  state.wrote[typeof group === "string" ? group : ""] = state.generation;
}

/**
 * Pure: whether a write since the walk started (its generation)
 * makes it stale for an asker of `group` (none: any object).
 */
function writtenSince(walkGeneration: number, state: Pick<Cache, "generation" | "wrote">, group?: string): boolean {
  if (group === undefined) return state.generation !== walkGeneration;
  return (state.wrote[""] ?? 0) > walkGeneration || (state.wrote[group] ?? 0) > walkGeneration;
}

export interface ListRead {
  /** The list path ("/ip_policy_rules") and the field holding its items. */
  list: string;
  field: string;
  /** The object's own path, for the GET. */
  path: string;
  what: string;
  expect: NonNullable<RequestOptions["expect"]>;
  source?: ConfigSource;
  /** The walk's time budget (http/pages.ts walkLimits); tests set less. */
  walkBudgetMs?: number;
  /**
   * The object's group (a rule's policy): an object of it in the list shows the key sees the
   * account that holds the object, so that its GET's 404 can be believed (http/trust.ts).
   */
  group?: string;
}

/**
 * The group an object of a list belongs to: a rule's policy (a policy is of one account). A key has
 * none: its owner, a user, may be a member of several accounts, so another key of the same owner in a
 * list proves nothing of the account.
 */
function groupOf(list: string, item: unknown): string {
  const group =
    list === IP_POLICY_RULES_PATH ? (item as { ip_policy?: { id?: unknown } } | null)?.ip_policy?.id : undefined;
  return typeof group === "string" ? group : "";
}

/** The object with this id, or undefined when it is gone (a believed 404 to its own GET). */
export async function readObject<T>(id: string, r: ListRead): Promise<T | undefined> {
  if (process.env.ACCESSCTL_READ_MODE !== "get") {
    // a read under way until its walk is done: see http/trust.ts believe404
    const walk = await underWay(() => sharedWalk(r, { id }, "read"));
    // A walk that failed (not merely stopped early) is not taken at its word: every read does its GET.
    const listed = walk.error && !walk.error.partial ? undefined : walk.kept[id];
    if (listed !== undefined) {
      proveKey(walk.keyOf[id]); // the key listed an object this stack holds: it is of that account
      return listed as T;
    }
    if (r.group) proveKey(walk.groupKey[r.group]); // it lists the object's siblings: it sees that account
  }
  const res = await api<T>("GET", r.path, { what: r.what, allow404: true, expect: r.expect, source: r.source });
  return res.status === 404 ? undefined : res.body;
}

/**
 * The rules of one IP policy (their bodies), from the walk of the account's rules shared by every
 * reader of the process. `fresh`: from a walk that started after the calling operation began and
 * after this process's last write (what a write is planned and checked against). Throws unless the
 * walk reached the last page: a missing page is never taken for missing rules.
 */
export async function policyRulesOf(
  source: ConfigSource | undefined,
  ipPolicyId: string,
  options: { fresh?: boolean; anyAge?: boolean; what: string },
): Promise<IpPolicyRuleBody[]> {
  const r = rulesRead(source, options.what);
  const need: Need = options.anyAge ? "anyAge" : options.fresh ? "fresh" : "read";
  const walk = await sharedWalk(r, { group: ipPolicyId }, need);
  if (!walk.complete) {
    const cause = walk.error ?? failure("the walk of the list ended without an answer", {});
    throw failure(`${options.what}: ${cause.message}`, {
      status: cause.status,
      errorCode: cause.errorCode,
      partial: cause.partial,
    });
  }
  proveKey(walk.groupKey[ipPolicyId]); // the key lists the policy's rules: it sees the account that holds the policy
  const rules: IpPolicyRuleBody[] = [];
  for (const item of Object.values(walk.kept)) {
    if (groupOf(r.list, item) === ipPolicyId) rules.push(item as IpPolicyRuleBody);
  }
  // Read before anyone asked for this policy (or without a field): each its own GET.
  for (const [id, group] of Object.entries(walk.passed)) {
    if (group !== ipPolicyId && group !== "") continue;
    const res = await api<IpPolicyRuleBody>("GET", `${IP_POLICY_RULES_PATH}/${encodeURIComponent(id)}`, {
      what: `${options.what}: read IP policy rule ${id}`,
      allow404: true,
      expect: IP_POLICY_RULE_ANSWER,
      source,
    });
    if (res.status !== 404 && res.body.ip_policy.id === ipPolicyId) rules.push(res.body);
  }
  return rules;
}

const rulesRead = (source: ConfigSource | undefined, what: string): ListRead => ({
  list: IP_POLICY_RULES_PATH,
  field: "ip_policy_rules",
  path: IP_POLICY_RULES_PATH,
  what,
  expect: IP_POLICY_RULE_ANSWER,
  source,
});

/**
 * Whether this process has a whole walk of the account's rules (or one in flight) with no write to the
 * policy since: a new set's view before its first rule then needs no walk of its own.
 */
export function rulesListedSinceWrite(source: ConfigSource | undefined, ipPolicyId?: string): boolean {
  const state = cache();
  const walk = state.walks[`${accountOf(connection(source))} ${IP_POLICY_RULES_PATH}`];
  return !!walk && whichWalk(walk, state, ipPolicyId, "anyAge", Date.now(), currentOperation()?.started);
}

/**
 * What an asker takes a walk for: a read of a refresh, what a
 * write is checked against, a view a later walk checks again.
 */
type Need = "read" | "fresh" | "anyAge";

/** Pure: whether `walk` serves an asker with this need now (see the top of this file). */
function whichWalk(
  walk: Pick<Walk, "generation" | "started" | "finished" | "complete">,
  state: Pick<Cache, "generation" | "wrote">,
  group: string | undefined,
  need: Need,
  now: number,
  opStarted = now,
): boolean {
  if (writtenSince(walk.generation, state, group)) return false; // a write of this process since it started
  // A walk that ended early still serves reads (they make their GETs), not a listing.
  if (need === "read") return !walk.finished || walk.started >= now - MAX_AGE_MS;
  if (need === "fresh") return walk.started >= opStarted && !(walk.finished && !walk.complete);
  return !walk.finished || !!walk.complete;
}

/**
 * The walk that serves this asker (joined, or started), once it
 * has ended; the asker's interest is kept from the next page on.
 */
async function sharedWalk(r: ListRead, interest: Interest, need: Need): Promise<Walk> {
  const state = cache();
  const key = `${accountOf(connection(r.source))} ${r.list}`;
  let walk = state.walks[key];
  const group = "group" in interest ? interest.group : undefined;
  if (!walk || !whichWalk(walk, state, group, need, Date.now(), currentOperation()?.started)) {
    walk = startWalk(r, state.generation);
    state.walks[key] = walk;
  }
  if ("id" in interest) walk!.wantIds[interest.id] = true;
  else walk!.wantGroups[interest.group] = true;
  await untilEnded(walk!, r.what);
  return walk!;
}

/** A walk of its own time (not its first asker's operation, which may end first): see http/pages.ts walkLimits. */
function startWalk(r: ListRead, generation: number): Walk {
  const walk: Walk = {
    generation,
    started: Date.now(),
    what: `list ${r.field === "keys" ? "API keys" : "IP policy rules"}`,
    wantIds: {},
    wantGroups: {},
    kept: {},
    keptCount: 0,
    keyOf: {},
    groupKey: {},
    passed: {},
    pages: 0,
    waiters: [],
    done: Promise.resolve(),
  };
  walk.done = inOperation(() => pagesOf(walk, r), r.walkBudgetMs)
    .then(
      () => void (walk.complete = true),
      (e) => void (walk.error = e as ApiFailure),
    )
    .finally(() => void (walk.finished = true));
  return walk;
}

async function pagesOf(walk: Walk, r: ListRead): Promise<void> {
  const pageMs = r.walkBudgetMs === undefined ? walkLimits(r.source).pageMs : 0; // a budget given does not grow
  for await (const page of listPages<Record<string, unknown>>(r.list, r.field, walk.what, r.source, {
    budgetMs: r.walkBudgetMs,
    unseen: true,
  })) {
    walk.pages++;
    for (const op of walk.waiters) growBound(op, pageMs, 1); // waiting for a page is the asker's work too
    for (const item of page.items) {
      const id = (item as { id?: unknown } | null)?.id;
      if (typeof id !== "string") continue;
      const group = groupOf(r.list, item);
      let whole = true;
      try {
        checkAnswer(item, r.expect, r.what);
      } catch {
        whole = false; // its GET tells
      }
      if (group && walk.groupKey[group] === undefined) walk.groupKey[group] = page.keyUsed;
      // Asked for, or while the walk is small: the reads of a refresh join it as it goes, and one that
      // asks after its object's page went by would cost a GET.
      if (whole && (walk.wantIds[id] || (group && walk.wantGroups[group]) || walk.keptCount < KEEP_ALL)) {
        walk.keptCount++;
        walk.kept[id] = item;
        walk.keyOf[id] = page.keyUsed;
      } else walk.passed[id] = group;
    }
  }
}

/**
 * Waits for the walk to end, but no longer than the asker's operation may go on (its bound grows with
 * the pages read meanwhile), nor once requests stop.
 */
function untilEnded(walk: Walk, what: string): Promise<void> {
  const op = currentOperation();
  const signal = stopSignal();
  if (op && !walk.waiters.includes(op)) walk.waiters.push(op);
  return new Promise<void>((resolve, reject) => {
    // (each name declared before a closure uses it: Pulumi's closure serializer needs that)
    let timer: ReturnType<typeof setTimeout> | undefined = undefined;
    let onStop: () => void = () => {};
    let onTime: () => void = () => {};
    const settle = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onStop);
      if (op) walk.waiters = walk.waiters.filter((o) => o !== op);
    };
    onStop = () => {
      settle();
      reject(failure(`${what}: ${stopped() ?? "stopped"}`, {}));
    };
    onTime = () => {
      if (op!.deadline > Date.now()) return void (timer = setTimeout(onTime, op!.deadline - Date.now())); // it grew
      settle();
      const spent = `${boundText(op!)} is spent; ${boundHint(false)}`;
      reject(failure(`${what}: gave up waiting for the list (${walk.pages} pages read): ${spent}`, {}));
    };
    if (signal.aborted) return onStop();
    if (op) timer = setTimeout(onTime, Math.max(0, op.deadline - Date.now()));
    signal.addEventListener("abort", onStop, { once: true });
    walk.done.then(() => {
      settle();
      resolve();
    });
  });
}

/**
 * The rules of one IP policy as the last walk of this process listed them, with no request (what a
 * rule's preview says it opens is judged against them): undefined when no walk of the account reached
 * its last page since this process last wrote, or when it passed over a rule of the policy without keeping it.
 */
export function lastListed(source: ConfigSource | undefined, ipPolicyId: string): IpPolicyRuleBody[] | undefined {
  let walk: Walk | undefined;
  try {
    walk = cache().walks[`${accountOf(connection(source))} ${IP_POLICY_RULES_PATH}`];
  } catch {
    return undefined; // no connection configured: nothing was listed
  }
  if (!walk?.complete || walk.generation !== cache().generation) return undefined;
  if (Object.values(walk.passed).some((group) => group === ipPolicyId || group === "")) return undefined;
  const rules = Object.values(walk.kept).filter((item) => groupOf(IP_POLICY_RULES_PATH, item) === ipPolicyId);
  return rules as IpPolicyRuleBody[];
}
