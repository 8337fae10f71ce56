// /ip_policy_rules: create, get, list, update (description, metadata, cidr), delete.
import * as ipaddr from "ipaddr.js";
import { apiError, checkByteLimits, checkFields, Ctx, notFound, optionalText, page, Route } from "./server";
import { newId, RuleRecord } from "./store";

/**
 * The service's reading of a CIDR: IPv4 in dotted decimal or IPv6, with a prefix length, and
 * equal to the network address of its range. Returns the stored form (IPv6 compressed, lower case).
 */
export function canonicalCidr(cidr: string): string {
  const echo = cidr.length <= 64 && /^[0-9a-fA-F:.\/%]*$/.test(cidr) ? JSON.stringify(cidr) : "(not echoed)";
  const bad = (why: string) => apiError(400, "ERR_INVALID_CIDR", `cidr ${echo} ${why}`);
  const slash = cidr.indexOf("/");
  if (slash < 0) throw bad("has no prefix length; write it as address/prefix, e.g. 203.0.113.0/24");
  const address = cidr.slice(0, slash);
  const prefixText = cidr.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) throw bad("has an invalid prefix length");
  const prefix = Number(prefixText);
  let network: string;
  if (ipaddr.IPv4.isValidFourPartDecimal(address) && !/(^|\.)0[0-9]/.test(address)) {
    if (prefix > 32) throw bad("has a prefix length over 32");
    network = ipaddr.IPv4.networkAddressFromCIDR(`${address}/${prefix}`).toString();
    if (network !== address) throw bad(`has host bits set; did you mean ${network}/${prefix}?`);
    return cidr;
  }
  if (address.includes(":") && !address.includes("%") && ipaddr.IPv6.isValid(address)) {
    if (prefix > 128) throw bad("has a prefix length over 128");
    const given = ipaddr.IPv6.parse(address).toString();
    network = ipaddr.IPv6.networkAddressFromCIDR(`${address}/${prefix}`).toString();
    if (network !== given) throw bad(`has host bits set; did you mean ${network}/${prefix}?`);
    return `${network}/${prefix}`;
  }
  throw bad("is not an IPv4 or IPv6 address range");
}

function view(ctx: Ctx, rule: RuleRecord) {
  return {
    id: rule.id,
    uri: `${ctx.baseUrl}/ip_policy_rules/${encodeURIComponent(rule.id)}`,
    created_at: rule.createdAt,
    ...optionalText(rule),
    cidr: rule.cidr,
    ip_policy: { id: rule.ipPolicyId, uri: `${ctx.baseUrl}/ip_policies/${encodeURIComponent(rule.ipPolicyId)}` },
    action: rule.action,
  };
}

function find(ctx: Ctx): RuleRecord {
  const id = ctx.params[0];
  const rule = ctx.store.rules.find((r) => r.id === id && r.accountId === ctx.account.id);
  if (!rule) throw notFound("IP policy rule", id);
  return rule;
}

function refuseDuplicate(ctx: Ctx, ipPolicyId: string, cidr: string, except?: RuleRecord): void {
  const clash = ctx.store.rules.find((r) => r !== except && r.ipPolicyId === ipPolicyId && r.accountId === ctx.account.id && r.cidr === cidr);
  if (clash) throw apiError(409, "ERR_CONFLICT", `IP policy ${ipPolicyId} already has a rule for ${cidr}: ${clash.id}`);
}

export const routes: Route[] = [
  {
    pattern: /^\/ip_policy_rules$/,
    methods: {
      POST(ctx) {
        checkFields(ctx.body, { cidr: "string", ip_policy_id: "string", action: "string", description: "string", metadata: "string" });
        for (const field of ["cidr", "ip_policy_id", "action"]) {
          if (ctx.body[field] === undefined) throw apiError(400, "ERR_MISSING_FIELD", `${field} is required`);
        }
        const action = ctx.body.action as string;
        if (action !== "allow" && action !== "deny") {
          throw apiError(400, "ERR_INVALID_ACTION", `action must be "allow" or "deny", got ${JSON.stringify(action)}`);
        }
        checkByteLimits(ctx.body);
        const cidr = canonicalCidr(ctx.body.cidr as string);
        const ipPolicyId = ctx.body.ip_policy_id as string;
        if (!ctx.account.ipPolicies.includes(ipPolicyId)) throw notFound("IP policy", ipPolicyId);
        refuseDuplicate(ctx, ipPolicyId, cidr);
        const rule: RuleRecord = {
          id: newId("ipr_"),
          accountId: ctx.account.id,
          ipPolicyId,
          cidr,
          action,
          description: (ctx.body.description as string | undefined) ?? "",
          metadata: (ctx.body.metadata as string | undefined) ?? "",
          createdAt: new Date().toISOString(),
          seq: ctx.store.nextSeq(),
        };
        ctx.store.rules.push(rule);
        ctx.store.save();
        return { status: 201, body: view(ctx, rule) };
      },
      GET(ctx) {
        const rules = ctx.store.rules.filter((r) => r.accountId === ctx.account.id);
        const { page: items, uri, next_page_uri } = page(ctx, "/ip_policy_rules", rules);
        return { status: 200, body: { ip_policy_rules: items.map((r) => view(ctx, r)), uri, next_page_uri } };
      },
    },
  },
  {
    pattern: /^\/ip_policy_rules\/([^/]+)$/,
    methods: {
      GET(ctx) {
        return { status: 200, body: view(ctx, find(ctx)) };
      },
      PATCH(ctx) {
        const rule = find(ctx);
        checkFields(ctx.body, { description: "string", metadata: "string", cidr: "string" }, {
          action: "the action of a rule cannot be changed; create a new rule instead",
          ip_policy_id: "the IP policy of a rule cannot be changed; create a new rule instead",
        });
        checkByteLimits(ctx.body);
        const cidr = typeof ctx.body.cidr === "string" ? canonicalCidr(ctx.body.cidr) : rule.cidr;
        refuseDuplicate(ctx, rule.ipPolicyId, cidr, rule);
        rule.cidr = cidr;
        if (typeof ctx.body.description === "string") rule.description = ctx.body.description;
        if (typeof ctx.body.metadata === "string") rule.metadata = ctx.body.metadata;
        ctx.store.save();
        return { status: 200, body: view(ctx, rule) };
      },
      DELETE(ctx) {
        const rule = find(ctx);
        ctx.store.rules.splice(ctx.store.rules.indexOf(rule), 1);
        ctx.store.save();
        return { status: 204 };
      },
    },
  },
];
