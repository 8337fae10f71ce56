// A user's TypeScript program, as `pulumi new typescript` would leave it plus our package: typed
// args, outputs used in exports, config read with pulumi.Config.
import * as pulumi from "@pulumi/pulumi";
import * as accessctl from "@accessctl/pulumi";

const config = new pulumi.Config();
const officeArgs: accessctl.IpPolicyRuleArgs = {
  ipPolicyId: config.require("ipPolicyId"),
  cidr: "192.0.2.0/24",
  action: "allow",
  description: config.get("officeDescription") ?? "office",
};
const office = new accessctl.IpPolicyRule("office", officeArgs);
const deployer = new accessctl.ApiKey("deployer", { description: "deploys the office policy" });
// A policy as one resource: every rule of another policy (a set owns its policy's rules).
const partners = new accessctl.IpPolicyRuleSet("partners", {
  ipPolicyId: config.require("partnersPolicyId"),
  rules: [
    { cidr: "198.51.100.0/24", action: "allow", description: "partner A" },
    { cidr: "2001:db8:1::/48", action: "allow" },
  ],
});
const edge = new accessctl.TlsEdgeMutualTls("edge", {
  edgeId: config.require("edgeId"),
  certificateAuthorityIds: config.requireObject<string[]>("certificateAuthorityIds"),
});

export const officeId: pulumi.Output<string> = office.id;
export const officeCidr: pulumi.Output<string> = office.cidr;
export const deployerToken = deployer.token; // a secret
export const authorities = edge.certificateAuthorities.apply((cas) => cas.map((ca) => ca.id));
export const partnerCidrs = partners.rules.apply((rules) => Object.keys(rules));
export const nodeVersion = process.versions.node;
