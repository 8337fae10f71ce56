// The `--data` file: a snapshot (FILE, one JSON object) and a journal (FILE.journal, one JSON line
// per change). A change is appended and fsync'd before any answer is sent, so one change costs the
// same whatever is stored and a kill -9 loses nothing acknowledged; the journal is folded into the
// snapshot at start and whenever it outgrows it. FILE.lock keeps a second emulator off the file.
import * as fs from "node:fs";
import * as path from "node:path";
import { RULE_ACTIONS, RuleAction } from "../contract/ip-policy-rule";

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

export interface Snapshot {
  version: 1;
  seq: number; // the last change this snapshot holds
  accounts: Account[];
  keys: KeyRecord[];
  rules: RuleRecord[];
  modules: ModuleRecord[];
}

/** One change: a record written whole, or removed. */
export type Change =
  | { op: "key"; key: KeyRecord }
  | { op: "deleteKey"; id: string }
  | { op: "rule"; rule: RuleRecord }
  | { op: "deleteRule"; id: string }
  | { op: "module"; module: ModuleRecord }
  | { op: "deleteModule"; edgeId: string };

export type Entry = Change & { seq: number };

// Small checks that name the place of what is wrong (`rules[3].cidr must be a string`).
type Check = (value: unknown, where: string) => void;
const fail = (where: string, what: string): never => {
  throw new Error(`${where} must be ${what}`);
};
const string: Check = (v, w) => void (typeof v === "string" || fail(w, "a string"));
const boolean: Check = (v, w) => void (typeof v === "boolean" || fail(w, "true or false"));
const count: Check = (v, w) => void ((Number.isSafeInteger(v) && (v as number) >= 0) || fail(w, "a whole number"));
const oneOf = (...values: unknown[]): Check => (v, w) => void (values.includes(v) || fail(w, values.map((x) => JSON.stringify(x)).join(" or ")));
const optional = (check: Check): Check => (v, w) => v === undefined || check(v, w);
const arrayOf = (check: Check): Check => (v, w) => {
  if (!Array.isArray(v)) fail(w, "an array");
  (v as unknown[]).forEach((item, i) => check(item, `${w}[${i}]`));
};
const object = (fields: Record<string, Check>): Check => (v, w) => {
  if (typeof v !== "object" || v === null || Array.isArray(v)) fail(w || "the file", "a JSON object");
  for (const [name, check] of Object.entries(fields)) check((v as Record<string, unknown>)[name], w ? `${w}.${name}` : name);
};

const text = { description: string, metadata: string, createdAt: string, seq: count };
const accountShape = object({
  id: string,
  users: arrayOf(object({ id: string, admin: boolean })),
  bots: arrayOf(string),
  ipPolicies: arrayOf(string),
  certificateAuthorities: arrayOf(string),
  tlsEdges: arrayOf(string),
});
const keyShape = object({ id: string, accountId: string, ownerId: string, tokenHash: string, fixture: optional(oneOf("admin", "member", "other")), ...text });
const ruleShape = object({ id: string, accountId: string, ipPolicyId: string, cidr: string, action: oneOf(...RULE_ACTIONS), ...text });
const moduleShape = object({ accountId: string, edgeId: string, enabled: boolean, certificateAuthorityIds: arrayOf(string) });
const snapshotShape = object({ version: oneOf(1), seq: count, accounts: arrayOf(accountShape), keys: arrayOf(keyShape), rules: arrayOf(ruleShape), modules: arrayOf(moduleShape) });
const entryShapes: Record<Change["op"], Check> = {
  key: object({ key: keyShape }),
  deleteKey: object({ id: string }),
  rule: object({ rule: ruleShape }),
  deleteRule: object({ id: string }),
  module: object({ module: moduleShape }),
  deleteModule: object({ edgeId: string }),
};
const entryShape: Check = (v, w) => {
  object({ seq: count, op: oneOf(...Object.keys(entryShapes)) })(v, w);
  entryShapes[(v as Entry).op](v, w);
};

/** Records must belong to one of the emulator's two accounts (main, other). */
function checkAccounts(s: Snapshot): void {
  if (s.accounts.length !== 2) throw new Error(`accounts must hold the emulator's 2 accounts, not ${s.accounts.length}`);
  if (!s.accounts[0].users.some((u) => !u.admin)) throw new Error("accounts[0].users must hold the member user");
  const ids = new Set(s.accounts.map((a) => a.id));
  for (const list of ["keys", "rules", "modules"] as const) {
    s[list].forEach((r, i) => ids.has(r.accountId) || fail(`${list}[${i}].accountId`, "the id of one of the accounts"));
  }
}

const MIN_COMPACTION_BYTES = 1 << 20;

export class DataFile {
  private pending: string[] = [];
  private flushed?: Promise<void>;
  private failed?: Error;
  private journalBytes = 0;
  private snapshotBytes = 0;

  private constructor(
    private readonly file: string,
    private readonly lockFile: string,
    private readonly journal: number, // fd, open for appending
    private readonly current: () => Snapshot,
  ) {}

  /**
   * Takes the lock, removes temp files of interrupted writes, and reads and checks the whole
   * snapshot and journal: a file it cannot load is refused (naming what is wrong), never rewritten.
   * `current` gives the store's state when the journal is folded into the snapshot.
   */
  static open(file: string, current: () => Snapshot): { dataFile: DataFile; snapshot?: Snapshot; entries: Entry[] } {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const lockFile = lock(file);
    try {
      const tempFile = new RegExp(`^\\.${path.basename(file).replace(/[^\w]/g, "\\$&")}\\.\\d+\\.tmp$`);
      for (const name of fs.readdirSync(path.dirname(file))) {
        if (tempFile.test(name)) fs.rmSync(path.join(path.dirname(file), name), { force: true });
      }
      const loaded = fs.existsSync(file) ? parse<Snapshot>(file, fs.readFileSync(file, "utf8"), snapshotShape) : undefined;
      if (loaded) refuseIn(file, () => checkAccounts(loaded));
      const entries = readJournal(`${file}.journal`, loaded);
      const dataFile = new DataFile(file, lockFile, fs.openSync(`${file}.journal`, "a", 0o600), current);
      return { dataFile, snapshot: loaded, entries };
    } catch (e) {
      fs.rmSync(lockFile, { force: true });
      throw e;
    }
  }

  /** Queues one change; it is on disk when `durable()` resolves. */
  append(entry: Entry): void {
    if (this.failed) throw this.failed;
    this.pending.push(`${JSON.stringify(entry)}\n`);
  }

  /**
   * Resolves once every change queued so far is on disk. The changes of all requests answered in
   * one turn of the event loop share one write and one fsync.
   */
  durable(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.pending.length === 0) return Promise.resolve();
    this.flushed ??= new Promise((resolve, reject) => {
      setImmediate(() => {
        this.flushed = undefined;
        try {
          this.flush();
          resolve();
        } catch (e) {
          // Memory now holds changes the disk does not: acknowledge nothing more.
          this.failed = e as Error;
          reject(e);
        }
      });
    });
    return this.flushed;
  }

  private flush(): void {
    const text = this.pending.join("");
    this.pending = [];
    fs.writeSync(this.journal, text);
    fs.fdatasyncSync(this.journal);
    this.journalBytes += Buffer.byteLength(text);
    // Folding costs the size of the snapshot; doing it only once the journal is as large keeps
    // the cost per change constant on average.
    if (this.journalBytes > Math.max(MIN_COMPACTION_BYTES, this.snapshotBytes)) this.compact();
  }

  /** Writes the whole state as the snapshot (temp file, fsync, rename), then empties the journal. */
  compact(): void {
    if (this.pending.length) this.flush();
    const text = JSON.stringify(this.current());
    const tmp = path.join(path.dirname(this.file), `.${path.basename(this.file)}.${process.pid}.tmp`);
    const fd = fs.openSync(tmp, "w", 0o600);
    try {
      fs.writeSync(fd, text);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, this.file);
    // A kill between the rename and the truncation is harmless: entries carry the change
    // number, and those the snapshot already holds are skipped when the journal is read.
    fs.ftruncateSync(this.journal, 0);
    fs.fsyncSync(this.journal);
    this.snapshotBytes = Buffer.byteLength(text);
    this.journalBytes = 0;
  }

  close(): void {
    if (this.pending.length && !this.failed) this.flush();
    fs.closeSync(this.journal);
    if (readLock(this.lockFile) === process.pid) fs.rmSync(this.lockFile, { force: true });
  }
}

function refuseIn(where: string, check: () => void): void {
  try {
    check();
  } catch (e) {
    throw new Error(`${where}: ${(e as Error).message}; the emulator leaves it as it is (fix it, or move it away to start afresh)`);
  }
}

function parse<T>(where: string, text: string, check: Check): T {
  let value: unknown;
  refuseIn(where, () => {
    try {
      value = JSON.parse(text);
    } catch {
      fail("the content", "valid JSON");
    }
    check(value, "");
  });
  return value as T;
}

/** The journal's complete lines after the snapshot's last change; a torn last line was never acknowledged. */
function readJournal(journal: string, loaded: Snapshot | undefined): Entry[] {
  if (!fs.existsSync(journal)) return [];
  const lines = fs.readFileSync(journal, "utf8").split("\n");
  lines.pop(); // what follows the last newline: empty, or a write cut short by a kill
  const entries = lines.map((line, i) => parse<Entry>(`${journal}: line ${i + 1}`, line, entryShape));
  const accounts = new Set(loaded?.accounts.map((a) => a.id));
  entries.forEach((e, i) => {
    const record = e.op === "key" ? e.key : e.op === "rule" ? e.rule : e.op === "module" ? e.module : undefined;
    if (record && !accounts.has(record.accountId)) refuseIn(`${journal}: line ${i + 1}`, () => fail("accountId", "the id of one of the accounts"));
  });
  return entries.filter((e) => e.seq > (loaded?.seq ?? 0));
}

/** An exclusive lock file holding our PID; one left by a process that is gone is taken over. */
function lock(file: string): string {
  const lockFile = `${file}.lock`;
  for (;;) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: "wx", mode: 0o600 });
      return lockFile;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const pid = readLock(lockFile);
    // Our own PID in it: left by an earlier process that had it (a container restarted after a kill).
    if (pid !== process.pid && isAlive(pid)) {
      throw new Error(`${file} is in use by another emulator (pid ${pid}); stop it or use another --data file (if no emulator runs, remove ${lockFile})`);
    }
    fs.rmSync(lockFile, { force: true });
  }
}

function readLock(lockFile: string): number {
  try {
    return Number(fs.readFileSync(lockFile, "utf8"));
  } catch {
    return NaN; // gone meanwhile
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
