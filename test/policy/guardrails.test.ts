// The guardrails (policy/): each decision on plain data, and each policy's validate function called as
// @pulumi/policy calls it (the arguments it builds, the properties behind its own unknown-checking
// proxy), with resources of both hosts: the plugin's type tokens and the dynamic classes' types.
import { unknownCheckingProxy, unknownStringValue } from "@pulumi/policy/proxy";
import type { PolicyResource, ResourceValidationArgs, StackValidationArgs } from "@pulumi/policy";
import { describe, expect, it } from "vitest";
import {
  DeclaredRule,
  exposures,
  keyGaps,
  mutualTlsGaps,
  PolicyRules,
  tooWide,
  uselessDenies,
} from "../../policy/decide";
import { forbiddenSettings } from "../../policy/config";
import {
  forbiddenRanges,
  keyDescription,
  keyRotation,
  mutualTls,
  policies,
  uselessDeny,
  widestAllow,
} from "../../policy/index";
import { kindOf, policiesOf } from "../../policy/read";
import { RESOURCES } from "../../provider/resources";

const by = {
  urn: "urn:pulumi:dev::p::accessctl:index:IpPolicyRuleSet::allow",
  kind: "IpPolicyRuleSet" as const,
  name: "allow",
};
const rule = (cidr: string, action: "allow" | "deny"): DeclaredRule => ({ cidr, action, by });
const policy = (...rules: DeclaredRule[]): PolicyRules => ({ policyId: "ipp_1", rules });
const NONE = { ranges: [], allowEverything: false };

describe("decisions", () => {
  it("an allow of all of IPv4: named with what it makes reachable, denies taken off; allowEverything lets it stand", () => {
    const found = exposures(policy(rule("0.0.0.0/0", "allow"), rule("10.0.0.0/8", "deny")), NONE);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ why: "everything", rule: { cidr: "0.0.0.0/0" } });
    expect(found[0].exposed.v4Count).toBe(2n ** 32n - 2n ** 24n);
    expect(exposures(policy(rule("::/0", "allow")), NONE)[0].exposed.v6Count).toBe(2n ** 128n);
    expect(exposures(policy(rule("0.0.0.0/0", "allow")), { ranges: [], allowEverything: true })).toEqual([]);
    // Denied whole: it opens nothing.
    expect(exposures(policy(rule("0.0.0.0/0", "allow"), rule("0.0.0.0/0", "deny")), NONE)).toEqual([]);
  });

  it("a forbidden range is checked on the effective access: a deny that covers it clears the allow", () => {
    const settings = { ranges: ["10.1.0.0/16", "2001:db8::/32"], allowEverything: false };
    const found = exposures(policy(rule("10.0.0.0/8", "allow"), rule("10.1.128.0/17", "deny")), settings);
    expect(found.map((e) => [e.why, e.exposed.v4])).toEqual([["forbidden", ["10.1.0.0/17"]]]);
    expect(exposures(policy(rule("10.0.0.0/8", "allow"), rule("10.1.0.0/16", "deny")), settings)).toEqual([]);
    expect(exposures(policy(rule("192.0.2.0/24", "allow")), settings)).toEqual([]);
    expect(exposures(policy(rule("2001:db8:5::/48", "allow")), settings)[0].exposed.v6).toEqual(["2001:db8:5::/48"]);
  });

  it("the widest allow per family; denies are never too wide", () => {
    const rules = [
      rule("10.0.0.0/8", "allow"),
      rule("10.0.0.0/7", "allow"),
      rule("0.0.0.0/0", "deny"),
      rule("2001:db8::/31", "allow"),
      rule("2001:db8::/32", "allow"),
    ];
    expect(tooWide(rules, { ipv4: 8, ipv6: 32 }).map((t) => [t.rule.cidr, t.limit])).toEqual([
      ["10.0.0.0/7", 8],
      ["2001:db8::/31", 32],
    ]);
  });

  it("a deny outside every allow is useless; one that overlaps an allow even partly is not", () => {
    const rules = [
      rule("10.0.0.0/8", "allow"),
      rule("10.5.0.0/16", "deny"),
      rule("192.0.2.0/24", "deny"),
      rule("10.0.0.0/7", "deny"),
    ];
    expect(uselessDenies(policy(...rules)).map((r) => r.cidr)).toEqual(["192.0.2.0/24"]);
  });

  it("API keys and mutual TLS modules", () => {
    expect(keyGaps({ description: "  ", triggers: [] })).toEqual({ description: true, triggers: true });
    expect(keyGaps({ description: "CI", triggers: ["2026-11"] })).toEqual({ description: false, triggers: false });
    // Enabled by default.
    expect(mutualTlsGaps({ certificateAuthorityIds: ["ca_1"] })).toEqual({ disabled: false, noAuthority: false });
    expect(mutualTlsGaps({ enabled: false, certificateAuthorityIds: [] })).toEqual({
      disabled: true,
      noAuthority: true,
    });
  });

  it("a forbidden range that is no CIDR is an error naming the policy and the setting", () => {
    expect(() => forbiddenSettings({ ranges: ["10.0.0.0/8", "10.0.0.1/8"] })).toThrow(
      /^accessctl-forbidden-ranges: config ranges\[1\] must be a CIDR such as 10\.0\.0\.0\/8: "10\.0\.0\.1\/8" has host bits set/,
    );
  });
});

/** A resource as @pulumi/policy hands it to validateStack (its props behind its unknown-checking proxy). */
function stackResource(type: string, name: string, props: Record<string, unknown>): PolicyResource {
  const urn = `urn:pulumi:dev::guarded::${type}::${name}`;
  return {
    type,
    name,
    urn,
    props: unknownCheckingProxy(props),
    opts: {} as never,
    dependencies: [],
    propertyDependencies: {},
    isType: () => false,
    asType: () => undefined,
  };
}

function runStack(
  p: { validateStack: (a: StackValidationArgs, r: (m: string, urn?: string) => void) => unknown },
  resources: PolicyResource[],
  config = {},
) {
  const seen: { message: string; urn?: string }[] = [];
  const args = {
    resources,
    stackTags: new Map(),
    getConfig: <T>() => config as T,
    notApplicable: () => {
      throw new Error("not applicable");
    },
  };
  let thrown: unknown;
  try {
    p.validateStack(args, (message, urn) => seen.push({ message, urn }));
  } catch (e) {
    thrown = e;
  }
  return { seen, thrown };
}

function runResource(
  p: { validateResource?: unknown },
  type: string,
  name: string,
  props: Record<string, unknown>,
  config = {},
) {
  const messages: string[] = [];
  const args = {
    type,
    name,
    urn: `urn:pulumi:dev::guarded::${type}::${name}`,
    props: unknownCheckingProxy(props),
    getConfig: () => config,
  } as unknown as ResourceValidationArgs;
  (p.validateResource as (a: ResourceValidationArgs, r: (m: string) => void) => void)(args, (m) => messages.push(m));
  return messages;
}

const { IpPolicyRuleSet: SET, IpPolicyRule: RULE, ApiKey: KEY, TlsEdgeMutualTls: MTLS } = RESOURCES;

describe("the policies, as @pulumi/policy calls them", () => {
  it("know our resources by the plugin's type tokens and the dynamic classes' types, and nothing else", () => {
    expect([SET.token, SET.dynamicType, RULE.token, KEY.dynamicType].map(kindOf)).toEqual([
      "IpPolicyRuleSet",
      "IpPolicyRuleSet",
      "IpPolicyRule",
      "ApiKey",
    ]);
    expect(kindOf("pulumi-nodejs:dynamic:Resource")).toBeUndefined();
    expect(kindOf("aws:ec2/securityGroup:SecurityGroup")).toBeUndefined();
    expect(policies.map((p) => p.name)).toEqual([
      "accessctl-forbidden-ranges",
      "accessctl-widest-allow",
      "accessctl-useless-deny",
      "accessctl-api-key-description",
      "accessctl-api-key-rotation",
      "accessctl-mutual-tls",
    ]);
  });

  it("forbidden ranges: one line per allow, on the resource declaring it, across a set and a rule on one policy", () => {
    const set = stackResource(SET.token, "allow", {
      ipPolicyId: "ipp_1",
      rules: { "10.0.0.0/8": { action: "allow", id: "ipr_1" }, "198.51.100.7/32": { action: "deny" } },
    });
    const hand = stackResource(RULE.dynamicType, "everyone", {
      ipPolicyId: "ipp_1",
      cidr: "0.0.0.0/0",
      action: "allow",
      __provider: "…",
    });
    const other = stackResource(RULE.token, "elsewhere", { ipPolicyId: "ipp_2", cidr: "10.1.0.0/16", action: "allow" });
    const { seen } = runStack(forbiddenRanges, [set, hand, other], { ranges: ["10.1.0.0/16"] });
    expect(seen).toEqual([
      {
        urn: set.urn,
        message:
          'IpPolicyRuleSet "allow" on ipp_1: rule 10.0.0.0/8 allow makes a forbidden range reachable: 10.1.0.0/16 (65,536 addresses)',
      },
      {
        urn: hand.urn,
        message:
          'IpPolicyRule "everyone" on ipp_1: rule 0.0.0.0/0 allow allows all of IPv4: it makes reachable 0.0.0.0/0 except 198.51.100.7/32 (4,294,967,295 addresses)',
      },
      {
        urn: other.urn,
        message:
          'IpPolicyRule "elsewhere" on ipp_2: rule 10.1.0.0/16 allow makes a forbidden range reachable: 10.1.0.0/16 (65,536 addresses)',
      },
    ]);
    expect(seen.every((s) => !s.message.includes("\n"))).toBe(true);
  });

  it("a set whose rules a preview cannot know: the others are checked, then Pulumi's unknown-value error is thrown", () => {
    const unknown = stackResource(SET.token, "later", { ipPolicyId: "ipp_3", rules: unknownStringValue });
    const bad = stackResource(SET.token, "allow", {
      ipPolicyId: unknownStringValue,
      rules: { "::/0": { action: "allow" } },
    });
    const { seen, thrown } = runStack(forbiddenRanges, [unknown, bad]);
    expect(seen.map((s) => s.message)).toEqual([
      'IpPolicyRuleSet "allow" on an IP policy not known yet: rule ::/0 allow allows all of IPv6: it makes reachable ::/0 (340,282,366,920,938,463,463,374,607,431,768,211,456 addresses)',
    ]);
    expect((thrown as Error).constructor.name).toBe("UnknownValueError");
    expect(policiesOf([unknown, bad].map((r) => ({ ...r, props: r.props }))).policies).toHaveLength(1);
  });

  it("useless denies, across the stack's resources on the policy", () => {
    const set = stackResource(SET.dynamicType, "allow", {
      ipPolicyId: "ipp_1",
      rules: { "10.0.0.0/8": { action: "allow" }, "192.0.2.0/24": { action: "deny" } },
    });
    const rule = stackResource(RULE.token, "deny-one", { ipPolicyId: "ipp_1", cidr: "10.9.9.9/32", action: "deny" });
    const typo = stackResource(RULE.token, "typo", { ipPolicyId: "ipp_1", cidr: "10.0.0.1/8", action: "deny" }); // the provider's check refuses it
    expect(runStack(uselessDeny, [set, rule, typo]).seen).toEqual([
      {
        urn: set.urn,
        message:
          'IpPolicyRuleSet "allow" on ipp_1: rule 192.0.2.0/24 deny lies outside every allow of the policy: it takes nothing away (nothing there is allowed)',
      },
    ]);
  });

  it("widest allow, with its settings from the policy's config", () => {
    const props = {
      ipPolicyId: "ipp_1",
      rules: { "10.0.0.0/8": { action: "allow" }, "2001:db8::/32": { action: "allow" } },
    };
    expect(runResource(widestAllow, SET.token, "allow", props)).toEqual([]);
    expect(runResource(widestAllow, SET.token, "allow", props, { ipv4: 16 })).toEqual([
      'IpPolicyRuleSet "allow" on ipp_1: rule 10.0.0.0/8 allow is wider than /16, the widest IPv4 allow: it allows 10.0.0.0/8 (16,777,216 addresses)',
    ]);
    expect(runResource(widestAllow, KEY.token, "ci", { description: "x" }, { ipv4: 32 })).toEqual([]);
  });

  it("API keys and mutual TLS modules, by their inputs", () => {
    expect(runResource(keyDescription, KEY.dynamicType, "ci", { triggers: ["1"] })).toEqual([
      'ApiKey "ci" has no description: say what the key is for and who holds it (description)',
    ]);
    expect(runResource(keyRotation, KEY.token, "ci", { description: "CI" })).toEqual([
      'ApiKey "ci" has no triggers: Pulumi never rotates it; a change of triggers replaces the key with a new token',
    ]);
    expect(runResource(keyDescription, KEY.token, "ci", { description: "CI", triggers: ["1"] })).toEqual([]);
    expect(
      runResource(mutualTls, MTLS.token, "edge", { edgeId: "edgtls_1", enabled: false, certificateAuthorityIds: [] }),
    ).toEqual([
      'TlsEdgeMutualTls "edge" of edgtls_1 is switched off (enabled: false) and names no certificate authority (certificateAuthorityIds): clients reach the edge without a certificate it checks',
    ]);
    expect(
      runResource(mutualTls, MTLS.dynamicType, "edge", { edgeId: "edgtls_1", certificateAuthorityIds: ["ca_1"] }),
    ).toEqual([]);
    expect(runResource(mutualTls, KEY.token, "ci", {})).toEqual([]);
  });
});
