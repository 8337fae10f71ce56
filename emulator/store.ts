// The emulator's data: accounts with their fixtures, API keys, IP policy rules and mutual TLS
// modules. Everything lives in memory; with a data file every change is written through
// atomically (temp file, fsync, rename) so that a killed emulator never leaves half a file.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

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

export interface KeyRecord {
  id: string;
  accountId: string;
  ownerId: string;
  description: string;
  metadata: string;
  createdAt: string;
  seq: number;
  tokenHash: string; // hex sha256 of the token; the token itself is never stored
  fixture?: "admin" | "member" | "other";
}

export interface RuleRecord {
  id: string;
  accountId: string;
  ipPolicyId: string;
  cidr: string;
  action: "allow" | "deny";
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

interface Snapshot {
  version: 1;
  seq: number;
  accounts: Account[];
  keys: KeyRecord[];
  rules: RuleRecord[];
  modules: ModuleRecord[];
}

const ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

export function newId(prefix: string, length = 24): string {
  const bytes = randomBytes(length);
  let out = prefix;
  for (const b of bytes) out += ID_ALPHABET[b % ID_ALPHABET.length];
  return out;
}

export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

// A token is "<key id without ak_>_<secret>": the id part finds the key, the whole token is
// compared by hash in constant time.
export function newToken(keyId: string): string {
  return `${keyId.slice("ak_".length)}_${randomBytes(24).toString("base64url")}`;
}

export class Store {
  private snapshot: Snapshot;

  constructor(private readonly dataFile?: string) {
    this.snapshot = dataFile && fs.existsSync(dataFile) ? loadSnapshot(dataFile) : freshSnapshot();
  }

  get accounts(): Account[] {
    return this.snapshot.accounts;
  }
  get keys(): KeyRecord[] {
    return this.snapshot.keys;
  }
  get rules(): RuleRecord[] {
    return this.snapshot.rules;
  }
  get modules(): ModuleRecord[] {
    return this.snapshot.modules;
  }

  nextSeq(): number {
    return ++this.snapshot.seq;
  }

  /** Gives each fixture key a fresh token (only hashes are kept, so tokens cannot survive a restart). */
  issueFixtureTokens(adminToken?: string): { admin: string; member: string; other: string } {
    const issued = { admin: "", member: "", other: "" };
    for (const kind of ["admin", "member", "other"] as const) {
      const key = this.keys.find((k) => k.fixture === kind);
      if (!key) throw new Error(`fixture key ${kind} missing from the data file`);
      const token = kind === "admin" && adminToken ? adminToken : newToken(key.id);
      key.tokenHash = hashToken(token);
      issued[kind] = token;
    }
    this.save();
    return issued;
  }

  /** Finds the live key that a bearer token belongs to. */
  authenticate(token: string): KeyRecord | undefined {
    const presented = Buffer.from(hashToken(token), "hex");
    const underscore = token.lastIndexOf("_");
    const candidate = underscore > 0 ? this.keys.find((k) => k.id === `ak_${token.slice(0, underscore)}`) : undefined;
    // Tokens given with --admin-token have no id part: fall back to comparing with every key.
    const candidates = candidate ? [candidate] : this.keys;
    let found: KeyRecord | undefined;
    for (const key of candidates) {
      if (timingSafeEqual(presented, Buffer.from(key.tokenHash, "hex"))) found = key;
    }
    return found;
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

  /** Writes the whole state to the data file: temp file, fsync, rename. */
  save(): void {
    if (!this.dataFile) return;
    const tmp = path.join(path.dirname(this.dataFile), `.${path.basename(this.dataFile)}.${process.pid}.tmp`);
    const fd = fs.openSync(tmp, "w", 0o600);
    try {
      fs.writeSync(fd, JSON.stringify(this.snapshot));
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, this.dataFile);
  }
}

function loadSnapshot(file: string): Snapshot {
  const parsed = JSON.parse(fs.readFileSync(file, "utf8")) as Snapshot;
  if (parsed.version !== 1) throw new Error(`${file}: unsupported data file version ${String(parsed.version)}`);
  return parsed;
}

function freshSnapshot(): Snapshot {
  const now = new Date().toISOString();
  const snapshot: Snapshot = { version: 1, seq: 0, accounts: [], keys: [], rules: [], modules: [] };
  const makeAccount = (withMember: boolean): Account => ({
    id: newId("acct_"),
    users: [
      { id: newId("usr_"), admin: true },
      ...(withMember ? [{ id: newId("usr_"), admin: false }] : []),
    ],
    bots: [newId("bot_")],
    ipPolicies: [newId("ipp_"), newId("ipp_")],
    certificateAuthorities: [newId("ca_"), newId("ca_")],
    tlsEdges: [newId("edgtls_"), newId("edgtls_")],
  });
  const main = makeAccount(true);
  const other = makeAccount(false);
  snapshot.accounts.push(main, other);
  const fixtureKey = (account: Account, owner: Principal, fixture: KeyRecord["fixture"]): KeyRecord => ({
    id: newId("ak_"),
    accountId: account.id,
    ownerId: owner.id,
    description: `emulator fixture: ${fixture} token`,
    metadata: "",
    createdAt: now,
    seq: ++snapshot.seq,
    tokenHash: "",
    fixture,
  });
  snapshot.keys.push(
    fixtureKey(main, main.users[0], "admin"),
    fixtureKey(main, main.users[1], "member"),
    fixtureKey(other, other.users[0], "other"),
  );
  return snapshot;
}
