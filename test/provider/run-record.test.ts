// The record the provider processes of one `pulumi` command share (provider/run-record.ts): what one
// engine's processes write, the others read; claims hold in one engine; a directory others can
// write, or lines that are not records, are not trusted.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { compiled, newRun } from "../helpers/provider";

const record = compiled("provider/run-record.js");
const state = (): Record<string, any> => ((globalThis as any)[Symbol.for("@accessctl/pulumi/state/v1")] ??= {});
let tmp: string;
const savedHome = process.env.PULUMI_HOME;

/** A new provider process of `pulumi` (PID `pid`), started by the engine at `address`. */
function asProcess(address: string, pid = 4242): void {
  newRun();
  state().engine = { address, process: { pid, started: "9999" } };
}

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "run-record-"));
  process.env.PULUMI_HOME = tmp;
});
afterEach(() => {
  if (savedHome === undefined) delete process.env.PULUMI_HOME;
  else process.env.PULUMI_HOME = savedHome;
  delete state().engine;
  newRun();
  fs.rmSync(tmp, { recursive: true, force: true });
});

it("what one process writes, the others of the command read, each line tagged with its engine; engineRecords are this engine's only", () => {
  asProcess("127.0.0.1:1001");
  record.addRecord("set-plan", "urn:a");
  asProcess("127.0.0.1:1001"); // the plugin beside the dynamic host, same engine
  expect(record.engineRecords("set-plan")).toEqual(["urn:a"]);
  asProcess("127.0.0.1:2002"); // the update's engine
  expect(record.records("set-plan")).toEqual([{ engine: "127.0.0.1:1001", value: "urn:a" }]);
  expect(record.engineRecords("set-plan")).toEqual([]);
  const dir = path.join(tmp, "accessctl-runs");
  expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
  expect(fs.readdirSync(dir)).toEqual(["run-4242-9999.jsonl"]);
  asProcess("127.0.0.1:2002", 5353); // another pulumi command
  expect(record.records("set-plan")).toEqual([]);
});

it("a directory another user could write (in Pulumi's home) is not used: each process keeps its records, and says so once", () => {
  const dir = path.join(tmp, "accessctl-runs");
  fs.mkdirSync(dir, { mode: 0o777 });
  fs.chmodSync(dir, 0o777);
  fs.writeFileSync(
    path.join(dir, "run-4242-9999.jsonl"),
    `${JSON.stringify(["set-plan", "127.0.0.1:1001", "urn:planted"])}\n`,
  );
  const said: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((s: string) => (said.push(s), true)) as typeof process.stderr.write;
  try {
    asProcess("127.0.0.1:1001");
    record.addRecord("set-plan", "urn:a");
    record.addRecord("set-plan", "urn:b");
    expect(record.engineRecords("set-plan")).toEqual(["urn:a", "urn:b"]);
  } finally {
    process.stderr.write = write;
  }
  expect(said).toHaveLength(1);
  expect(said[0]).toMatch(
    /cannot share what they recorded \(.*is not a directory only this user can write\); a set's update writes nothing/,
  );
  // Fail safe: a set's update or create refuses to write (what the preview showed cannot reach it).
  expect(record.recordUnshared()).toMatch(/is not a directory only this user can write/);
});

it("the files of commands that ended are removed by the next command's first provider; a killed command's by its own", () => {
  const dir = path.join(tmp, "accessctl-runs");
  fs.mkdirSync(dir, { mode: 0o700 });
  const ended = path.join(dir, "run-999999-1.jsonl"); // no such process
  const reused = path.join(dir, `run-${process.pid}-1.jsonl`); // this PID, another start time: another process
  for (const f of [ended, reused]) fs.writeFileSync(f, "");
  asProcess("127.0.0.1:1001", process.pid);
  record.addRecord("set-plan", "urn:a");
  expect(fs.readdirSync(dir)).toEqual([`run-${process.pid}-9999.jsonl`]);
  record.removeRecord();
  expect(fs.readdirSync(dir)).toEqual([]);
});

it("lines that are not records (another writer's, half a line) are left out", () => {
  asProcess("127.0.0.1:1001");
  record.addRecord("claimed", "IP policy rule ipr_1");
  const file = path.join(tmp, "accessctl-runs", "run-4242-9999.jsonl");
  fs.appendFileSync(file, 'null\n[1,2,3]\n{"a":1}\n["claimed","127.0.0.1:1001"');
  asProcess("127.0.0.1:1001");
  expect(record.engineRecords("claimed")).toEqual(["IP policy rule ipr_1"]);
});
