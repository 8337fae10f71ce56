// The emulator's data: accounts with their fixtures, API keys, IP policy rules and mutual TLS
// modules, in memory with an index for every lookup a request makes (token, id, policy + CIDR),
// so a request costs the same whatever is stored. Every change is a method here that also
// persists it (through data-file.ts when there is a --data file).
import { createHash, randomBytes } from "node:crypto";
import { ID_PREFIX } from "../contract/common";
import { Change, DataFile, Snapshot } from "./data-file";
import { apiError } from "./errors";
import type { Account, FixtureKind, KeyRecord, ModuleRecord, Principal, RuleRecord } from "./records";

const ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

function newId(prefix: string, length = 24): string {
  let out = `${prefix}_`;
  for (const b of randomBytes(length)) out += ID_ALPHABET[b % ID_ALPHABET.length];
  return out;
}

function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

// A token is "<key id without ak_>_<secret>". It is found by the hash of the whole token, so any
// token, valid or not, costs one hash and one map lookup.
function newToken(keyId: string): string {
  return `${keyId.slice(ID_PREFIX.apiKey.length + 1)}_${randomBytes(24).toString("base64url")}`;
}

/** One account's records in creation order, for newest-first pages. */
class SeqList<T extends { seq: number }> {
  private readonly items: T[] = [];

  /** Where a record with this seq is, or would go (binary search). */
  private position(seq: number): number {
    let lo = 0;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.items[mid].seq < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  put(item: T): void {
    const i = this.position(item.seq);
    this.items.splice(i, this.items[i]?.seq === item.seq ? 1 : 0, item);
  }

  remove(item: T): void {
    const i = this.position(item.seq);
    if (this.items[i]?.seq === item.seq) this.items.splice(i, 1);
  }

  /**
   * Up to `limit` records created before the change numbered `beforeSeq` (or the newest), newest
   * first, and whether more remain. A position in the order, not a record: it stays valid
   * whatever is created or deleted meanwhile.
   */
  page(beforeSeq: number | undefined, limit: number): { items: T[]; more: boolean } {
    const end = beforeSeq === undefined ? this.items.length : this.position(beforeSeq);
    const start = Math.max(0, end - limit);
    return { items: this.items.slice(start, end).reverse(), more: start > 0 };
  }
}

export interface Page<T> {
  items: T[];
  more: boolean;
}

/** What handlers may read of a table: one account's record by id, and its pages. */
export interface Lookup<T> {
  get(account: Account, id: string): T | undefined;
  page(account: Account, beforeSeq: number | undefined, limit: number): Page<T>;
}

/** Records of one kind: by id, by one more key (unique), and per account in creation order. */
class Table<T extends { id: string; accountId: string; seq: number }> implements Lookup<T> {
  private readonly byId = new Map<string, T>();
  private readonly byKey = new Map<string, T>();
  private readonly lists = new Map<string, SeqList<T>>();

  constructor(private readonly keyOf: (record: T) => string | undefined) {}

  get(account: Account, id: string): T | undefined {
    const record = this.byId.get(id);
    return record?.accountId === account.id ? record : undefined;
  }

  page(account: Account, beforeSeq: number | undefined, limit: number): Page<T> {
    return this.listOf(account.id).page(beforeSeq, limit);
  }

  byOtherKey(key: string): T | undefined {
    return this.byKey.get(key);
  }

  all(): T[] {
    return [...this.byId.values()];
  }

  put(record: T): void {
    this.remove(record.id);
    this.byId.set(record.id, record);
    const key = this.keyOf(record);
    if (key !== undefined) this.byKey.set(key, record);
    this.listOf(record.accountId).put(record);
  }

  remove(id: string): void {
    const old = this.byId.get(id);
    if (!old) return;
    this.byId.delete(id);
    const key = this.keyOf(old);
    if (key !== undefined) this.byKey.delete(key);
    this.listOf(old.accountId).remove(old);
  }

  private listOf(accountId: string): SeqList<T> {
    let list = this.lists.get(accountId);
    if (!list) this.lists.set(accountId, (list = new SeqList()));
    return list;
  }
}

export type TextFields = { description?: string; metadata?: string };

export class Store {
  readonly accounts: Account[] = [];
  private seq = 0;
  private readonly keys = new Table<KeyRecord>((k) => k.tokenHash || undefined);
  private readonly rules = new Table<RuleRecord>((r) => cidrKey(r.accountId, r.ipPolicyId, r.cidr));
  private readonly modules = new Map<string, ModuleRecord>(); // by edge id
  private readonly dataFile?: DataFile;

  /** With a data file: loads it (or starts afresh when there is none); without: in memory only. */
  constructor(file?: string) {
    const opened = file ? DataFile.open(file, () => this.snapshot(), freshSnapshot) : undefined;
    const loaded = opened?.snapshot ?? freshSnapshot();
    this.seq = loaded.seq;
    this.accounts.push(...loaded.accounts);
    for (const key of loaded.keys) this.apply({ op: "key", key });
    for (const rule of loaded.rules) this.apply({ op: "rule", rule });
    for (const module of loaded.modules) this.apply({ op: "module", module });
    for (const entry of opened?.entries ?? []) {
      this.apply(entry);
      this.seq = entry.seq;
    }
    this.dataFile = opened?.dataFile;
  }

  /**
   * Gives each fixture key a fresh token (only hashes are kept, so tokens cannot survive a
   * restart), recreating any fixture key a data file lacks, and folds the journal into the snapshot.
   */
  issueFixtureTokens(adminToken?: string): Record<FixtureKind, string> {
    const [main, other] = this.accounts;
    const owners: Record<FixtureKind, [Account, Principal]> = {
      admin: [main, main.users.find((u) => u.admin) ?? main.users[0]],
      member: [main, main.users.find((u) => !u.admin) ?? main.users[0]],
      other: [other, other.users.find((u) => u.admin) ?? other.users[0]],
    };
    const issued = { admin: "", member: "", other: "" };
    for (const kind of ["admin", "member", "other"] as const) {
      const [account, owner] = owners[kind];
      const existing = this.keys.all().find((k) => k.fixture === kind);
      const key = existing ?? fixtureKey(account, owner, kind, ++this.seq);
      const token = kind === "admin" && adminToken ? adminToken : newToken(key.id);
      this.change({ op: "key", key: { ...key, tokenHash: hashToken(token) } });
      issued[kind] = token;
    }
    this.dataFile?.compact();
    return issued;
  }

  /** Resolves once every change made so far is on disk: no answer is sent before. */
  durable(): Promise<void> {
    return this.dataFile?.durable() ?? Promise.resolve();
  }

  close(): void {
    this.dataFile?.close();
  }

  /** The live key a bearer token belongs to. */
  authenticate(token: string): KeyRecord | undefined {
    return this.keys.byOtherKey(hashToken(token));
  }

  accountOf(id: string): Account {
    const account = this.accounts.find((a) => a.id === id);
    if (!account) throw new Error(`unknown account ${id}`);
    return account;
  }

  principal(account: Account, id: string): Principal | undefined {
    const user = account.users.find((u) => u.id === id);
    if (user) return user;
    return account.bots.includes(id) ? { id, admin: false } : undefined;
  }

  // API keys

  get apiKeys(): Lookup<KeyRecord> {
    return this.keys;
  }

  /** Creates a key and returns it with its token, which is not kept. */
  createKey(account: Account, ownerId: string, fields: TextFields): { key: KeyRecord; token: string } {
    const id = newId(ID_PREFIX.apiKey);
    const token = newToken(id);
    const key: KeyRecord = {
      id,
      accountId: account.id,
      ownerId,
      ...texts(fields),
      createdAt: now(),
      seq: this.seq + 1,
      tokenHash: hashToken(token),
    };
    this.change({ op: "key", key });
    return { key, token };
  }

  updateKey(key: KeyRecord, fields: TextFields): KeyRecord {
    const updated = { ...key, ...defined(fields) };
    this.change({ op: "key", key: updated });
    return updated;
  }

  deleteKey(key: KeyRecord): void {
    if (key.fixture) {
      throw apiError(
        403,
        "ERR_FORBIDDEN",
        `API key ${key.id} is the emulator's ${key.fixture} fixture key, whose token the emulator issues at start; ` +
          `it cannot be deleted`,
      );
    }
    this.change({ op: "deleteKey", id: key.id });
  }

  // IP policy rules

  get ipPolicyRules(): Lookup<RuleRecord> {
    return this.rules;
  }

  /** `cidr` in canonical form; a policy holds a CIDR once (409). */
  createRule(
    account: Account,
    fields: { ipPolicyId: string; cidr: string; action: RuleRecord["action"] } & TextFields,
  ): RuleRecord {
    this.refuseDuplicate(account, fields.ipPolicyId, fields.cidr);
    const rule: RuleRecord = {
      id: newId(ID_PREFIX.ipPolicyRule),
      accountId: account.id,
      ...fields,
      ...texts(fields),
      createdAt: now(),
      seq: this.seq + 1,
    };
    this.change({ op: "rule", rule });
    return rule;
  }

  /**
   * `n` more rules on the main account's second IP policy (10.0.0.0/32, 10.0.0.1/32, …): an account
   * that holds many rules, made at start (--seed-rules) rather than by n requests.
   */
  seedRules(n: number): void {
    const [main] = this.accounts;
    const policy = main.ipPolicies[main.ipPolicies.length - 1];
    for (let i = 0, made = 0; made < n; i++) {
      const cidr = `${10 + Math.floor(i / 16_777_216)}.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}/32`;
      if (this.rules.byOtherKey(cidrKey(main.id, policy, cidr))) continue;
      this.createRule(main, { ipPolicyId: policy, cidr, action: "allow", description: `seeded ${i}` });
      made++;
    }
  }

  updateRule(rule: RuleRecord, fields: { cidr?: string } & TextFields): RuleRecord {
    if (fields.cidr !== undefined && fields.cidr !== rule.cidr)
      this.refuseDuplicate(this.accountOf(rule.accountId), rule.ipPolicyId, fields.cidr);
    const updated = { ...rule, ...defined(fields) };
    this.change({ op: "rule", rule: updated });
    return updated;
  }

  deleteRule(rule: RuleRecord): void {
    this.change({ op: "deleteRule", id: rule.id });
  }

  // Mutual TLS modules (one per TLS edge)

  module(account: Account, edgeId: string): ModuleRecord | undefined {
    const module = this.modules.get(edgeId);
    return module?.accountId === account.id ? module : undefined;
  }

  putModule(account: Account, edgeId: string, enabled: boolean, certificateAuthorityIds: string[]): ModuleRecord {
    const module: ModuleRecord = { accountId: account.id, edgeId, enabled, certificateAuthorityIds };
    this.change({ op: "module", module });
    return module;
  }

  deleteModule(module: ModuleRecord): void {
    this.change({ op: "deleteModule", edgeId: module.edgeId });
  }

  private refuseDuplicate(account: Account, ipPolicyId: string, cidr: string): void {
    const clash = this.rules.byOtherKey(cidrKey(account.id, ipPolicyId, cidr));
    if (clash)
      throw apiError(409, "ERR_CONFLICT", `IP policy ${ipPolicyId} already has a rule for ${cidr}: ${clash.id}`);
  }

  /** Applies a change in memory and queues it for the data file. */
  private change(change: Change): void {
    this.apply(change);
    const seq = ++this.seq; // not inside `?.(…)`, which would skip it without a data file
    this.dataFile?.append({ ...change, seq });
  }

  /** Applies a change to the records and every index; loading and replaying the journal use it too. */
  private apply(change: Change): void {
    switch (change.op) {
      case "key":
        return this.keys.put(change.key);
      case "deleteKey":
        return this.keys.remove(change.id);
      case "rule":
        return this.rules.put(change.rule);
      case "deleteRule":
        return this.rules.remove(change.id);
      case "module":
        return void this.modules.set(change.module.edgeId, change.module);
      case "deleteModule":
        return void this.modules.delete(change.edgeId);
    }
  }

  private snapshot(): Snapshot {
    return {
      version: 1,
      seq: this.seq,
      accounts: this.accounts,
      keys: this.keys.all().sort(bySeq),
      rules: this.rules.all().sort(bySeq),
      modules: [...this.modules.values()],
    };
  }
}

const bySeq = (a: { seq: number }, b: { seq: number }) => a.seq - b.seq;
const cidrKey = (accountId: string, ipPolicyId: string, cidr: string) => `${accountId} ${ipPolicyId} ${cidr}`;
const now = () => new Date().toISOString();
const texts = (fields: TextFields) => ({ description: fields.description ?? "", metadata: fields.metadata ?? "" });
const defined = <T extends object>(fields: T): Partial<T> =>
  Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Partial<T>;

function fixtureKey(account: Account, owner: Principal, fixture: FixtureKind, seq: number): KeyRecord {
  return {
    id: newId(ID_PREFIX.apiKey),
    accountId: account.id,
    ownerId: owner.id,
    description: `emulator fixture: ${fixture} token`,
    metadata: "",
    createdAt: now(),
    seq,
    tokenHash: "",
    fixture,
  };
}

function freshSnapshot(): Snapshot {
  const makeAccount = (withMember: boolean): Account => ({
    id: newId("acct"),
    users: [
      { id: newId(ID_PREFIX.user), admin: true },
      ...(withMember ? [{ id: newId(ID_PREFIX.user), admin: false }] : []),
    ],
    bots: [newId(ID_PREFIX.bot)],
    ipPolicies: [newId(ID_PREFIX.ipPolicy), newId(ID_PREFIX.ipPolicy)],
    certificateAuthorities: [newId(ID_PREFIX.certificateAuthority), newId(ID_PREFIX.certificateAuthority)],
    tlsEdges: [newId(ID_PREFIX.tlsEdge), newId(ID_PREFIX.tlsEdge)],
  });
  const main = makeAccount(true);
  const other = makeAccount(false);
  const snapshot: Snapshot = { version: 1, seq: 0, accounts: [main, other], keys: [], rules: [], modules: [] };
  snapshot.keys.push(
    fixtureKey(main, main.users[0], "admin", ++snapshot.seq),
    fixtureKey(main, main.users[1], "member", ++snapshot.seq),
    fixtureKey(other, other.users[0], "other", ++snapshot.seq),
  );
  return snapshot;
}
