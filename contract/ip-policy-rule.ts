// IP policy rules on the wire (contract §2.2, §4.2).
import { ListEnvelope, Ref } from "./common";

export const RULE_ACTIONS = ["allow", "deny"] as const;
export type RuleAction = (typeof RULE_ACTIONS)[number];

/** An IP policy rule as the API returns it. */
export interface IpPolicyRuleBody {
  id: string;
  uri: string;
  created_at: string;
  description?: string;
  metadata?: string;
  cidr: string;
  ip_policy: Ref;
  action: RuleAction;
}

export interface IpPolicyRuleCreateBody {
  cidr: string;
  ip_policy_id: string;
  action: RuleAction;
  description?: string;
  metadata?: string;
}

/** Update cannot change `action` or the owning policy. */
export interface IpPolicyRuleUpdateBody {
  description?: string;
  metadata?: string;
  cidr?: string;
}

export interface IpPolicyRuleList extends ListEnvelope {
  ip_policy_rules: IpPolicyRuleBody[];
}

export const IP_POLICY_RULES_PATH = "/ip_policy_rules";

/** What every answer holding a rule carries (dotted field → type): one without them is not a rule. */
export const IP_POLICY_RULE_ANSWER = {
  id: "string",
  uri: "string",
  created_at: "string",
  cidr: "string",
  "ip_policy.id": "string",
  "ip_policy.uri": "string",
  action: "string",
} as const;
