// The program's rules as the set reads them. Programs write `rules` as a list; check hands them on
// keyed by canonical CIDR (a policy holds a CIDR once: the CIDR is the rule's name), each as the
// rule's own table hands it on, so that Pulumi's diff of one rule added, changed or deleted shows that
// rule, not every rule after it in a list. Order, IPv6 spelling, a bare address vs its /32 or /128,
// and unset vs "" make no diff. plan() takes them typed: a value the engine does not know yet is
// UNKNOWN_VALUE, not the engine's magic string.
import { RuleAction } from "../../contract/ip-policy-rule";
import { checkFields, Fields } from "../fields";
import { canonicalCidr, cidr, compareCidrs } from "../access";
import { FIELDS as RULE_FIELDS } from "../ip-policy-rule";
import { ProfileInput } from "../profiles";
import { CheckFailure, isUnknown, text, UNKNOWN } from "../validate";

/** One rule of a set, as a program declares it (an element of the input `rules`). */
export interface IpPolicyRuleSetRule {
  /**
   * An IPv4 or IPv6 range (`10.0.0.0/8`), or one address (`198.51.100.7`,
   * the same as `/32`); each range once per set, in any spelling.
   */
  cidr: string;
  /** `allow` or `deny`. Changing it deletes the rule, then creates it (the policy holds a CIDR once). */
  action: RuleAction;
  /** Optional; at most 255 bytes of UTF-8. Unset and "" are the same. */
  description?: string;
  /** Optional; at most 4096 bytes of UTF-8. Unset and "" are the same. */
  metadata?: string;
}

/** The inputs of an IpPolicyRuleSet; the SDK's IpPolicyRuleSetArgs is made from this (its docs too). */
export interface IpPolicyRuleSetInputs extends ProfileInput {
  /** The IP policy (`ipp_…`) whose rules this resource owns, all of them. Changing it replaces the set. */
  ipPolicyId: string;
  /**
   * Every rule the policy should hold, in any order; any other rule of the policy is deleted by `up`.
   * A changed description or metadata is one PATCH, an allow CIDR replaced by another reuses the
   * rule (one PATCH; a deny is created anew, the old one deleted last), a changed action deletes the
   * rule and creates it again.
   * @onChange one request per changed rule
   */
  rules: IpPolicyRuleSetRule[];
  /**
   * Creating the set on a policy that already holds rules fails, naming them, unless this is true:
   * then the set takes the policy's rules over as they are and writes nothing; the next `up` (whose
   * preview shows each change) brings them to the declaration, deleting the undeclared ones.
   * @onChange nothing: read by the first `up` only
   */
  takeOver?: boolean;
}

/**
 * The inputs as check hands them on and the state keeps them: each
 * rule (as the rule's table hands it on) under its canonical CIDR.
 */
export interface CheckedRuleSetInputs extends Omit<IpPolicyRuleSetInputs, "rules"> {
  rules: Record<string, IpPolicyRuleSetRule>;
  /** The resource's URN, where messages about it go (the SDK or the plugin passes it). */
  __urn?: string;
  /** The inputs the program made secret, by name (the SDK or the plugin passes them): their values are never shown. */
  __secrets?: string[];
  /** The rule-level plan, which Pulumi's update plans hold (index.ts pulumiPlan). */
  __plan?: unknown;
  __provider?: unknown;
}

/** A value the engine does not know yet (a preview of a program whose value depends on another resource). */
export interface Unknown {
  readonly unknown: true;
}
export const UNKNOWN_VALUE: Unknown = { unknown: true };
export const isUnknownValue = (v: unknown): v is Unknown =>
  typeof v === "object" && v !== null && (v as Unknown).unknown === true;

/** A declared rule as plan() takes it: canonical CIDR, texts "" when unset; a value not known yet is UNKNOWN_VALUE. */
export interface DeclaredRule {
  cidr: string;
  action: RuleAction | Unknown;
  description: string | Unknown;
  metadata: string | Unknown;
}

/**
 * Whether the rules' texts are secret (the program made part of `rules`
 * secret, now or when the state was written): plans show `[secret]`.
 */
export const secretRules = (...props: { __secrets?: string[] }[]) =>
  props.some((p) => p.__secrets?.includes("rules") ?? false);

/** A rule of the set is an IP policy rule: checked, compared, sent and read back by the rule's own table. */
export const MEMBER_FIELDS: Fields<IpPolicyRuleSetRule> = {
  cidr: RULE_FIELDS.cidr,
  action: RULE_FIELDS.action,
  description: RULE_FIELDS.description,
  metadata: RULE_FIELDS.metadata,
};

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** A declared rule with null and "" taken as unset, as for every optional field of a rule. */
function withoutEmpty(rule: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(rule).filter(([key, v]) => !(key in MEMBER_FIELDS) || (v !== null && v !== "")),
  );
}

/**
 * The declared rules with where each stands: a program's list (`rules[3]`), or the keyed form of
 * the state (`rules["10.0.0.0/8"]`, the CIDR from the key), which check accepts too (an import's
 * inputs, check's own output). A string: why the value is neither.
 */
function declaredEntries(value: unknown): { at: string; rule: unknown }[] | string {
  if (Array.isArray(value)) return value.map((rule, i) => ({ at: `rules[${i}]`, rule }));
  if (isObject(value))
    return Object.entries(value).map(([key, rule]) => ({
      at: `rules[${JSON.stringify(key)}]`,
      rule: isObject(rule) ? { cidr: key, ...rule } : rule,
    }));
  return "must be a list of rules: [{cidr, action, description?, metadata?}, …]";
}

/**
 * check(): every declared rule, each problem named by its place in the
 * program's list and its CIDR (`rules[3].action … (rule 10.1.0.0/16)`).
 */
export function checkRules(value: unknown): string | CheckFailure[] | undefined {
  const entries = declaredEntries(value);
  if (typeof entries === "string") return entries;
  const failures: CheckFailure[] = [];
  const seen: Record<string, string> = {};
  for (const { at, rule } of entries) {
    if (isUnknown(rule)) continue;
    if (!isObject(rule)) {
      failures.push({ property: "", reason: `${at} must be an object {cidr, action, description?, metadata?}` });
      continue;
    }
    const named = typeof rule.cidr === "string" && !isUnknown(rule.cidr);
    checkFields(MEMBER_FIELDS, withoutEmpty(rule), failures, {
      path: at,
      noun: "a rule",
      name: named ? { property: "cidr", label: `rule ${rule.cidr}` } : undefined,
    });
    if (named && !cidr(rule.cidr)) {
      const key = canonicalCidr(rule.cidr as string);
      if (key in seen)
        failures.push({
          property: "",
          reason:
            `${at}.cidr ${JSON.stringify(rule.cidr)} is declared twice: ${seen[key]} is the same range (` +
            `${key}); a policy holds a CIDR once`,
        });
      else seen[key] = at;
    }
  }
  return failures.length ? failures : undefined;
}

/**
 * The declared rules as check hands them on: keyed by canonical CIDR, in CIDR order, each as the
 * rule's table hands it on (no empty text). Unknown while any rule or CIDR is (the keys wait for it).
 */
export function keyedRules(value: unknown): Record<string, IpPolicyRuleSetRule> | string {
  const entries = declaredEntries(value);
  if (
    typeof entries === "string" ||
    entries.some(({ rule }) => isUnknown(rule) || !isObject(rule) || isUnknown(rule.cidr))
  )
    return UNKNOWN;
  const rules = entries.map(
    ({ rule }) =>
      checkFields(MEMBER_FIELDS, withoutEmpty(rule as Record<string, unknown>), []) as unknown as IpPolicyRuleSetRule,
  );
  const out: Record<string, IpPolicyRuleSetRule> = {};
  for (const rule of rules.sort((a, b) => compareCidrs(a.cidr, b.cidr))) out[rule.cidr] = rule;
  return out;
}

/**
 * The declared rules typed for plan(), from the keyed form (or a list, in a state written before
 * the rules were keyed); UNKNOWN_VALUE while which CIDRs are declared is not known.
 */
export function declaredRules(rules: unknown): DeclaredRule[] | Unknown {
  const entries = Array.isArray(rules)
    ? rules
    : isObject(rules)
      ? Object.entries(rules).map(([key, r]) => (isObject(r) ? { ...r, cidr: key } : r))
      : undefined;
  if (!entries || entries.some((r) => !isObject(r) || isUnknown(r.cidr))) return UNKNOWN_VALUE;
  const known = <T>(v: unknown, as: (v: unknown) => T): T | Unknown => (isUnknown(v) ? UNKNOWN_VALUE : as(v));
  return (entries as Record<string, unknown>[]).map((r) => ({
    cidr: canonicalCidr(r.cidr as string),
    action: known(r.action, (a) => a as RuleAction),
    description: known(r.description, text),
    metadata: known(r.metadata, text),
  }));
}

/**
 * The declared rules (keyed, or a list in an old state) as the
 * list a program writes: what an import's program text declares.
 */
export function declaredList(
  rules: Record<string, IpPolicyRuleSetRule> | IpPolicyRuleSetRule[],
): IpPolicyRuleSetRule[] {
  if (Array.isArray(rules)) return rules;
  return Object.entries(rules).map(([c, r]) => ({ ...r, cidr: c }));
}

// The order of CIDRs is access.ts's (the one CIDR module, one cache).
export { compareCidrs };
