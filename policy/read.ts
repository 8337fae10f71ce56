// What a policy sees of the stack, read into decide.ts's types. Pulumi hands a policy each resource's
// type and properties: for the plugin's resources the type token (accessctl:index:IpPolicyRuleSet),
// for the dynamic classes their dynamic type (pulumi-nodejs:dynamic/accessctl:IpPolicyRuleSet); both
// are in the one registry. A set's properties hold its rules as check hands them on, keyed by
// canonical CIDR (a state written before the rules were keyed: a list). In a preview a value the
// program computes from another resource's output is unknown: @pulumi/policy throws its
// UnknownValueError when such a value is read.
import { cidr as cidrProblem } from "../provider/access";
import { RESOURCES } from "../provider/resources";
import type { DeclaredRule, PolicyRules, Source } from "./decide";

export type Kind = keyof typeof RESOURCES;

/** Which of our resources a Pulumi type names, whichever host serves it; undefined for any other. */
export function kindOf(type: string): Kind | undefined {
  for (const entry of Object.values(RESOURCES)) {
    if (type === entry.token || type === entry.dynamicType) return entry.name;
  }
  return undefined;
}

/** A resource as a policy sees it: its type, URN, name and properties (inputs or outputs). */
export interface Seen {
  type: string;
  urn: string;
  name: string;
  props: Record<string, unknown>;
}

/** Whether an error is @pulumi/policy's for a value a preview cannot know. */
export const isUnknownError = (e: unknown) => e instanceof Error && e.constructor?.name === "UnknownValueError";

const isAction = (a: unknown): a is "allow" | "deny" => a === "allow" || a === "deny";

/** The rules a set or a rule resource declares (none for any other resource). */
export function declaredRules(r: Seen): DeclaredRule[] {
  const kind = kindOf(r.type);
  if (kind !== "IpPolicyRuleSet" && kind !== "IpPolicyRule") return [];
  const by: Source = { urn: r.urn, kind, name: r.name };
  const listed: { cidr?: unknown; action?: unknown }[] = [];
  if (kind === "IpPolicyRule") listed.push({ cidr: r.props.cidr, action: r.props.action });
  else {
    const rules = r.props.rules;
    if (Array.isArray(rules)) listed.push(...rules);
    else if (rules && typeof rules === "object") {
      for (const [cidr, rule] of Object.entries(rules))
        listed.push({ cidr, action: (rule as { action?: unknown })?.action });
    }
  }
  // A rule the provider's check refuses (no CIDR, another action) fails the preview there: left out here.
  const valid = (cidr: unknown): cidr is string => cidrProblem(cidr) === undefined;
  return listed.flatMap(({ cidr, action }) => (valid(cidr) && isAction(action) ? [{ cidr, action, by }] : []));
}

/**
 * The stack's rules per IP policy, across every set and rule declared on it. A resource whose policy
 * id a preview cannot know stands alone; one whose rules it cannot know is left out, and the first
 * such error is handed back, for the caller to throw once it has reported what it could check.
 */
export function policiesOf(resources: Seen[]): { policies: PolicyRules[]; unknown?: Error } {
  const byId = new Map<string, PolicyRules>();
  const alone: PolicyRules[] = [];
  let unknown: Error | undefined;
  for (const r of resources) {
    if (!kindOf(r.type)?.startsWith("IpPolicyRule")) continue;
    let rules: DeclaredRule[];
    try {
      rules = declaredRules(r);
    } catch (e) {
      if (!isUnknownError(e)) throw e;
      unknown ??= e as Error;
      continue;
    }
    const id = knownOrUndefined(() => r.props.ipPolicyId);
    if (typeof id !== "string") {
      alone.push({ rules });
      continue;
    }
    const policy = byId.get(id) ?? { policyId: id, rules: [] };
    policy.rules.push(...rules);
    byId.set(id, policy);
  }
  return { policies: [...byId.values(), ...alone], unknown };
}

/** A value, or undefined when a preview cannot know it. */
export function knownOrUndefined<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (e) {
    if (isUnknownError(e)) return undefined;
    throw e;
  }
}
