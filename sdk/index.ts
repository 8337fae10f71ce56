export { ApiKey, ApiKeyArgs, ApiKeyInfo, listApiKeys } from "./api-key";
export { IpPolicyRule, IpPolicyRuleArgs, IpPolicyRuleInfo, listIpPolicyRules } from "./ip-policy-rule";
export { TlsEdgeMutualTls, TlsEdgeMutualTlsArgs } from "./tls-edge-mutual-tls";
