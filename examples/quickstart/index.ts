// The quickstart stack: an API key for CI, allow and deny rules for IPv4 and IPv6 ranges, and the
// mutual TLS module of a TLS edge. `npm start` deploys it to the emulator, and so does `pulumi up` at
// the repository root (index.ts there is this file); point it at a real service with
// `pulumi config set accessctl:apiUrl …` and `pulumi config set --secret accessctl:apiKey …`.
import * as pulumi from "@pulumi/pulumi";
import * as accessctl from "@accessctl/pulumi";

const config = new pulumi.Config();
const ipPolicyId = config.require("ipPolicyId");
const edgeId = config.require("edgeId");
const certificateAuthorityIds = config.requireObject<string[]>("certificateAuthorityIds");

const ci = new accessctl.ApiKey("ci", { description: "CI deploy key", metadata: '{"team":"infra"}' });

const rules = [
  { name: "office", cidr: "203.0.113.0/24", action: "allow", description: "HQ" },
  { name: "office-v6", cidr: "2001:db8:1234::/48", action: "allow", description: "HQ (IPv6)" },
  { name: "scanner", cidr: "198.51.100.0/24", action: "deny", description: "known scanner" },
  { name: "scanner-v6", cidr: "2001:db8:dead::/48", action: "deny", description: "known scanner (IPv6)" },
] as const;
const ruleResources = rules.map(
  (r) => new accessctl.IpPolicyRule(r.name, { ipPolicyId, cidr: r.cidr, action: r.action, description: r.description }),
);

const mtls = new accessctl.TlsEdgeMutualTls("edge", { edgeId, certificateAuthorityIds, enabled: true });

export const ciKeyId = ci.id;
export const ciToken = ci.token; // a secret
export const ruleIds = ruleResources.map((r) => r.id);
export const mutualTlsAuthorities = mtls.certificateAuthorities.apply((cas) => cas.map((ca) => ca.id));
