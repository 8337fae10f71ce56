// IpPolicyRuleSet, the provider module as hosts load it: the code is in ./ip-policy-rule-set/ (its
// index.ts says how it reads). This file keeps the module's name: a dynamic provider serialized by
// an installed package requires dist/provider/ip-policy-rule-set.js, and states keep that text.
export * from "./ip-policy-rule-set/index";
