export { ApiKey, ApiKeyArgs, ApiKeyInfo, listApiKeys, listApiKeysOutput } from "./api-key";
export { IpPolicyRule, IpPolicyRuleArgs, IpPolicyRuleInfo, listIpPolicyRules, listIpPolicyRulesOutput } from "./ip-policy-rule";
export { TlsEdgeMutualTls, TlsEdgeMutualTlsArgs } from "./tls-edge-mutual-tls";
