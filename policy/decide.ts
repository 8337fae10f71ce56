// The guardrails' decisions, pure and typed: each takes what a stack declares (read.ts) and a policy's
// settings (config.ts) and returns findings; words.ts renders them, index.ts hands them to Pulumi.
// Access is the one model of provider/access.ts: allowed = in some allow and in no deny.
import { MUTUAL_TLS_ENABLED_DEFAULT } from "../contract/tls-edge-mutual-tls";
import { accessOf, AccessRule, intersect, isEmpty, parseCidr, Space, spaceOf } from "../provider/access";

/** Where a rule is declared: the resource (its URN for Pulumi, its kind and name for words). */
export interface Source {
  urn: string;
  kind: "IpPolicyRuleSet" | "IpPolicyRule";
  name: string;
}

/** One rule as the stack declares it, and where. */
export interface DeclaredRule extends AccessRule {
  by: Source;
}

/** Every rule the stack declares on one IP policy, across its sets and rules. */
export interface PolicyRules {
  /** The policy's id, or undefined while a preview cannot know it (the rules of that one resource, then). */
  policyId?: string;
  rules: DeclaredRule[];
}

/** An allow that makes reachable what must not be: what it exposes, given every rule of its policy. */
export interface Exposure {
  policyId?: string;
  rule: DeclaredRule;
  /** "everything": an allow of a whole family (0.0.0.0/0, ::/0); "forbidden": it reaches a listed range. */
  why: "everything" | "forbidden";
  exposed: Space;
}

export interface ForbiddenSettings {
  /** CIDRs that must never be reachable. */
  ranges: string[];
  /** Whether an allow of 0.0.0.0/0 or ::/0 may stand. */
  allowEverything: boolean;
}

const isWholeFamily = (cidr: string) => {
  const parsed = parseCidr(cidr);
  return "prefix" in parsed && parsed.prefix === 0;
};

/**
 * The allows of a policy that expose what must not be reachable, on the policy's effective access
 * (its denies taken off): an allow of a whole family, and an allow reaching a forbidden range. Each
 * allow is named with the part of the access it makes reachable; an allow its denies cancel is not.
 */
export function exposures(policy: PolicyRules, settings: ForbiddenSettings): Exposure[] {
  const access = accessOf(policy.rules);
  const forbidden = spaceOf(settings.ranges);
  const found: Exposure[] = [];
  for (const rule of policy.rules.filter((r) => r.action === "allow")) {
    const reached = intersect(access, spaceOf([rule.cidr]));
    if (!settings.allowEverything && isWholeFamily(rule.cidr) && !isEmpty(reached)) {
      found.push({ policyId: policy.policyId, rule, why: "everything", exposed: reached });
      continue;
    }
    const exposed = intersect(reached, forbidden);
    if (!isEmpty(exposed)) found.push({ policyId: policy.policyId, rule, why: "forbidden", exposed });
  }
  return found;
}

/** The widest allow a policy may hold: the shortest prefix length per family. */
export interface WidestSettings {
  ipv4: number;
  ipv6: number;
}

/** An allow wider than the settings let a policy hold: the rule and the shortest prefix allowed for its family. */
export interface TooWide {
  rule: DeclaredRule;
  limit: number;
}

export function tooWide(rules: DeclaredRule[], settings: WidestSettings): TooWide[] {
  return rules.flatMap((rule) => {
    const parsed = parseCidr(rule.cidr);
    if (rule.action !== "allow" || !("prefix" in parsed)) return [];
    const limit = parsed.v6 ? settings.ipv6 : settings.ipv4;
    return parsed.prefix < limit ? [{ rule, limit }] : [];
  });
}

/** The denies of a policy that lie outside every allow of it: they change nothing (nothing there is allowed). */
export function uselessDenies(policy: PolicyRules): DeclaredRule[] {
  const allowed = spaceOf(policy.rules.filter((r) => r.action === "allow").map((r) => r.cidr));
  return policy.rules.filter((r) => r.action === "deny" && isEmpty(intersect(spaceOf([r.cidr]), allowed)));
}

/** What an API key's inputs lack: a description; `triggers`, which replace (rotate) the key when they change. */
export function keyGaps(props: { description?: unknown; triggers?: unknown }): {
  description: boolean;
  triggers: boolean;
} {
  return {
    description: typeof props.description !== "string" || props.description.trim() === "",
    triggers: !Array.isArray(props.triggers) || props.triggers.length === 0,
  };
}

/** What a mutual TLS module's inputs leave open: switched off (`enabled`, or its default), no certificate authority. */
export function mutualTlsGaps(props: { enabled?: unknown; certificateAuthorityIds?: unknown }): {
  disabled: boolean;
  noAuthority: boolean;
} {
  const ids = props.certificateAuthorityIds;
  return {
    disabled: (props.enabled ?? MUTUAL_TLS_ENABLED_DEFAULT) === false,
    noAuthority: !Array.isArray(ids) || !ids.some((id) => typeof id === "string" && id.trim() !== ""),
  };
}
