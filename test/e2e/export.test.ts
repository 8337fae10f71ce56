// accessctl-export, both forms, through `pulumi up` of the printed program in one user's project:
// --rules (IpPolicyRule with adoptId, keys by ApiKey.get) and the default (one IpPolicyRuleSet per
// policy with takeOver: true, keys by ApiKey.get) each take the account's objects under management
// and change nothing; preview --refresh is clean. An emulator for each form.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, it } from "vitest";
import { RunningEmulator, startEmulator } from "../helpers/emulator";
import { exportProject, exportRoundTrip } from "./export-round-trip";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-export-"));
let dir: string;
let emu: RunningEmulator | undefined;
beforeAll(() => {
  dir = exportProject(root);
}, 600_000);
afterEach(async () => {
  await emu?.stop();
  emu = undefined;
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

it("accessctl-export --rules: up of the printed program changes nothing; preview --refresh is clean", async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  await exportRoundTrip(emu, "rules", dir);
});

it("accessctl-export (IpPolicyRuleSet form): up of the printed program changes nothing; preview --refresh is clean", async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  await exportRoundTrip(emu, "set", dir);
});
