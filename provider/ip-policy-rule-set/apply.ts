// Carrying out a set's steps: CONCURRENCY calls at once, in the phases of plan.ts phase() (each
// started only when the one before has succeeded, so that a run stopped anywhere, by a failure or a
// kill, leaves every address with the verdict it had before the run or the one it has after it),
// with progress shown live under the resource, and, on a failure, an error that carries what exists
// now (a partial create or update: the engine records it, and the next `up` finishes the job).
import {
  IP_POLICY_RULE_ANSWER,
  IP_POLICY_RULES_PATH,
  IpPolicyRuleBody,
  IpPolicyRuleCreateBody,
  IpPolicyRuleUpdateBody,
} from "../../contract/ip-policy-rule";
import { ConfigSource, connection, profileSource, teamKeySetting } from "../config";
import { report } from "../engine";
import { plainError } from "../errors";
import { createBody, updateBody } from "../fields";
import { api } from "../http/api";
import { ApiFailure } from "../http/failures";
import { canonicalCidr, FIELDS as RULE_FIELDS, rulePath } from "../ip-policy-rule";
import { limiterState } from "../limiter";
import { collectWithin } from "../memory";
import { listsChanged } from "../list-reads";
import { idBoundMarker, Marker, marked, markerText, ownerOf, ruleIdentity } from "../ownership";
import { DeclaredRule } from "./declared";
import { IpPolicyRuleSetMember, LivePolicy, member as memberOf, named, outputs, policyRules } from "./live";
import { listed, plural } from "./messages";
import { phase, Step } from "./plan";

type Member = IpPolicyRuleSetMember;
const CONCURRENCY = 16; // creates, patches and deletes at once; the account's limiter paces them
const PROGRESS_MS = 2000; // how often a running operation says how far it has got

/** The set a run of steps is for. */
export interface Target {
  ipPolicyId: string;
  profile?: string;
  takeOver?: boolean;
  __provider?: unknown;
  __urn?: string;
  __plan?: unknown;
}

export { listed }; // its home is messages.ts
/**
 * Makes `steps` on the policy whose rules are `current`; returns the rules it holds after. On a
 * failure it starts nothing more, lets the calls under way finish, and throws an error carrying the
 * set's id and outputs that describe the rules that exist now.
 */
export async function apply(
  set: Target,
  current: Member[],
  steps: Step[],
  id: string,
  what: string,
  options: { deleting?: boolean; afterFirst?: AfterFirst } = {},
): Promise<Member[]> {
  const live: Record<string, Member> = {};
  for (const r of current) live[r.id] = r;
  const run = calls(set, live, progress(set.__urn, steps, set.profile));
  const ordered = [...steps].sort((a, b) => phase(a) - phase(b));
  // the first step, then the check, then the rest
  const alone = options.afterFirst && ordered.length ? [ordered.shift()!] : [];
  const failed = (e: unknown) => run.failed.push(e as ApiFailure);
  let stopped: Error | undefined;
  try {
    for (const batch of [alone, ...[0, 1, 2, 3, 4].map((p) => ordered.filter((s) => phase(s) === p))]) {
      await pool(
        batch.map((s) => () => run.step(s)),
        CONCURRENCY,
        failed,
      );
      if (run.failed.length) break;
      if (batch !== alone || !alone.length) continue;
      // A check that fails (its listing) is a failure of the run: what the first step made is in the error's outputs.
      const stop = await options.afterFirst!(Object.values(live), current).catch((e) => void failed(e));
      if (!stop) continue;
      await pool(
        stop.undo.map((s) => () => run.step(s)),
        CONCURRENCY,
        failed,
      );
      stopped = stop.error;
      break;
    }
  } finally {
    run.shown.end();
  }
  if (!run.failed.length && stopped) throw stopped; // undone: nothing of this run's is left
  if (run.failed.length && stopped) run.failed.unshift(stopped as ApiFailure);
  if (!run.failed.length) return Object.values(live);
  throw await failure(set, Object.values(live), run, id, what, !!options.deleting);
}

/**
 * A check between a run's first step and the rest (create.ts: two sets started at once): to stop the run, the steps
 * that undo the first and the error to fail with.
 */
export type AfterFirst = (rules: Member[], before: Member[]) => Promise<{ undo: Step[]; error: Error } | undefined>;

/** The calls of a run, each keeping `live` (id → rule) as it leaves the policy. */
function calls(set: Target, live: Record<string, Member>, shown: ReturnType<typeof progress>) {
  const source = profileSource(set.profile);
  const run = {
    failed: [] as ApiFailure[],
    lostCreates: [] as LostCreate[],
    createsNotFound: 0,
    shown,
    step: async (_s: Step) => {},
  };
  const post = poster(set, live, run, source);
  const patch = async (r: Member, d: DeclaredRule) => {
    const moving = canonicalCidr(r.cidr) !== d.cidr ? ` → ${d.cidr}` : "";
    // what the step changes: texts, or the cidr of a move
    const changes = updateBody<IpPolicyRuleUpdateBody>(RULE_FIELDS, d, r);
    // A marker is signed onto the rule's CIDR: a move without metadata of the program's writes a new one.
    if (moving && !d.metadata) changes.metadata = "";
    const { body } = marked(changes, set.__urn, true, ruleIdentity(set.ipPolicyId, d.cidr, r.action), r.id);
    const done = (
      await api<IpPolicyRuleBody>("PATCH", rulePath(r.id), {
        what: `update IP policy rule ${r.id} (${r.cidr}${moving})`,
        body,
        expect: IP_POLICY_RULE_ANSWER,
        source,
      }).finally(() => listsChanged(set.ipPolicyId))
    ).body;
    live[r.id] = memberOf(done);
    shown.count("updated");
  };
  const del = async (r: Member) => {
    await api("DELETE", rulePath(r.id), {
      what: `delete IP policy rule ${r.id} (${r.cidr})`,
      allow404: true,
      source,
    }).finally(() => listsChanged(set.ipPolicyId));
    delete live[r.id];
    shown.count("deleted");
  };
  run.step = async (s: Step) => {
    if (s.op === "create") return post(s.to);
    if (s.op === "delete") return del(s.rule);
    if (s.op === "flip") return del(s.rule).then(() => post(s.to));
    return patch(s.rule, s.to);
  };
  return run;
}

/**
 * A create's second write: the marker it wrote, signed again onto the rule's id (ownership.ts
 * markerVerdict: only that signature proves; the first is pending for a grace). None without a team key.
 */
export async function bindMarker(set: Target, ruleId: string, marker: Marker, on: readonly string[]) {
  const bound = idBoundMarker(marker, on, ruleId);
  if (!bound) return undefined;
  const what = `sign the marker of IP policy rule ${ruleId} onto its id`;
  const source = profileSource(set.profile);
  const request = { what, body: { metadata: markerText(bound) }, expect: IP_POLICY_RULE_ANSWER, source };
  const done = await api<IpPolicyRuleBody>("PATCH", rulePath(ruleId), request).finally(() =>
    listsChanged(set.ipPolicyId),
  );
  return done.body;
}

/**
 * The set's own rules (by id in its state) whose marker, this very resource's, is not bound to their id
 * (written by an older version, or by a create whose second write failed): each signed onto its id,
 * one PATCH each (none once bound). `skip`: rules this run's steps wrote. Only a rule as `recorded` has
 * it (same CIDR and action): a marker anyone can copy or keep on a rule moved by hand since is no
 * proof, and signing it would make the hand's rule the set's. Returns the rules after; a failure is a
 * partial update whose outputs are the rules as they are (the next up binds the rest).
 */
export async function bindOwnMarkers(
  set: Target,
  rules: Member[],
  live: LivePolicy,
  skip: Set<string>,
  recorded: Member[],
  at: { id: string; what: string },
): Promise<Member[]> {
  const { id, what } = at;
  const me = ownerOf(set.__urn);
  const mine = (m: Marker | undefined) => !!m && m.stack === me.stack && m.resource === me.resource;
  const was = new Map(recorded.map((r) => [r.id, `${canonicalCidr(r.cidr)} ${r.action}`]));
  const asRecorded = (r: Member) => was.get(r.id) === `${canonicalCidr(r.cidr)} ${r.action}`;
  const unbound = (r: Member) => mine(live.markers[r.id]) && live.verdicts[r.id]?.kind !== "verified" && asRecorded(r);
  const todo = rules.filter((r) => !skip.has(r.id) && unbound(r));
  if (!todo.length || !teamKeySetting()) return rules;
  const after: Record<string, Member> = {};
  for (const r of rules) after[r.id] = r;
  const failed: ApiFailure[] = [];
  const bind = async (r: Member) => {
    const on = ruleIdentity(set.ipPolicyId, canonicalCidr(r.cidr), r.action);
    const bound = await bindMarker(set, r.id, live.markers[r.id], on);
    if (bound) after[r.id] = memberOf(bound);
  };
  await pool(
    todo.map((r) => () => bind(r)),
    CONCURRENCY,
    (e) => failed.push(e as ApiFailure),
  );
  if (!failed.length) return Object.values(after);
  const n = `${todo.length} rule${todo.length === 1 ? "" : "s"}`;
  const message =
    `${what}: signing the markers of ${n} onto their ids: ${failed.length} failed, ` +
    `first: ${failed[0].message}. Run \`pulumi up\` again to finish`;
  const properties = { ...outputs(set, Object.values(after), set), __provider: set.__provider };
  throw plainError(message, { id, properties, reasons: [message], status: failed[0].status });
}

/** A run's create: the rule made joins `live`; a create refused with 404 or whose answer was lost is noted. */
function poster(
  set: Target,
  live: Record<string, Member>,
  run: Pick<ReturnType<typeof calls>, "createsNotFound" | "lostCreates" | "shown">,
  source: ConfigSource | undefined,
) {
  return async (d: DeclaredRule) => {
    // known by now: a create is made with known values
    const on = ruleIdentity(set.ipPolicyId, d.cidr, String(d.action));
    const { body, marker } = marked(
      createBody<IpPolicyRuleCreateBody>(RULE_FIELDS, { ...d, ipPolicyId: set.ipPolicyId }),
      set.__urn,
      false,
      on,
    );
    let made: IpPolicyRuleBody;
    try {
      made = (
        await api<IpPolicyRuleBody>("POST", IP_POLICY_RULES_PATH, {
          what: `create IP policy rule ${d.cidr}`,
          body,
          expect: IP_POLICY_RULE_ANSWER,
          source,
        }).finally(() => listsChanged(set.ipPolicyId))
      ).body;
      live[made.id] = memberOf(made);
      run.shown.count("created");
    } catch (e) {
      const err = e as ApiFailure;
      if (err.status === 404) run.createsNotFound++;
      if (err.ambiguous) run.lostCreates.push({ cidr: d.cidr, action: String(d.action), attempt: marker?.attempt });
      throw e;
    }
    // Its marker bound to its id, now known: a failure here leaves the rule recorded, and the next up binds it.
    const bound = marker && (await bindMarker(set, made.id, marker, on));
    if (bound) live[made.id] = memberOf(bound);
  };
}

/** The error of a failed run: what exists now (a lost create's rule too, when proven), and what to do. */
async function failure(
  set: Target,
  rules: Member[],
  run: ReturnType<typeof calls>,
  id: string,
  what: string,
  deleting: boolean,
): Promise<Error> {
  const lost = run.lostCreates.length ? await recoverLostCreates(set, rules, run.lostCreates, what) : "";
  const e = run.failed[0];
  const next =
    run.createsNotFound === run.failed.length
      ? `the account has no IP policy ${set.ipPolicyId}: check ipPolicyId` +
        `${set.profile ? ` and profile "${String(set.profile)}"` : " (and the account the API key is of)"}, then run ` +
        `\`pulumi up\` again`
      : deleting
        ? "run the `pulumi destroy` (or the `pulumi up` that removes the set) again to finish"
        : "run `pulumi up` again to finish";
  const n = run.failed.length;
  const message =
    `${what}: ${plural(n, "call")} failed, first: ${e.message}. ` +
    (deleting
      ? `${plural(rules.length, "rule is", "rules are")} left${lost}; ${next}`
      : `The state records the ${plural(rules.length, "rule")} of the policy this run knows of${lost}; ${next}`);
  // __provider: the host does not add it to an error's properties, and without it the next
  // refresh or destroy of this resource fails ("code must be a string, not undefined").
  const properties = { ...outputs(set, rules, set), __provider: set.__provider };
  return plainError(message, { id, properties, reasons: [message], status: e.status });
}

/**
 * A create whose answer was lost: its CIDR, and the attempt its
 * marker names (none: the program declared the rule's metadata).
 */
interface LostCreate {
  cidr: string;
  action: string;
  attempt?: string;
}

/**
 * A create whose answer was lost may have made its rule: the policy tells. A rule whose marker names
 * the attempt of such a create is this run's, and is added to `rules`; anything else there is named
 * and left out of the state (nothing proves whose it is). Returns what to add to the error's message.
 */
async function recoverLostCreates(
  set: Target,
  rules: Member[],
  lostCreates: LostCreate[],
  what: string,
): Promise<string> {
  try {
    const have: Record<string, true> = {};
    for (const r of rules) have[r.id] = true;
    const live = await policyRules(set.ipPolicyId, set.profile, what, [], true);
    const found = live.rules.filter((r) => !have[r.id]);
    // Its attempt's marker on the very rule it sent (CIDR and action): a marker copied from it by hand onto
    // another rule while the answer was lost takes nothing; nor does an attempt two rules name.
    const sent = (r: Member, a: LostCreate) =>
      live.markers[r.id]?.attempt === a.attempt && canonicalCidr(r.cidr) === a.cidr && r.action === a.action;
    const made = found.filter((r) =>
      lostCreates.some((a) => a.attempt !== undefined && sent(r, a) && found.filter((o) => sent(o, a)).length === 1),
    );
    rules.push(...made);
    const others = found.filter((r) => !made.includes(r));
    return others.length
      ? `; not recorded, as nothing proves a create of this run made them: ${listed(others.map(named))}`
      : "";
  } catch (listing) {
    const cidrs = listed(lostCreates.map((a) => a.cidr));
    return (
      `; the answers to ${plural(lostCreates.length, "create")} were lost (${cidrs}) ` +
      `and listing the policy failed too (${(listing as Error).message}): run \`pulumi refresh\` before the next up`
    );
  }
}

/**
 * How far a running plan has got, shown live under the resource
 * every PROGRESS_MS (and once at the end, if it ran that long).
 */
function progress(urn: string | undefined, steps: Step[], profile: unknown) {
  const n = (...ops: Step["op"][]) => steps.filter((s) => ops.includes(s.op)).length;
  const totals = { created: n("create", "flip"), updated: n("retext", "move"), deleted: n("delete", "flip") };
  const done = { created: 0, updated: 0, deleted: 0 };
  const started = Date.now();
  let last = "";
  const say = () => {
    const counts =
      (Object.keys(totals) as (keyof typeof totals)[])
        .filter((k) => totals[k])
        .map((k) => `${k} ${done[k]} of ${totals[k]}`)
        .join(", ") + pace(profile);
    if (counts !== last) report(urn, counts, { ephemeral: true });
    last = counts;
  };
  const timer = setInterval(say, PROGRESS_MS);
  timer.unref();
  return {
    count: (what: keyof typeof done) => void done[what]++,
    end: () => {
      clearInterval(timer);
      if (Date.now() - started >= PROGRESS_MS) say();
    },
  };
}

/** What a progress line adds while requests wait for the account's rate limit. */
function pace(profile: unknown): string {
  try {
    const conn = connection(profileSource(profile));
    const limit = limiterState(conn);
    if (!limit?.waiting) return "";
    return (
      `; waiting for the service's rate limit (` +
      `${limit.blocked ? "it answered 429 Too Many Requests" : `${conn.maxRequestsPerMinute} requests a minute`})`
    );
  } catch {
    return ""; // the requests themselves say what is wrong with the connection
  }
}

/** Runs tasks, `limit` at once; after the first failure starts no more, and returns when all started ones ended. */
async function pool(tasks: (() => Promise<void>)[], limit: number, onError: (e: unknown) => void): Promise<void> {
  let next = 0;
  let stop = false;
  const worker = async () => {
    while (!stop && next < tasks.length) {
      const task = tasks[next++];
      try {
        await task();
      } catch (e) {
        stop = true;
        onError(e);
      }
      collectWithin(); // what the request left, before it piles up over thousands (memory.ts)
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}
