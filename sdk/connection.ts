// What runs in the program process: the connection settings of the list helpers (the stack config,
// read when called and handed to each request rather than kept in a module variable), and the
// checks our resource classes make before registering anything.
import * as pulumi from "@pulumi/pulumi";
import {
  ConfigSource,
  configFrom,
  plainTextKey,
  plainTextPlanKey,
  plainTextTeamKey,
  profilesHoldKey,
} from "../provider/config";

export function programConfig(): ConfigSource {
  return configFrom((key) => pulumi.runtime.getConfig(key));
}

/**
 * Refuses, before anything is registered: the `import` option (Pulumi cannot import through a
 * dynamic provider: it fails with "code must be a string, not undefined"), and an API key kept in
 * plain text in the stack config (so in Pulumi.<stack>.yaml and in the state).
 */
export function checkResource(
  type: string,
  name: string,
  opts: pulumi.CustomResourceOptions | undefined,
  instead: string,
): void {
  if (opts?.import !== undefined) {
    throw new pulumi.RunError(
      `accessctl:${type} ${name}: the import option does not work with Pulumi dynamic providers; ${instead}`,
    );
  }
  // Pulumi marks the program's secret config keys for the SDK; the function is internal, so look before using it.
  const isSecret = (pulumi.runtime as unknown as { isConfigSecret?: (key: string) => boolean }).isConfigSecret;
  if (pulumi.runtime.getConfig("accessctl:apiKey") !== undefined && isSecret && !isSecret("accessctl:apiKey")) {
    throw new pulumi.RunError(plainTextKey());
  }
  if (pulumi.runtime.getConfig("accessctl:teamKey") !== undefined && isSecret && !isSecret("accessctl:teamKey")) {
    throw new pulumi.RunError(plainTextTeamKey());
  }
  if (profilesHoldKey(pulumi.runtime.getConfig("accessctl:profiles")) && isSecret && !isSecret("accessctl:profiles")) {
    throw new pulumi.RunError(plainTextKey("accessctl:profiles"));
  }
  if (pulumi.runtime.getConfig("accessctl:planKey") !== undefined && isSecret && !isSecret("accessctl:planKey")) {
    throw new pulumi.RunError(plainTextPlanKey());
  }
}

/**
 * A set's `ignoreChanges` may name `rules` as a whole, not a part of it: the program declares a list
 * and the state keys the rules by CIDR, so Pulumi cannot match such a path; it says "cannot ignore
 * changes in added or removed elements" and makes the change all the same.
 */
export function checkRulesIgnored(name: string, opts: pulumi.CustomResourceOptions | undefined): void {
  const part = (opts?.ignoreChanges ?? []).find((p) => /^rules\s*[[.]/.test(p));
  if (part !== undefined) {
    throw new pulumi.RunError(
      `accessctl:IpPolicyRuleSet ${name}: ignoreChanges "${part}" names a part of rules, which Pulumi cannot match ` +
        `(the state keys the rules by CIDR), so the change would be made all the same. ` +
        'Ignore "rules" as a whole, or keep the rule out of the set (an IpPolicyRule on another policy)',
    );
  }
}
