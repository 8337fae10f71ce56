// The guardrails' words: each finding of decide.ts as one line that names the resource, the rule and
// what it exposes (Pulumi prints the policy's name and description above it). Nothing here decides.
import { describeSpace, spaceOf } from "../provider/access";
import type { DeclaredRule, Exposure, TooWide } from "./decide";

const onPolicy = (policyId: string | undefined) => (policyId ? ` on ${policyId}` : " on an IP policy not known yet");

/** `IpPolicyRuleSet "office" on ipp_…: rule 0.0.0.0/0 allow` */
const ruleAt = (rule: DeclaredRule, policyId: string | undefined) =>
  `${rule.by.kind} "${rule.by.name}"${onPolicy(policyId)}: rule ${rule.cidr} ${rule.action}`;

export function exposureWords(e: Exposure): string {
  const reachable = describeSpace(e.exposed);
  if (e.why === "everything") {
    const family = e.rule.cidr.includes(":") ? "IPv6" : "IPv4";
    return `${ruleAt(e.rule, e.policyId)} allows all of ${family}: it makes reachable ${reachable}`;
  }
  return `${ruleAt(e.rule, e.policyId)} makes a forbidden range reachable: ${reachable}`;
}

export function tooWideWords(t: TooWide, policyId: string | undefined): string {
  const family = t.rule.cidr.includes(":") ? "IPv6" : "IPv4";
  const allows = describeSpace(spaceOf([t.rule.cidr]));
  return `${ruleAt(t.rule, policyId)} is wider than /${t.limit}, the widest ${family} allow: it allows ${allows}`;
}

export function uselessDenyWords(rule: DeclaredRule, policyId: string | undefined): string {
  const why = "lies outside every allow of the policy: it takes nothing away (nothing there is allowed)";
  return `${ruleAt(rule, policyId)} ${why}`;
}

/** `ApiKey "ci"`, `TlsEdgeMutualTls "edge"` */
export const resourceWords = (kind: string, name: string) => `${kind} "${name}"`;

export const noDescriptionWords = (name: string) =>
  `${resourceWords("ApiKey", name)} has no description: say what the key is for and who holds it (description)`;

export const noTriggersWords = (name: string) =>
  `${resourceWords("ApiKey", name)} has no triggers: Pulumi never rotates it; ` +
  "a change of triggers replaces the key with a new token";

export const mutualTlsWords = (name: string, edgeId: unknown, gaps: { disabled: boolean; noAuthority: boolean }) => {
  const what = [
    gaps.disabled && "is switched off (enabled: false)",
    gaps.noAuthority && "names no certificate authority (certificateAuthorityIds)",
  ];
  const edge = typeof edgeId === "string" ? ` of ${edgeId}` : "";
  const gapsWords = what.filter(Boolean).join(" and ");
  const module = `${resourceWords("TlsEdgeMutualTls", name)}${edge}`;
  return `${module} ${gapsWords}: clients reach the edge without a certificate it checks`;
};
