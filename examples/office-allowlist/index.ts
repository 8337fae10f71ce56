// The office allowlist: "the policy holds exactly these ranges", as one IpPolicyRuleSet. Any rule
// added to the policy by hand makes `pulumi preview --refresh --expect-no-changes` fail (the preview
// names its CIDR), and the next `pulumi up --refresh` deletes it (a plain `pulumi up` plans from the
// state, which does not know it: it leaves it and warns).
//
//   pulumi config set ipPolicyId ipp_…
//   pulumi config set --path 'allow[0].cidr' 203.0.113.0/24
//   pulumi config set --path 'allow[0].description' 'Berlin office'
//   pulumi config set --path 'deny[0]' 198.51.100.0/24          # optional: ranges to deny
//   pulumi config set takeOver true                              # only if the policy holds rules already:
//                                                                # the first up takes them as they are, the next
//                                                                # brings them to the declaration
import * as pulumi from "@pulumi/pulumi";
import * as accessctl from "@accessctl/pulumi";

const config = new pulumi.Config();
// Each entry a CIDR, or {cidr, description}.
type Entry = string | { cidr: string; description?: string };
const entries = (key: string, action: "allow" | "deny") =>
  (config.getObject<Entry[]>(key) ?? []).map((e) =>
    typeof e === "string" ? { cidr: e, action } : { cidr: e.cidr, description: e.description, action },
  );

const allowlist = new accessctl.IpPolicyRuleSet("office-allowlist", {
  ipPolicyId: config.require("ipPolicyId"),
  rules: [...entries("allow", "allow"), ...entries("deny", "deny")],
  takeOver: config.getBoolean("takeOver") ?? false,
});

export const ipPolicyId = allowlist.ipPolicyId;
// `rules` holds every rule of the policy under its canonical CIDR ("198.51.100.7" is "198.51.100.7/32").
export const cidrs = allowlist.rules.apply((rules) =>
  Object.entries(rules)
    .map(([cidr, r]) => `${r.action} ${cidr}`)
    .sort(),
);
