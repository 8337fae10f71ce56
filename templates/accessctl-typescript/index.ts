// ${PROJECT}: access control declared with @accessctl/pulumi. Reference: node_modules/@accessctl/pulumi/docs/reference/.
import * as pulumi from "@pulumi/pulumi";
import * as accessctl from "@accessctl/pulumi";

const config = new pulumi.Config();
const ipPolicyId = config.require("ipPolicyId");

// A key for CI; its token is a secret output, known only to the run that creates the key.
const ci = new accessctl.ApiKey("ci", { description: "CI deploy key" });

// One rule per range: changing a CIDR or description updates the rule, changing an action replaces it.
const rules = [
  { name: "office", cidr: "203.0.113.0/24", action: "allow", description: "office" },
  { name: "scanner", cidr: "198.51.100.0/24", action: "deny", description: "known scanner" },
] as const;
for (const r of rules)
  new accessctl.IpPolicyRule(r.name, { ipPolicyId, cidr: r.cidr, action: r.action, description: r.description });

// The edge's mutual TLS module, set as a whole (declaring the edge takes its module over).
const mtls = new accessctl.TlsEdgeMutualTls("edge", {
  edgeId: config.require("edgeId"),
  certificateAuthorityIds: config.requireObject<string[]>("certificateAuthorityIds"),
});

export const ciKeyId = ci.id;
export const ciToken = ci.token;
export const mutualTlsEnabled = mtls.enabled;
