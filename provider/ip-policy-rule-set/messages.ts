// Words of the set: its plan as a preview shows it, and what its decisions (guard.ts, pure) come to,
// rendered for users. Nothing here decides; a test of a decision compares the typed values, and
// set-core's tests of the words compare these.
import { RuleAction } from "../../contract/ip-policy-rule";
import { canonicalCidr } from "../access";
import { describeSpace, plural } from "../messages";
import { claimText, makerName, Marker, pendingText, Unverified } from "../ownership";
import type { ChangedByHand, Decision, HoldReason, LeftUndone, RefreshSaw, Refusal, Teardown, Withheld } from "./guard";
import { DeclaredRule, isUnknownValue, Unknown } from "./declared";
import { IpPolicyRuleSetMember, named } from "./live";
import { changedTexts, Op, Plan, requestsOf, Step, TEXT_FIELDS } from "./plan";

export { plural };
type Member = IpPolicyRuleSetMember;

/** A message under the set: a warning or plain. */
export interface Notice {
  text: string;
  warning?: true;
}

const SHOWN = 5; // items named per list; the rest counted

/** `a, b, c, d, e, … (3 more)` */
export function listed(items: string[]): string {
  return items.slice(0, SHOWN).join(", ") + (items.length > SHOWN ? `, … (${items.length - SHOWN} more)` : "");
}

/** A step in words, as the reports name it: `create 10.0.0.0/8 allow`, `delete 10.5.0.0/16 deny (ipr_…)`. */
export function say(s: Step): string {
  switch (s.op) {
    case "create":
      return `create ${s.to.cidr} ${s.to.action}`;
    case "delete":
      return `delete ${named(s.rule)}`;
    case "flip":
      return `${s.rule.action} → ${s.to.action} ${named(s.rule)}`;
    case "retext":
      return `update ${named(s.rule)}`;
    case "move":
      return `move ${named(s.rule)} → ${s.to.cidr}`;
  }
}

const theirs = (maker: Marker) => `${makerName(maker)}'s: its metadata says so`;
const nowOrDeleted = (now: Member | undefined, secret: boolean) =>
  now ? `now ${named(now)}${texts(now, secret)}` : "deleted";

export function refusalWords(r: Refusal, secret: boolean): string {
  if (r.kind === "changed") return `${named(r.rule)} (${nowOrDeleted(r.now, secret)})`;
  if (r.by === "otherStack") return `${named(r.rule)} (${theirs(r.maker)})`;
  if (r.by === "movedThere") return `${named(r.rule)} (moved there since it was recorded)`;
  return `${named(r.rule)} (not recorded: added since the last refresh, by hand or by another stack)`;
}

export const withheldWords = (w: Withheld) => `${say(w.step)}${w.maker ? ` (${theirs(w.maker)})` : ""}`;
export const leftWords = (l: LeftUndone) => `${say(l.step)}${l.withTheDeny ? " (held back with the deny)" : ""}`;
export const changedWords = (c: ChangedByHand, secret: boolean) =>
  c.now ? `${named(c.rule)}, now ${named(c.now)}${texts(c.now, secret)}` : `${named(c.rule)}, deleted`;

export function becauseWords(b: HoldReason): string {
  switch (b.kind) {
    case "unexpectedAllow":
      return "an allow rule the plan does not delete is there";
    case "denyLost":
      return "a deny rule the plan keeps is gone, moved or turned allow";
    case "opensUnshown":
      return `it would open ${describeSpace(b.opens)}, which the preview did not show opening`;
    case "notComputable":
      return `what it would open cannot be computed (${b.error})`;
  }
}

/** Why an update writes nothing: the policy changed where the plan would touch it. */
export function refusedWords(what: string, refused: Refusal[], secret: boolean): string {
  const rules = listed(refused.map((r) => refusalWords(r, secret)));
  return (
    `${what}: the policy changed since this stack last recorded it, and the plan its preview showed would touch ` +
    `${rules}; nothing was changed. ` +
    "Run `pulumi refresh` (or `pulumi up --refresh`): the preview then shows what `up` will do to them."
  );
}

/** What an update left, and why: each a notice under the set. */
export function decisionNotices(what: string, d: Decision, secret: boolean): Notice[] {
  const out: Notice[] = [];
  const warn = (text: string) => out.push({ text, warning: true });
  if (d.heldBack.length) {
    warn(
      `${what}: held back ${plural(d.heldBack.length, "change")} that would open more than the preview showed, ` +
        `as the policy changed since (${d.heldBecause.map(becauseWords).join("; ")}): ` +
        `${listed(d.heldBack.map(say))}. ` +
        "Run `pulumi up --refresh`: its preview shows what it will do.",
    );
  }
  if (d.adopted.length) {
    out.push({
      text:
        `${what}: took over ${plural(d.adopted.length, "rule")} exactly as declared ` +
        `(ACCESSCTL_ADOPT_EXISTING=1): ${listed(d.adopted.map(named))}`,
    });
  }
  if (d.changedByHand.length) {
    warn(
      `${what}: left ${plural(d.changedByHand.length, "rule")} changed since the last refresh, which the preview ` +
        `of this run did not show: ${listed(d.changedByHand.map((c) => changedWords(c, secret)))}. ` +
        "They are recorded as they are: the next preview shows what `up` will do to them.",
    );
  }
  out.push(...leftUndoneNotices(what, d.leftUndone));
  if (d.withheld.length) {
    warn(
      `${what}: left ${plural(d.withheld.length, "change")} to rules that are not this set's: ` +
        listed(d.withheld.map(withheldWords)),
    );
  }
  const hand = d.strangers.filter((r) => !d.others.some((o) => o.rule === r));
  if (hand.length) {
    warn(
      `${what}: left ${plural(hand.length, "rule")} added since the last refresh (by hand or by another stack), ` +
        `not recorded: ${listed(hand.map(named))}. ` +
        "`pulumi refresh` records them; the preview after it shows what `up` will do to them.",
    );
  }
  out.push(...othersNotices(what, d.others));
  return out;
}

/** Steps the preview of this run did not show, left undone: a warning under the set. */
export function leftUndoneNotices(what: string, left: LeftUndone[]): Notice[] {
  if (!left.length) return [];
  return [
    {
      text:
        `${what}: left undone ${plural(left.length, "change")} the preview of this run did not show ` +
        "(a refresh after it found the policy changed, or a value of the program changed): " +
        `${listed(left.map(leftWords))}. Run \`pulumi up\` again: its preview shows them.`,
      warning: true,
    },
  ];
}

/** A rule left to another stack; `pending`: the end of its marker's grace (not bound to its id yet). */
type Other = { rule: Member; maker: Marker; pending?: string };

/** Whose a rule left to another stack is: `by …`, or `pending: …`. */
const whose = (o: Other) => (o.pending ? `, ${pendingText(o.maker, o.pending)}` : ` by ${makerName(o.maker)}`);

export function othersNotices(what: string, others: Other[]): Notice[] {
  if (!others.length) return [];
  const rules = listed(others.map((o) => `${named(o.rule)}${whose(o)}`));
  return [
    {
      text:
        `${what}: left ${plural(others.length, "rule")} other stacks made, not recorded ` +
        `(their metadata say so): ${rules}`,
      warning: true,
    },
  ];
}

/** Rules whose marker names another stack but does not verify (live.ts byStack `claims`). */
type Claims = { rule: Member; maker: Marker; because?: Unverified }[];

/** What a rule's unverified marker claims, `, claims IpPolicyRule p of stack s/b: not verified (…)`. */
const claimOf = (claims: Claims) => (r: Member) => {
  const c = claims.find((x) => x.rule.id === r.id);
  return c ? `, ${claimText(c.maker, c.because ?? "unsigned")}` : "";
};

/**
 * A refresh's report of what it found (undefined: nothing to say): a short first line (Pulumi's rows
 * show a message's first line, again at each change of the row), then one line per rule, as a plan
 * has them, and what the changes did to the policy's access (`access`).
 */
export function driftWords(ipPolicyId: string, saw: RefreshSaw, secret: boolean, claims: Claims, access: string) {
  const { added, changed, deleted, others } = saw;
  const claim = claimOf(claims);
  const counts = (
    [
      [added.length, "added"],
      [changed.length, "changed"],
      [deleted.length, "deleted"],
    ] as const
  )
    .filter(([n]) => n)
    .map(([n, what]) => `${n} ${what}`);
  if (!counts.length && !others.length) return undefined;
  const lines = (what: string, items: string[]) => [
    ...items.slice(0, SHOWN).map((item) => `  ${what} ${item}`),
    ...(items.length > SHOWN ? [`  … ${items.length - SHOWN} more ${what}`] : []),
  ];
  const head = counts.length
    ? `rules changed since the state last recorded the policy: ${counts.join(", ")}`
    : `the policy holds ${plural(others.length, "rule")} other stacks made, left to them`;
  return [
    `refresh of the IpPolicyRuleSet of ${ipPolicyId}: ${head}`,
    ...lines(
      "added",
      added.map((r) => `${named(r)}${texts(r, secret)}${claim(r)}`),
    ),
    ...lines(
      "changed",
      changed.map((c) => `${named(c.was)}: ${driftOf(c.was, c.now, secret)}`),
    ),
    ...lines("deleted", deleted.map(named)),
    ...lines(
      "left",
      others.map(
        (o) =>
          `${named(o.rule)}, ${o.pending ? pendingText(o.maker, o.pending) : `made by ${makerName(o.maker)}`} (not ` +
          `recorded)`,
      ),
    ),
    ...(counts.length ? [access] : []),
  ].join("\n");
}

/** What changed in a rule: `cidr a → b, description "x" → "y"`. */
export function driftOf(was: Member, now: Member, secret: boolean): string {
  const moves = canonicalCidr(was.cidr) !== canonicalCidr(now.cidr) ? [`cidr ${was.cidr} → ${now.cidr}`] : [];
  const flips = was.action !== now.action ? [`action ${was.action} → ${now.action}`] : [];
  return [...moves, ...flips, textChanges(was, now, secret)].filter(Boolean).join(", ");
}

/** Why a destroy deletes nothing (guard.ts teardown). */
export function teardownRefusedWords(
  what: string,
  t: Extract<Teardown, { kind: "refused" }>,
  secret: boolean,
  claims: Claims,
): string {
  if (t.because === "changed") {
    const stale = t.rules.map((c) => `${named(c.was)}: ${driftOf(c.was, c.now, secret)}`);
    return (
      `${what}: ${plural(stale.length, "rule")} changed since this stack last recorded ` +
      `${stale.length === 1 ? "it" : "them"}: ${listed(stale)}; nothing was deleted. ` +
      "Run `pulumi refresh` first (or `pulumi destroy --refresh`): it records them as they are."
    );
  }
  const open = t.rules;
  return (
    `${what}: the policy holds ${plural(open.length, "allow rule")} no preview of this stack showed ` +
    "(added since its last refresh, by hand, another stack or an interrupted up): " +
    `${listed(open.map((r) => named(r) + claimOf(claims)(r)))}; nothing was deleted, ` +
    "as deleting the set's other rules would leave them open with nothing managing them. " +
    "Run `pulumi up --refresh` (or `pulumi destroy --refresh` when destroying the stack): its preview's refresh " +
    "names them, and the delete then takes them with the set."
  );
}

/** What a destroy left (its words kept as users' scripts match them: `rule(s)`), other stacks' rules last. */
export function teardownNotices(what: string, t: Extract<Teardown, { kind: "delete" }>, others: Claims): Notice[] {
  const out: Notice[] = [];
  if (t.kept.length) {
    out.push({
      text:
        `${what}: left ${t.kept.length} deny rule(s) no preview of this stack showed ` +
        `(added since its last refresh): ${listed(t.kept.map(named))}`,
      warning: true,
    });
  }
  if (t.handedOver.length) {
    out.push({
      text:
        `${what}: left ${t.handedOver.length} rule(s) that IpPolicyRule resources of this stack ` +
        `manage now: ${listed(t.handedOver.map(named))}`,
    });
  }
  return [...out, ...othersNotices(what, others)];
}

/** A set replaced in this run by one on the same policy: its destroy leaves the rules. */
export const replacedInRunWords = (what: string) =>
  `${what}: left its rules in place: the IpPolicyRuleSet that replaces it in this run manages the policy now`;

/** A new set on a policy that holds rules it may not take, and how it may (`adopt`: ACCESSCTL_ADOPT_EXISTING=1). */
export function alreadyHoldsWords(what: string, refused: Member[], outcome: string, adopt: boolean): string {
  return (
    `${what}: the policy already holds ${plural(refused.length, "rule")}${adopt ? " not as declared" : ""}: ` +
    `${listed(refused.map(named))}; ${outcome}. ` +
    "To make them this resource's, declare takeOver: true: the set takes them over as they are, and the next `up`, " +
    "after a preview that shows each change, brings them to the declaration. " +
    (adopt
      ? "ACCESSCTL_ADOPT_EXISTING=1 takes only rules exactly as declared (what an interrupted `pulumi up` of this " +
        "stack can have made)."
      : "If an interrupted `pulumi up` of this stack made them, run `ACCESSCTL_ADOPT_EXISTING=1 pulumi up` once.")
  );
}

/** A set that yields its policy to other stacks' sets, named once each by their markers. */
export function oneSetOnlyWords(what: string, ipPolicyId: string, otherSets: { maker: Marker }[], outcome: string) {
  const sets = [...new Set(otherSets.map((f) => makerName(f.maker)))];
  return (
    `${what}: the rules of IP policy ${ipPolicyId} are managed by ${sets.join(", ")} (their metadata say so); ` +
    `${outcome}. A policy has one set: declare these rules in that set, or use another policy.`
  );
}

// ---- what a preview shows -----------------------------------------------------------------------

/**
 * A value in a plan: quoted, and cut short (the whole value is in the state); one not known at
 * preview, or secret, says so.
 */
export function shownValue(v: unknown, secret: boolean): string {
  if (isUnknownValue(v)) return "(known at update)";
  if (secret) return "[secret]";
  const text = JSON.stringify(v ?? "");
  return text.length > 100 ? `${text.slice(0, 96)}…"` : text;
}

const shownAction = (a: RuleAction | Unknown) => (isUnknownValue(a) ? "(action known at update)" : a);

/**
 * What a rule declares besides its CIDR and action: `, description "…", metadata "…"` (`[secret]`
 * when the program made them secret).
 */
export function texts(d: { description?: string | Unknown; metadata?: string | Unknown }, secret: boolean): string {
  return TEXT_FIELDS.filter((k) => d[k])
    .map((k) => `, ${k} ${shownValue(d[k], secret)}`)
    .join("");
}

/** The texts a PATCH changes: `description "a" → "b"`. */
export function textChanges(r: Member, d: DeclaredRule | Member, secret: boolean): string {
  const to = d as DeclaredRule;
  return changedTexts(r, to)
    .map((k) => `${k} ${shownValue(r[k], secret)} → ${shownValue(to[k], secret)}`)
    .join(", ");
}

export const requests = (n: number) => plural(n, "request");

function line(s: Step, secret: boolean): string {
  switch (s.op) {
    case "create":
      return `  + ${s.to.cidr} ${shownAction(s.to.action)}${texts(s.to, secret)}`;
    case "retext":
      return `  ~ ${canonicalCidr(s.rule.cidr)}: ${textChanges(s.rule, s.to, secret)}`;
    case "move": {
      const also = textChanges(s.rule, s.to, secret);
      const patch = `(${s.rule.id}, ${s.rule.action}: one PATCH of cidr)`;
      return `  ~ ${canonicalCidr(s.rule.cidr)} → ${s.to.cidr} ${patch}${also ? `, ${also}` : ""}`;
    }
    case "flip": {
      const unless = isUnknownValue(s.to.action) ? ", unless it turns out the same" : "";
      const how = `(${s.rule.id} deleted, then created again${unless})`;
      const action = `action ${s.rule.action} → ${shownAction(s.to.action)}`;
      return `  ± ${canonicalCidr(s.rule.cidr)}: ${action} ${how}${texts(s.to, secret)}`;
    }
    case "delete":
      return `  - ${canonicalCidr(s.rule.cidr)} ${s.rule.action} (${s.rule.id})${texts(s.rule, secret)}`;
  }
}

const COUNTED: [Op, string][] = [
  ["create", "create"],
  ["retext", "update"],
  ["move", "move"],
  ["flip", "replace"],
  ["delete", "delete"],
];

/**
 * The plan in words: a first line that counts (`create 1, update 2, delete 1: 4 requests`), then one
 * line per change, every change: `+` create, `~` update or move, `±` action changed (delete, then
 * create), `-` delete. "" when there is nothing to do.
 */
export function describe(p: Plan, secret = false): string {
  const count = (op: Op) => p.steps.filter((s) => s.op === op).length;
  const head = COUNTED.filter(([op]) => count(op))
    .map(([op, word]) => `${word} ${count(op)}`)
    .join(", ");
  if (!head) return "";
  const total = p.steps.reduce((n, s) => n + requestsOf(s), 0);
  return [`${head}: ${requests(total)}`, ...p.steps.map((s) => line(s, secret))].join("\n");
}

/** A plan whose rules are not known yet (they depend on other resources): what up may do, rule by rule. */
export function unknownRulesWords(ipPolicyId: string, recorded: Member[], secret: boolean): string {
  const may = recorded.map((r) => `  ? ${named(r)}${texts(r, secret)}`);
  return [
    `plan for ${ipPolicyId}: the rules are not known yet (they depend on other resources): up makes the ` +
      "policy hold exactly the declared rules, and may change or delete any of the " +
      `${recorded.length} it holds now`,
    ...may,
  ].join("\n");
}
