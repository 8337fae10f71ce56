export { ApiKey, ApiKeyArgs, ApiKeyInfo, listApiKeys, listApiKeysOutput } from "./api-key";
export {
  IpPolicyRule,
  IpPolicyRuleArgs,
  IpPolicyRuleInfo,
  listIpPolicyRules,
  listIpPolicyRulesOutput,
} from "./ip-policy-rule";
export { IpPolicyRuleSet, IpPolicyRuleSetArgs } from "./ip-policy-rule-set";
export type { IpPolicyRuleSetMember, IpPolicyRuleSetRule } from "../provider/ip-policy-rule-set";
export { TlsEdgeMutualTls, TlsEdgeMutualTlsArgs } from "./tls-edge-mutual-tls";
export type { Reference } from "../provider/fields";
