// /ip_policy_rules: create, get, list, update (description, metadata, cidr), delete.
import * as ipaddr from "ipaddr.js";
import {
  IP_POLICY_RULES_PATH,
  IpPolicyRuleBody,
  IpPolicyRuleList,
  RULE_ACTIONS,
  RuleAction,
} from "../contract/ip-policy-rule";
import { answerText, checkByteLimits, checkFields, Ctx, found, page, textFields } from "./api";
import { apiError, notFound } from "./errors";
import { Reply } from "./http";
import { RuleRecord } from "./records";

/**
 * The service's reading of a CIDR: IPv4 in dotted decimal or IPv6, with a prefix length (an
 * address alone is one host: /32, /128), and equal to the network address of its range. Gives the stored form (IPv6
 * compressed, lower case; an IPv4-mapped IPv6 range as its IPv4 range), or why it is refused. See also parseCidr in
 * provider/ip-policy-rule.ts: the provider's own reading, written separately on purpose so that
 * test/provider/agreement.test.ts compares two readings.
 */
export function parseCidr(text: string): { cidr: string } | { reason: string } {
  const slash = text.indexOf("/");
  // "An IP or IP range" (contract 2.2): one address is the range of that one host.
  if (slash < 0) return parseCidr(`${text}/${text.includes(":") ? "128" : "32"}`);
  const address = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) return { reason: "has an invalid prefix length" };
  const prefix = Number(prefixText);
  if (ipaddr.IPv4.isValidFourPartDecimal(address) && !/(^|\.)0[0-9]/.test(address)) {
    if (prefix > 32) return { reason: "has a prefix length over 32" };
    const network = ipaddr.IPv4.networkAddressFromCIDR(`${address}/${prefix}`).toString();
    return network === address ? { cidr: text } : { reason: `has host bits set; did you mean ${network}/${prefix}?` };
  }
  const hex = address.includes(":") && !address.includes("%") ? embeddedIpv4AsHex(address) : undefined;
  if (hex !== undefined && ipaddr.IPv6.isValid(hex)) {
    if (prefix > 128) return { reason: "has a prefix length over 128" };
    const ipv6 = ipaddr.IPv6.parse(hex);
    // An IPv4-mapped range (::ffff:a.b.c.d/96+n) is the IPv4 range a.b.c.d/n, and is stored as that.
    if (prefix >= 96 && ipv6.isIPv4MappedAddress())
      return parseCidr(`${ipv6.toIPv4Address().toString()}/${prefix - 96}`);
    const network = ipaddr.IPv6.networkAddressFromCIDR(`${hex}/${prefix}`).toString();
    return network === ipv6.toString()
      ? { cidr: `${network}/${prefix}` }
      : { reason: `has host bits set; did you mean ${network}/${prefix}?` };
  }
  return { reason: "is not an IPv4 or IPv6 address range" };
}

/**
 * An IPv6 address with its trailing dotted quad (`::ffff:10.0.0.1`) written as two groups
 * (`::ffff:a00:1`); undefined when that quad is not four decimal octets without leading zeros.
 * ipaddr.js alone reads `::1.2.3.4` as `::ffff:1.2.3.4` and takes `010.0.0.1`.
 */
function embeddedIpv4AsHex(address: string): string | undefined {
  const colon = address.lastIndexOf(":");
  const quad = address.slice(colon + 1);
  if (!quad.includes(".")) return address;
  if (!ipaddr.IPv4.isValidFourPartDecimal(quad) || /(^|\.)0[0-9]/.test(quad)) return undefined;
  const [a, b, c, d] = ipaddr.IPv4.parse(quad).octets;
  return `${address.slice(0, colon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

function canonicalCidr(text: string): string {
  const parsed = parseCidr(text);
  if ("cidr" in parsed) return parsed.cidr;
  // Echoed only when it is short and made of the characters of an address.
  const echo = text.length <= 64 && /^[0-9a-fA-F:./%]*$/.test(text) ? JSON.stringify(text) : "(not echoed)";
  throw apiError(400, "ERR_INVALID_CIDR", `cidr ${echo} ${parsed.reason}`);
}

function view(ctx: Ctx, rule: RuleRecord, listed = false): IpPolicyRuleBody {
  return {
    id: rule.id,
    uri: `${ctx.baseUrl}${IP_POLICY_RULES_PATH}/${encodeURIComponent(rule.id)}`,
    created_at: rule.createdAt,
    ...answerText(rule, listed),
    cidr: rule.cidr,
    ip_policy: { id: rule.ipPolicyId, uri: `${ctx.baseUrl}/ip_policies/${encodeURIComponent(rule.ipPolicyId)}` },
    action: rule.action,
  };
}

const find = (ctx: Ctx): RuleRecord => found(ctx, ctx.store.ipPolicyRules, "IP policy rule");

export function create(ctx: Ctx): Reply {
  checkFields(ctx.body, {
    cidr: "string",
    ip_policy_id: "string",
    action: "string",
    description: "string",
    metadata: "string",
  });
  for (const field of ["cidr", "ip_policy_id", "action"]) {
    if (ctx.body[field] === undefined) throw apiError(400, "ERR_MISSING_FIELD", `${field} is required`);
  }
  const action = ctx.body.action as RuleAction;
  if (!RULE_ACTIONS.includes(action))
    throw apiError(400, "ERR_INVALID_ACTION", `action must be ${RULE_ACTIONS.map((a) => `"${a}"`).join(" or ")}`);
  checkByteLimits(ctx.body);
  const cidr = canonicalCidr(ctx.body.cidr as string);
  const ipPolicyId = ctx.body.ip_policy_id as string;
  if (!ctx.account.ipPolicies.includes(ipPolicyId)) throw notFound("IP policy", ipPolicyId);
  const rule = ctx.store.createRule(ctx.account, { ipPolicyId, cidr, action, ...textFields(ctx.body) });
  return { status: 201, body: view(ctx, rule) };
}

export function get(ctx: Ctx): Reply {
  return { status: 200, body: view(ctx, find(ctx)) };
}

export function list(ctx: Ctx): Reply {
  const { items, uri, next_page_uri } = page(ctx, IP_POLICY_RULES_PATH, ctx.store.ipPolicyRules);
  return {
    status: 200,
    body: { ip_policy_rules: items.map((r) => view(ctx, r, true)), uri, next_page_uri } satisfies IpPolicyRuleList,
  };
}

export function update(ctx: Ctx): Reply {
  const rule = find(ctx);
  checkFields(
    ctx.body,
    { description: "string", metadata: "string", cidr: "string" },
    {
      action: "the action of a rule cannot be changed; create a new rule instead",
      ip_policy_id: "the IP policy of a rule cannot be changed; create a new rule instead",
    },
  );
  checkByteLimits(ctx.body);
  const cidr = typeof ctx.body.cidr === "string" ? canonicalCidr(ctx.body.cidr) : undefined;
  return { status: 200, body: view(ctx, ctx.store.updateRule(rule, { cidr, ...textFields(ctx.body) })) };
}

export function remove(ctx: Ctx): Reply {
  ctx.store.deleteRule(find(ctx));
  return { status: 204 };
}
