// @accessctl/pulumi/policy: the guardrails as Pulumi policies (CrossGuard, @pulumi/policy), for a
// policy pack: `new PolicyPack("accessctl-guardrails", { policies })`, or beside a pack's own. They see
// the resources of both hosts (the dynamic classes and the plugin, any language). Each policy only
// wires Pulumi's view (read.ts) to a decision (decide.ts) and its words (words.ts); the access of a
// policy is provider/access.ts's. The ready pack: templates/accessctl-guardrails.
import type {
  PolicyResource,
  ReportViolation,
  ResourceValidationArgs,
  ResourceValidationPolicy,
  StackValidationArgs,
  StackValidationPolicy,
} from "@pulumi/policy";
import { exposures, keyGaps, mutualTlsGaps, tooWide, uselessDenies } from "./decide";
import { FORBIDDEN_SCHEMA, forbiddenSettings, LEVELS, NAMES, WIDEST_SCHEMA, widestSettings } from "./config";
import { declaredRules, kindOf, knownOrUndefined, policiesOf, Seen } from "./read";
import {
  exposureWords,
  mutualTlsWords,
  noDescriptionWords,
  noTriggersWords,
  tooWideWords,
  uselessDenyWords,
} from "./words";

export { NAMES as POLICY_NAMES } from "./config";

const seen = (r: PolicyResource | ResourceValidationArgs): Seen => ({
  type: r.type,
  urn: r.urn,
  name: r.name,
  props: r.props,
});

/** Each of the stack's policies checked, violations reported; then a value a preview cannot know is thrown. */
function eachPolicy(
  args: StackValidationArgs,
  check: (policy: ReturnType<typeof policiesOf>["policies"][number]) => void,
) {
  const { policies, unknown } = policiesOf(args.resources.map(seen));
  policies.forEach(check);
  if (unknown) throw unknown;
}

export const forbiddenRanges: StackValidationPolicy = {
  name: NAMES.forbidden,
  description:
    "No IP policy makes a forbidden range reachable: no allow of all of IPv4 or IPv6, and none of the configured " +
    "ranges, on the policy's effective access across every set and rule the stack declares on it.",
  enforcementLevel: LEVELS.forbidden,
  configSchema: FORBIDDEN_SCHEMA,
  validateStack: (args, report) => {
    const settings = forbiddenSettings(args.getConfig());
    eachPolicy(args, (policy) => {
      for (const e of exposures(policy, settings)) report(exposureWords(e), e.rule.by.urn);
    });
  },
};

export const widestAllow: ResourceValidationPolicy = {
  name: NAMES.widest,
  description: "No allow rule is wider than the configured prefix length of its family (IPv4, IPv6).",
  enforcementLevel: LEVELS.widest,
  configSchema: WIDEST_SCHEMA,
  validateResource: (args, report) => {
    if (!kindOf(args.type)?.startsWith("IpPolicyRule")) return;
    const policyId = knownOrUndefined(() => args.props.ipPolicyId);
    for (const t of tooWide(declaredRules(seen(args)), widestSettings(args.getConfig()))) {
      report(tooWideWords(t, typeof policyId === "string" ? policyId : undefined));
    }
  },
};

export const uselessDeny: StackValidationPolicy = {
  name: NAMES.uselessDeny,
  description: "A deny rule lies inside some allow of its IP policy; one outside every allow denies nothing.",
  enforcementLevel: LEVELS.uselessDeny,
  validateStack: (args, report) =>
    eachPolicy(args, (policy) => {
      for (const rule of uselessDenies(policy)) report(uselessDenyWords(rule, policy.policyId), rule.by.urn);
    }),
};

/** A policy on the inputs of one kind of resource. */
function onKind(
  kind: "ApiKey" | "TlsEdgeMutualTls",
  check: (args: ResourceValidationArgs, report: ReportViolation) => void,
) {
  return (args: ResourceValidationArgs, report: ReportViolation) =>
    kindOf(args.type) === kind ? check(args, report) : undefined;
}

export const keyDescription: ResourceValidationPolicy = {
  name: NAMES.keyDescription,
  description: "Every API key has a description.",
  enforcementLevel: LEVELS.keyDescription,
  validateResource: onKind("ApiKey", (args, report) => {
    if (keyGaps(args.props).description) report(noDescriptionWords(args.name));
  }),
};

export const keyRotation: ResourceValidationPolicy = {
  name: NAMES.keyRotation,
  description: "Every API key has triggers, so that changing them rotates it.",
  enforcementLevel: LEVELS.keyRotation,
  validateResource: onKind("ApiKey", (args, report) => {
    if (keyGaps(args.props).triggers) report(noTriggersWords(args.name));
  }),
};

export const mutualTls: ResourceValidationPolicy = {
  name: NAMES.mutualTls,
  description: "Every mutual TLS module is enabled and names at least one certificate authority.",
  enforcementLevel: LEVELS.mutualTls,
  validateResource: onKind("TlsEdgeMutualTls", (args, report) => {
    const gaps = mutualTlsGaps(args.props);
    if (gaps.disabled || gaps.noAuthority)
      report(
        mutualTlsWords(
          args.name,
          knownOrUndefined(() => args.props.edgeId),
          gaps,
        ),
      );
  }),
};

/** Every guardrail, for `new PolicyPack(name, { policies })`. */
export const policies = [forbiddenRanges, widestAllow, uselessDeny, keyDescription, keyRotation, mutualTls];
