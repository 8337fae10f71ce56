#!/usr/bin/env node
// accessctl-export: prints a Pulumi TypeScript program (an index.ts) that declares what exists in an
// account, so that `pulumi up` of it takes the objects under management without changing them:
// each policy's rules as one IpPolicyRuleSet with takeOver (default) or, with --rules, one
// IpPolicyRule per rule with adoptId; with --keys, every API key as a read-only ApiKey.get. With
// --access, no program: each policy's effective access (provider/access.ts) as CIDRs with counts, and
// what each rule makes of it; --json for scripts.
// Credentials come from ACCESSCTL_API_URL / ACCESSCTL_API_KEY, read here and never printed.
import { ApiKeyBody, API_KEYS_PATH } from "../contract/api-key";
import { ID_PREFIX } from "../contract/common";
import { IP_POLICY_RULES_PATH, IpPolicyRuleBody } from "../contract/ip-policy-rule";
import { compareCidrs, explainAccess } from "../provider/access";
import { describeSpace, plural } from "../provider/messages";
import { listAll } from "../provider/http/pages";
import { checkApiUrl, ConfigSource, envVar } from "../provider/config";
import { liveInputs } from "../provider/fields";
import { FIELDS as RULE_FIELDS, IpPolicyRuleInputs, toOutputs } from "../provider/ip-policy-rule";
import { idProblem } from "../provider/validate";

const USAGE = `usage: accessctl-export --policy ipp_… [--policy ipp_…] [--keys] [--rules]
       accessctl-export --access [--json] --policy ipp_… [--policy ipp_…]
  Prints to stdout a Pulumi program (index.ts) declaring the rules of each policy and, with --keys,
  every API key (read-only, ApiKey.get). Reads ACCESSCTL_API_URL and ACCESSCTL_API_KEY.
  --rules   one IpPolicyRule per rule with adoptId, instead of one IpPolicyRuleSet per policy with takeOver
  --access  instead of a program, each policy's effective access as the service decides it (allowed: in
            some allow rule and in no deny rule): its CIDRs with address counts, the allow rules behind
            each, and what each rule lets in or keeps out
  --json    with --access: the same as JSON (counts as decimal strings)
`;
const WHOLE_COMMAND_MS = 15 * 60_000; // each request and page walk has its own bounds; this caps the rest

export interface ExportOptions {
  policies: string[];
  keys: boolean;
  form: "set" | "rules";
  /** --access: the policies' access, not a program (`json`: as JSON). */
  access?: "text" | "json";
}

/** The command line, or an Error naming what is wrong. */
export function parseArgs(argv: string[]): ExportOptions | { help: true } {
  const options: ExportOptions = { policies: [], keys: false, form: "set" };
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--help" || arg === "-h") return { help: true };
    else if (arg === "--keys") options.keys = true;
    else if (arg === "--rules") options.form = "rules";
    else if (arg === "--access") options.access = "text";
    else if (arg === "--json") json = true;
    else if (arg === "--policy" || arg.startsWith("--policy=")) {
      const value = arg === "--policy" ? argv[++i] : arg.slice("--policy=".length);
      const problem = value === undefined ? "needs a value (ipp_…)" : idProblem(value, [ID_PREFIX.ipPolicy]);
      if (problem) throw new Error(`--policy ${problem}`);
      if (!options.policies.includes(value)) options.policies.push(value);
    } else throw new Error(`unknown argument ${JSON.stringify(arg.slice(0, 80))}`);
  }
  if (json && !options.access) throw new Error("--json goes with --access");
  if (options.access) {
    if (options.keys || options.form === "rules") {
      throw new Error("--access prints access, not a program: --keys and --rules do not go with it");
    }
    if (!options.policies.length) throw new Error("--access needs --policy ipp_…");
    if (json) options.access = "json";
  }
  if (!options.policies.length && !options.keys)
    throw new Error("nothing to export: give --policy ipp_… and/or --keys");
  return options;
}

/**
 * A string as a TypeScript literal: JSON's escaping covers quotes, backslashes,
 * control characters and lone surrogates; `${` means nothing in "…".
 */
const literal = (value: string) => JSON.stringify(value);

/** Pulumi resource names: letters, digits and `-`, unique within the program. */
function namer() {
  const used: string[] = [];
  return (wanted: string) => {
    const base = wanted.replace(/[^A-Za-z0-9_]+/g, "-").replace(/^-+|-+$/g, "") || "object";
    let name = base;
    for (let n = 2; used.includes(name); n++) name = `${base}-${n}`;
    used.push(name);
    return name;
  };
}

/**
 * The fields of a rule as the program declares them (the rule's table:
 * description and metadata only when set); the policy is written apart.
 */
function ruleFields(rule: IpPolicyRuleBody, indent: string): string[] {
  const { ipPolicyId: _policy, ...declared } = liveInputs<IpPolicyRuleInputs>(RULE_FIELDS, toOutputs(rule));
  return Object.entries(declared).map(([property, value]) => `${indent}${property}: ${literal(String(value))},`);
}

/** The program: pure, from what was read. */
export function programText(
  options: ExportOptions,
  rulesByPolicy: Record<string, IpPolicyRuleBody[]>,
  keys: ApiKeyBody[],
): string {
  const name = namer();
  const out = [
    "// Generated by accessctl-export: what the account holds, declared so that `pulumi up` takes it",
    "// over without changing anything. Credentials: accessctl:apiUrl / accessctl:apiKey (--secret) or",
    "// ACCESSCTL_API_URL / ACCESSCTL_API_KEY. See docs/guides/existing-objects.md of @accessctl/pulumi, " +
      '"accessctl-export: an account as a program".',
    'import * as accessctl from "@accessctl/pulumi";',
    "",
  ];
  for (const policy of options.policies) {
    const rules = [...(rulesByPolicy[policy] ?? [])].sort((a, b) => (a.cidr < b.cidr ? -1 : a.cidr > b.cidr ? 1 : 0));
    out.push(`// IP policy ${policy}: ${rules.length} rule${rules.length === 1 ? "" : "s"}`);
    if (options.form === "set") {
      out.push(
        `new accessctl.IpPolicyRuleSet(${literal(name(policy))}, {`,
        `  ipPolicyId: ${literal(policy)},`,
        "  takeOver: true,",
        "  rules: [",
      );
      for (const rule of rules) out.push("    {", ...ruleFields(rule, "      "), "    },");
      out.push("  ],", "});");
    } else {
      const prefix = options.policies.length > 1 ? `${policy}-` : "";
      for (const rule of rules) {
        out.push(
          `new accessctl.IpPolicyRule(${literal(name(`${prefix}${rule.action}-${rule.cidr}`))}, {`,
          `  ipPolicyId: ${literal(policy)},`,
          ...ruleFields(rule, "  "),
          `  adoptId: ${literal(rule.id)},`,
          "});",
        );
      }
    }
    out.push("");
  }
  if (options.keys) {
    out.push(`// API keys: ${keys.length}, looked up read-only (pulumi never changes or deletes them)`);
    for (const key of keys) {
      // A comment ends at a line break: JSON escapes \n and \r, and U+2028/U+2029 are escaped here.
      const about = key.description
        ? ` // ${JSON.stringify(key.description)
            .slice(1, -1)
            .replace(/[\u2028\u2029]/g, " ")
            .slice(0, 80)}`
        : "";
      out.push(`accessctl.ApiKey.get(${literal(name(key.id))}, ${literal(key.id)});${about}`);
    }
    out.push("");
  }
  return out.join("\n");
}

// ---- --access: what each policy lets in, and which rules make it ------------------------------

/** A policy's access as data: counts as decimal strings (JSON has no big integers); rules in CIDR order. */
export function accessOfPolicy(policy: string, bodies: IpPolicyRuleBody[]) {
  const rules = [...bodies].sort((a, b) => compareCidrs(a.cidr, b.cidr));
  const x = explainAccess(rules.map((r) => ({ cidr: r.cidr, action: r.action })));
  return {
    ipPolicyId: policy,
    ipv4Addresses: String(x.space.v4Count),
    ipv6Addresses: String(x.space.v6Count),
    cidrs: x.cidrs.map((c) => ({
      cidr: c.cidr,
      addresses: String(c.count),
      allowedBy: c.allows.map((i) => rules[i].id),
    })),
    // An allow: the addresses of its range the policy lets in; a deny: those some allow would let in that it keeps out.
    rules: rules.map((r, i) => ({ id: r.id, cidr: r.cidr, action: r.action, addresses: String(x.rules[i]) })),
    words: describeSpace(x.space),
  };
}

/** The access of each policy in words: a head line, a line per CIDR, a line per rule. */
export function accessText(policies: ReturnType<typeof accessOfPolicy>[]): string {
  const out: string[] = [];
  for (const p of policies) {
    const allows = p.rules.filter((r) => r.action === "allow").length;
    const counts = `${allows} allow, ${p.rules.length - allows} deny`;
    out.push(`IP policy ${p.ipPolicyId}: ${plural(p.rules.length, "rule")} (${counts})`);
    out.push(`  lets in ${p.words}`);
    for (const c of p.cidrs) {
      const addresses = plural(BigInt(c.addresses), "address", "addresses");
      out.push(`  ${c.cidr}: ${addresses}, allowed by ${c.allowedBy.join(", ")}`);
    }
    out.push("  rules:");
    for (const r of p.rules) {
      const n = BigInt(r.addresses);
      const addresses = plural(n, "address", "addresses");
      const effect =
        r.action === "allow"
          ? `lets in ${n ? addresses : "nothing: deny rules cover its whole range"}`
          : `keeps out ${n ? addresses : "nothing: no allow rule holds its range"}`;
      out.push(`    ${r.cidr} ${r.action} (${r.id}): ${effect}`);
    }
    out.push("");
  }
  return out.join("\n");
}

/** The connection from the environment, checked as the provider checks a URL. */
function source(): ConfigSource {
  const apiUrl = process.env[envVar("API_URL")];
  const apiKey = process.env[envVar("API_KEY")];
  if (!apiUrl) throw new Error(`set ${envVar("API_URL")} to the API's base URL (https://…, or http:// to loopback)`);
  if (!apiKey) throw new Error(`set ${envVar("API_KEY")} to an API key of the account`);
  checkApiUrl(apiUrl, envVar("API_URL"));
  return { apiUrl, apiKey, fromEnv: ["apiUrl", "apiKey"] };
}

export async function exportProgram(options: ExportOptions): Promise<string> {
  const config = source();
  const rulesByPolicy: Record<string, IpPolicyRuleBody[]> = {};
  if (options.policies.length) {
    for await (const rule of listAll<IpPolicyRuleBody>(
      IP_POLICY_RULES_PATH,
      "ip_policy_rules",
      "list IP policy rules",
      config,
    )) {
      if (options.policies.includes(rule.ip_policy?.id)) (rulesByPolicy[rule.ip_policy.id] ??= []).push(rule);
    }
  }
  if (options.access) {
    const policies = options.policies.map((p) => accessOfPolicy(p, rulesByPolicy[p] ?? []));
    return options.access === "json" ? `${JSON.stringify({ policies }, null, 2)}\n` : accessText(policies);
  }
  const keys: ApiKeyBody[] = [];
  if (options.keys)
    for await (const key of listAll<ApiKeyBody>(API_KEYS_PATH, "keys", "list API keys", config)) keys.push(key);
  return programText(options, rulesByPolicy, keys);
}

async function main(): Promise<number> {
  let options;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`accessctl-export: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  if ("help" in options) {
    process.stdout.write(USAGE);
    return 0;
  }
  const text = await exportProgram(options);
  await new Promise<void>((resolve) => process.stdout.write(text, () => resolve()));
  return 0;
}

if (require.main === module) {
  setTimeout(() => {
    process.stderr.write(`accessctl-export: gave up after ${WHOLE_COMMAND_MS / 60_000} minutes\n`);
    process.exit(1);
  }, WHOLE_COMMAND_MS).unref();
  main().then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`accessctl-export: ${err && err.message ? err.message : err}\n`);
      process.exit(1);
    },
  );
}
