// Words for users, rendered apart from the decisions that they report (pure; nothing here decides).
// Access (provider/access.ts): a space as CIDRs with exact counts, and what a change opens and closes.
import type { AccessEffect, AgainstPlan, Change, Part, Shape, Space } from "./access";
import { shapesOf } from "./access";

/** A set's Delete refused in a job that holds to a reviewed plan (plan-file.ts setDeleteUnderRole). */
export function holdRefusesDeleteWords(what: string, setting: string, file: string): string {
  return (
    `${what}: ${setting} (${file}) is set: this job deploys a reviewed plan, and no plan shows a set's delete ` +
    "(a preview of a delete or a destroy saves none); nothing was deleted. Delete it (`pulumi destroy`, or `pulumi " +
    "up` " +
    `without the set) from a job that does not set ${setting}, after that job's own review`
  );
}

/** An IpPolicyRule's Delete refused in a job that holds to a reviewed plan (plan-hold.ts ruleDeleteUnderRole). */
export function holdRefusesRuleDeleteWords(what: string, setting: string, file: string): string {
  return (
    `${what}: ${setting} (${file}) is set: this job deploys a reviewed plan, and a plan holds IP policy rule ` +
    "sets only, none of an IpPolicyRule's changes; nothing was deleted. Delete it (`pulumi destroy`, or `pulumi up` " +
    `without the rule) from a job that does not set ${setting}, after that job's own review`
  );
}

/** `1 rule`, `2 rules`: the one plural helper. */
export const plural = (n: number | bigint, noun: string, nouns = `${noun}s`) =>
  `${grouped(n)} ${n === 1 || n === 1n ? noun : nouns}`;

/** 4294901760 → `4,294,901,760` (bigint or number). */
export function grouped(n: number | bigint): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Parts named per family of a space (and CIDRs per `except`) before `and N more`: a line or two per policy. */
const SHOWN_CIDRS = 8;

function upTo(items: string[], noun: string): string {
  if (items.length <= SHOWN_CIDRS) return items.join(", ");
  return `${items.slice(0, SHOWN_CIDRS).join(", ")} and ${plural(items.length - SHOWN_CIDRS, `more ${noun}`)}`;
}

function shapeWords(shape: Shape): string {
  const alone = shape.parts.length === 1;
  const part = (p: Part) => {
    if (!p.except) return p.cidr;
    const holes = upTo(p.except, "CIDR");
    return `${p.cidr} except ${alone ? holes : `(${holes})`}`;
  };
  return `${upTo(shape.parts.map(part), "part")} (${plural(shape.count, "address", "addresses")})`;
}

/**
 * A space in words, each family with its exact count: `10.7.0.0/16 (65,536 addresses)`,
 * `0.0.0.0/0 except 10.5.0.0/16 (4,294,901,760 addresses)`, IPv4 and IPv6 joined by `and`; `nothing`.
 */
export function describeSpace(s: Space): string {
  const shapes = shapesOf(s);
  return shapes.length ? shapes.map(shapeWords).join(" and ") : "nothing";
}

/** `opens X; closes Y` (`opened`, `closed`: done; `opens at most`: a bound), either alone, or `unchanged`. */
export function accessChangeWords(
  change: { opens: Space; closes: Space },
  how: { done?: boolean; atMost?: boolean } = {},
): string {
  const verb = (now: string, done: string) => `${how.done ? done : now}${how.atMost ? " at most" : ""}`;
  const parts = [
    ...(shapesOf(change.opens).length ? [`${verb("opens", "opened")} ${describeSpace(change.opens)}`] : []),
    ...(shapesOf(change.closes).length ? [`${verb("closes", "closed")} ${describeSpace(change.closes)}`] : []),
  ];
  return parts.length ? parts.join("; ") : "unchanged";
}

/** Where an access change was found: a plan (preview), rules changed since the state recorded them, an update. */
export type AccessWhen = "plan" | "drift" | "done";

/**
 * A policy's access change in a line: `access of ipp_…: opens 10.7.0.0/16 (65,536 addresses); closes
 * 192.0.2.0/24 (256 addresses)`, `access of ipp_…: unchanged`, or why it is not known.
 */
export function policyAccessWords(policy: string, effect: AccessEffect, when: AccessWhen): string {
  const head = `access of ${policy}${when === "drift" ? ", changed since the state last recorded it" : ""}`;
  if ("unknownActions" in effect) {
    return `${head}: known at update (the action of ${plural(effect.unknownActions, "rule")} is not known yet)`;
  }
  if ("unreadable" in effect) return `${head}: not known (${effect.unreadable})`;
  return `${head}: ${accessChangeWords(effect, { done: when === "done" })}${when === "done" ? " by this update" : ""}`;
}

/**
 * What an IpPolicyRule's create or change does to its policy's access, at preview: given the policy's
 * `others` other rules as last listed in this run (a count), or, not knowing them, at most.
 */
export function ruleAccessWords(policy: string, effect: AccessEffect, others: number | undefined): string {
  const head = `access of ${policy}: this rule`;
  if ("unknownActions" in effect) return `${head}: known at update (its action is not known yet)`;
  if ("unreadable" in effect) return `${head}: not known (${effect.unreadable})`;
  const words = accessChangeWords(effect, { atMost: others === undefined });
  const change = words === "unchanged" ? "changes no access" : words;
  if (others !== undefined) {
    return `${head} ${change}, given the policy's ${plural(others, "other rule")} as last listed`;
  }
  const why = "the policy's other rules were not listed in this run: `pulumi preview --refresh` lists them";
  return `${head} ${change} (${why})`;
}

/** `opening X and closing Y` (of a change held back or done beyond a plan). */
function changeGerunds(c: Change): string {
  const parts = [
    ...(shapesOf(c.opens).length ? [`opening ${describeSpace(c.opens)}`] : []),
    ...(shapesOf(c.closes).length ? [`closing ${describeSpace(c.closes)}`] : []),
  ];
  return parts.join(" and ");
}

/**
 * An update held to a reviewed plan, in a line: `access of ipp_…: did exactly what the plan showed:
 * opens …; closes …`, or `did less than the plan showed: held back opening …; did: …`, or (the policy
 * changed since the plan) what it did beyond it.
 */
export function againstPlanWords(policy: string, a: AgainstPlan): string {
  const did = accessChangeWords(a.done);
  const done = did === "unchanged" ? "access unchanged" : did;
  const beyond = changeGerunds(a.beyond);
  const also = beyond ? `; beyond it, as the policy changed since the plan: ${beyond}` : "";
  if (a.verdict === "exactly") return `access of ${policy}: did exactly what the plan showed: ${done}`;
  const held = changeGerunds(a.heldBack);
  const verdict = a.verdict === "less" ? "did less than the plan showed" : "did more than the plan showed";
  return `access of ${policy}: ${verdict}: ${held ? `held back ${held}; ` : ""}did: ${done}${also}`;
}

/** A read that found server texts carrying credential material (server-text.ts): one line, never the texts. */
export function withheldTextsWords(what: string, found: string[], placeholder: string): string {
  const shown = found.slice(0, 5).join(", ") + (found.length > 5 ? ` and ${found.length - 5} more` : "");
  return (
    `${what}: the service returned a text containing credential material (${shown}); ` +
    `it is not shown, nor stored: "${placeholder}" stands for it`
  );
}
