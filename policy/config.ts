// Each guardrail's settings: its name, default enforcement level, the JSON schema Pulumi checks its
// config against (`--policy-pack-config`, or a pack's own config), and the settings read with their
// defaults. A setting Pulumi's schema check cannot judge (a CIDR) is checked here, naming the policy,
// the setting and the limit.
import type { EnforcementLevel, PolicyConfigSchema } from "@pulumi/policy";
import { cidr } from "../provider/access";
import type { ForbiddenSettings, WidestSettings } from "./decide";

export const NAMES = {
  forbidden: "accessctl-forbidden-ranges",
  widest: "accessctl-widest-allow",
  uselessDeny: "accessctl-useless-deny",
  keyDescription: "accessctl-api-key-description",
  keyRotation: "accessctl-api-key-rotation",
  mutualTls: "accessctl-mutual-tls",
} as const;

export const LEVELS: Record<keyof typeof NAMES, EnforcementLevel> = {
  forbidden: "mandatory",
  widest: "mandatory",
  uselessDeny: "advisory",
  keyDescription: "mandatory",
  keyRotation: "advisory",
  mutualTls: "mandatory",
};

export const FORBIDDEN_DEFAULTS: ForbiddenSettings = { ranges: [], allowEverything: false };
export const WIDEST_DEFAULTS: WidestSettings = { ipv4: 8, ipv6: 32 };

export const FORBIDDEN_SCHEMA: PolicyConfigSchema = {
  properties: {
    ranges: {
      type: "array",
      items: { type: "string" },
      default: FORBIDDEN_DEFAULTS.ranges,
      description: "CIDRs that must never be reachable, IPv4 or IPv6, checked on each policy's effective access",
    },
    allowEverything: {
      type: "boolean",
      default: FORBIDDEN_DEFAULTS.allowEverything,
      description: "Whether an allow of 0.0.0.0/0 or ::/0 may stand",
    },
  },
};

export const WIDEST_SCHEMA: PolicyConfigSchema = {
  properties: {
    ipv4: {
      type: "integer",
      minimum: 0,
      maximum: 32,
      default: WIDEST_DEFAULTS.ipv4,
      description: "The shortest prefix length of an IPv4 allow",
    },
    ipv6: {
      type: "integer",
      minimum: 0,
      maximum: 128,
      default: WIDEST_DEFAULTS.ipv6,
      description: "The shortest prefix length of an IPv6 allow",
    },
  },
};

/** The forbidden-ranges settings with their defaults; a range that is no CIDR is an error naming it. */
export function forbiddenSettings(config: Partial<ForbiddenSettings>): ForbiddenSettings {
  const settings = { ...FORBIDDEN_DEFAULTS, ...config };
  settings.ranges.forEach((range, i) => {
    const problem = cidr(range);
    if (problem)
      throw new Error(`${NAMES.forbidden}: config ranges[${i}] must be a CIDR such as 10.0.0.0/8: ${problem}`);
  });
  return settings;
}

/** The widest-allow settings with their defaults (Pulumi's schema check holds them to 0–32 and 0–128). */
export function widestSettings(config: Partial<WidestSettings>): WidestSettings {
  return { ...WIDEST_DEFAULTS, ...config };
}
