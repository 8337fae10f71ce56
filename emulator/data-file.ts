// The `--data` file: a snapshot (FILE, one JSON object) and a journal (FILE.journal, one JSON line
// per change). A change is appended and fsync'd before any answer is sent, so one change costs the
// same whatever is stored and a kill -9 loses nothing acknowledged; the journal is folded into the
// snapshot at start and whenever it outgrows it. FILE.lock keeps a second emulator off the file.
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { RULE_ACTIONS } from "../contract/ip-policy-rule";
import type { Account, KeyRecord, ModuleRecord, RuleRecord } from "./records";

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
const oneOf =
  (...values: unknown[]): Check =>
  (v, w) =>
    void (values.includes(v) || fail(w, values.map((x) => JSON.stringify(x)).join(" or ")));
const optional =
  (check: Check): Check =>
  (v, w) =>
    v === undefined || check(v, w);
const arrayOf =
  (check: Check): Check =>
  (v, w) => {
    if (!Array.isArray(v)) fail(w, "an array");
    (v as unknown[]).forEach((item, i) => check(item, `${w}[${i}]`));
  };
const object =
  (fields: Record<string, Check>): Check =>
  (v, w) => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) fail(w || "the file", "a JSON object");
    for (const [name, check] of Object.entries(fields))
      check((v as Record<string, unknown>)[name], w ? `${w}.${name}` : name);
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
const keyShape = object({
  id: string,
  accountId: string,
  ownerId: string,
  tokenHash: string,
  fixture: optional(oneOf("admin", "member", "other")),
  ...text,
});
const ruleShape = object({
  id: string,
  accountId: string,
  ipPolicyId: string,
  cidr: string,
  action: oneOf(...RULE_ACTIONS),
  ...text,
});
const moduleShape = object({
  accountId: string,
  edgeId: string,
  enabled: boolean,
  certificateAuthorityIds: arrayOf(string),
});
const snapshotShape = object({
  version: oneOf(1),
  seq: count,
  accounts: arrayOf(accountShape),
  keys: arrayOf(keyShape),
  rules: arrayOf(ruleShape),
  modules: arrayOf(moduleShape),
});
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
  if (s.accounts.length !== 2)
    throw new Error(`accounts must hold the emulator's 2 accounts, not ${s.accounts.length}`);
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
   * Without a snapshot, `fresh()` is written as one (durably) before any journal line can exist, so
   * a kill at any point of a first start leaves files that start. `current` gives the store's state
   * when the journal is folded into the snapshot.
   */
  static open(
    file: string,
    current: () => Snapshot,
    fresh: () => Snapshot,
  ): { dataFile: DataFile; snapshot: Snapshot; entries: Entry[] } {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const lockFile = lock(file);
    try {
      const tempFile = new RegExp(`^\\.${path.basename(file).replace(/[^\w]/g, "\\$&")}\\.\\d+\\.tmp$`);
      for (const name of fs.readdirSync(path.dirname(file))) {
        if (tempFile.test(name)) fs.rmSync(path.join(path.dirname(file), name), { force: true });
      }
      const journal = `${file}.journal`;
      let loaded = fs.existsSync(file)
        ? parse<Snapshot>(file, fs.readFileSync(file, "utf8"), snapshotShape)
        : undefined;
      if (loaded) refuseIn(file, () => checkAccounts(loaded!));
      else {
        dropInterruptedFirstStart(file, journal);
        loaded = fresh();
        writeDurably(file, JSON.stringify(loaded));
      }
      const entries = readJournal(journal, loaded);
      const dataFile = new DataFile(file, lockFile, fs.openSync(journal, "a", 0o600), current);
      return { dataFile, snapshot: loaded, entries };
    } catch (e) {
      unlock(lockFile);
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
    writeDurably(this.file, text);
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
    unlock(this.lockFile);
  }
}

/**
 * Replaces `file` with `text` whole or not at all: a temp file, fsync'd, renamed over it, and the
 * directory fsync'd so the rename is on disk before anything that relies on it (the journal's
 * truncation, its first line).
 */
function writeDurably(file: string, text: string): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  const fd = fs.openSync(tmp, "w", 0o600);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  syncDirectory(path.dirname(file));
}

function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, "r");
    fs.fsyncSync(fd);
  } catch {
    // not possible on every platform (Windows); the rename itself is atomic anyway
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * A journal without a snapshot. Since the snapshot is written before the journal, only an older
 * emulator killed during its first start leaves one: it then holds the fixture keys of accounts
 * that never reached the disk, and nothing any client was told of (the emulator was not yet
 * listening). That is dropped. Anything else (a snapshot removed by hand) is refused, never guessed at.
 */
function dropInterruptedFirstStart(file: string, journal: string): void {
  if (!fs.existsSync(journal)) return;
  const lines = fs.readFileSync(journal, "utf8").split("\n");
  lines.pop(); // a last line cut short by the kill
  const entries = lines.map((line, i) => parse<Entry>(`${journal}: line ${i + 1}`, line, entryShape));
  if (!entries.every((e) => e.op === "key" && e.key.fixture !== undefined)) {
    throw new Error(
      `${journal}: its snapshot ${file} is missing and it holds more than an interrupted first start; the emulator ` +
        `leaves it as it is (restore ${file}, or move the journal away to start afresh)`,
    );
  }
  fs.unlinkSync(journal);
  syncDirectory(path.dirname(file));
}

function refuseIn(where: string, check: () => void): void {
  try {
    check();
  } catch (e) {
    throw new Error(
      `${where}: ${(e as Error).message}; the emulator leaves it as it is (fix it, or move it away to start afresh)`,
      { cause: e },
    );
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
    if (record && !accounts.has(record.accountId))
      refuseIn(`${journal}: line ${i + 1}`, () => fail("accountId", "the id of one of the accounts"));
  });
  return entries.filter((e) => e.seq > (loaded?.seq ?? 0));
}

/**
 * FILE.lock is a directory holding one entry named after its holder (`<pid>-<random>`). Every step
 * that can change who holds it is a single atomic call whose outcome depends only on the name it is
 * given, so two emulators started at once, even over a lock left by a kill -9, cannot both win:
 * - taking it is rename() of a directory we prepared, already holding our entry, onto FILE.lock;
 *   that succeeds only when FILE.lock is absent or empty, so it is never seen without a holder;
 * - breaking a dead holder's lock is unlink() of that holder's entry by its name (a live holder's
 *   entry, which has another name, is never touched), then rmdir(), which removes only an empty
 *   directory (one that someone has just taken is not empty, and stays).
 * Reading a PID and removing "the" lock file, as before, could remove a lock another emulator had
 * just taken. A holder is dead when no process has its PID (or the PID is ours: a container
 * restarted after a kill); emulators sharing a --data across PID namespaces are not told apart.
 */
function lock(file: string): string {
  const lockDir = `${file}.lock`;
  const holder = `${process.pid}-${randomBytes(6).toString("hex")}`;
  const prepared = path.join(path.dirname(file), `.${path.basename(lockDir)}.${holder}`);
  const inUse = (pid: number) =>
    new Error(
      `${file} is in use by another emulator (pid ${pid}); stop it or use another --data file (if no emulator runs, ` +
        `remove ${lockDir})`,
    );
  removeDeadPrepared(file);
  fs.mkdirSync(prepared, { mode: 0o700 });
  fs.writeFileSync(path.join(prepared, holder), "");
  try {
    for (let attempt = 0; ; attempt++) {
      if (attempt > 1000) throw new Error(`${file}: could not take ${lockDir}; remove it if no emulator runs`);
      try {
        fs.renameSync(prepared, lockDir);
        return path.join(lockDir, holder);
      } catch (e) {
        if (!["ENOTEMPTY", "EEXIST", "ENOTDIR", "EISDIR", "EPERM"].includes((e as NodeJS.ErrnoException).code ?? ""))
          throw e;
      }
      let entries: string[];
      try {
        entries = fs.readdirSync(lockDir);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === "ENOENT") continue; // released meanwhile
        if (code !== "ENOTDIR") throw e;
        // A lock file of an older emulator: its PID. unlink() cannot remove a directory someone
        // has taken meanwhile (it fails, and the next turn reads that holder).
        let pid: number;
        try {
          pid = Number(fs.readFileSync(lockDir, "utf8"));
        } catch {
          continue; // gone, or taken meanwhile
        }
        if (isAlive(pid)) throw inUse(pid);
        try {
          unlinkIfThere(lockDir);
        } catch {
          // a directory now
        }
        continue;
      }
      for (const entry of entries) {
        const pid = holderPid(entry);
        if (pid === undefined)
          throw new Error(
            `${file}: ${lockDir} holds ${JSON.stringify(entry)}, which is not an emulator's; remove ${lockDir} if no ` +
              `emulator runs`,
          );
        if (isAlive(pid)) throw inUse(pid);
        unlinkIfThere(path.join(lockDir, entry));
      }
      try {
        fs.rmdirSync(lockDir);
      } catch (e) {
        if (!["ENOENT", "ENOTEMPTY", "EEXIST"].includes((e as NodeJS.ErrnoException).code ?? "")) throw e;
      }
    }
  } catch (e) {
    fs.rmSync(prepared, { recursive: true, force: true });
    throw e;
  }
}

/** Releases the lock: our entry first, then the directory, which is empty unless someone else took it since. */
function unlock(entry: string): void {
  unlinkIfThere(entry);
  try {
    fs.rmdirSync(path.dirname(entry));
  } catch {
    // gone, or taken meanwhile (after our entry went): theirs now
  }
}

/** The PID in a holder's name, when it is one (`<pid>-<hex>`). */
function holderPid(entry: string): number | undefined {
  const m = /^([1-9][0-9]{0,9})-[0-9a-f]{12}$/.exec(entry);
  return m ? Number(m[1]) : undefined;
}

/** Prepared lock directories left by emulators killed before they could use them. */
function removeDeadPrepared(file: string): void {
  const prefix = `.${path.basename(file)}.lock.`;
  for (const name of fs.readdirSync(path.dirname(file))) {
    if (!name.startsWith(prefix)) continue;
    const pid = holderPid(name.slice(prefix.length));
    if (pid !== undefined && !isAlive(pid))
      fs.rmSync(path.join(path.dirname(file), name), { recursive: true, force: true });
  }
}

function unlinkIfThere(target: string): void {
  try {
    fs.unlinkSync(target);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
}

/**
 * Whether a lock's holder runs. Our own PID in a lock was left
 * by an earlier process (a container restarted after a kill).
 */
function isAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
