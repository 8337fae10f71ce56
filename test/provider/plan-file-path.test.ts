// The plan file's path as an insider on the runner can shape it (an attack on issue 39's plan file):
// a FIFO or a device there is refused at once (not a blocked process), and the file is written through
// a temp file of a random name made here, never through a link planted beside it.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { expect, it } from "vitest";
import { compiled } from "../helpers/provider";
import { REPO } from "../helpers/emulator";

const dist = path.join(REPO, "dist/provider/ip-policy-rule-set/saved-plan.js");
const KEY = "0123456789abcdef0123";

it("ACCESSCTL_PLAN_HOLD naming a FIFO or /dev/zero is refused at once", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "plan-path-"));
  try {
    spawnSync("mkfifo", [path.join(dir, "plan.json")]);
    for (const hold of [path.join(dir, "plan.json"), "/dev/zero"]) {
      const code =
        `try { require(${JSON.stringify(dist)}).savedPlanFor("urn:pulumi:a::shop::x::y", ` +
        `{ policy: "ipp_x", from: [], declared: [], refreshed: false }, "update") } catch (e) { console.log(String(e)) }`;
      const env = { ...process.env, ACCESSCTL_PLAN_KEY: KEY, ACCESSCTL_PLAN_HOLD: hold };
      const run = spawnSync(process.execPath, ["-e", code], { env, timeout: 20_000 });
      expect(run.signal, hold).toBeNull(); // ended by itself, not killed at the timeout
      expect(run.stdout.toString(), hold).toContain("is not a regular file");
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it("ACCESSCTL_PLAN_SAVE writes no file through a link planted where a temp file could be; the plan is 0600", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "plan-path-"));
  const file = path.join(dir, "plan.json");
  fs.writeFileSync(path.join(dir, "victim"), "precious\n");
  fs.symlinkSync(path.join(dir, "victim"), `${file}.${process.pid}.tmp`);
  Object.assign(process.env, { ACCESSCTL_PLAN_SAVE: file, ACCESSCTL_PLAN_KEY: KEY });
  try {
    await compiled("provider/ip-policy-rule-set/saved-plan.js").savePlan(
      "urn:pulumi:a::shop::x::y",
      { policy: "ipp_x", from: [], declared: [], shown: { steps: [] } },
      false,
    );
    expect(fs.readFileSync(path.join(dir, "victim"), "utf8")).toBe("precious\n");
    expect(fs.lstatSync(file).isFile()).toBe(true);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir).filter((f) => f.endsWith(".tmp") && !f.includes(String(process.pid)))).toEqual([]);
  } finally {
    delete process.env.ACCESSCTL_PLAN_SAVE;
    delete process.env.ACCESSCTL_PLAN_KEY;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
