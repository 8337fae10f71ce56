// The shapes of what the emulator stores: accounts with their fixtures, API keys, IP policy rules,
// mutual TLS modules. store.ts keeps and indexes them, data-file.ts writes them, handlers show them;
// they live here, below all three, so that none of those imports another for a type.
import { RuleAction } from "../contract/ip-policy-rule";

export interface Principal {
  id: string; // usr_… or bot_…
  admin: boolean;
}

export interface Account {
  id: string;
  users: Principal[];
  bots: string[];
  ipPolicies: string[];
  certificateAuthorities: string[];
  tlsEdges: string[];
}

export type FixtureKind = "admin" | "member" | "other";

export interface KeyRecord {
  id: string;
  accountId: string;
  ownerId: string;
  description: string;
  metadata: string;
  createdAt: string;
  seq: number;
  tokenHash: string; // hex sha256 of the token; the token itself is never stored
  fixture?: FixtureKind;
}

export interface RuleRecord {
  id: string;
  accountId: string;
  ipPolicyId: string;
  cidr: string; // canonical form
  action: RuleAction;
  description: string;
  metadata: string;
  createdAt: string;
  seq: number;
}

export interface ModuleRecord {
  accountId: string;
  edgeId: string;
  enabled: boolean;
  certificateAuthorityIds: string[];
}
