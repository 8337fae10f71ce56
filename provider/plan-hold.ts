// An IpPolicyRule's Delete in a job holding to a reviewed plan (ACCESSCTL_PLAN_HOLD). Apart from the set's
// plan code (ip-policy-rule-set/saved-plan.ts), which imports the rule's module: no import cycle.
import * as path from "node:path";
import { planRole } from "./config";
import { plainError } from "./errors";
import { holdRefusesRuleDeleteWords } from "./messages";

/**
 * Whether an IpPolicyRule's Delete may go on in a job of `role` (config.ts planRole). A plan file holds
 * sets only: nothing a reviewer saw binds a rule resource, so a job holding to a reviewed plan deletes
 * none (nor replaces one: a replacement deletes). Its creates are not refused (docs/guides/rule-sets.md).
 * Pure; the set's Delete has its own (ip-policy-rule-set/plan-file.ts setDeleteUnderRole).
 */
export type RuleDeleteDecision = { kind: "delete" } | { kind: "refuse"; because: "no-plan-holds-a-rule" };

export function ruleDeleteUnderRole(role: "save" | "hold" | undefined): RuleDeleteDecision {
  return role === "hold" ? { kind: "refuse", because: "no-plan-holds-a-rule" } : { kind: "delete" };
}

/** An IpPolicyRule's Delete, before its first request: refused in a job holding to a reviewed plan. */
export function refuseRuleDeleteWhenHolding(what: string): void {
  const role = planRole();
  if (ruleDeleteUnderRole(role?.role).kind === "delete" || !role) return;
  throw plainError(holdRefusesRuleDeleteWords(what, role.setting, path.resolve(role.path)));
}
