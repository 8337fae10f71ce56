// accessctl-export (default, one IpPolicyRuleSet per policy with takeOver): the printed program, run with `pulumi up`, takes the policy's rules
// (IpPolicyRuleSet, takeOver: true) and the keys (ApiKey.get) under management and changes nothing.
import { afterAll, beforeAll, it } from "vitest";
import { RunningEmulator, startEmulator } from "../helpers/emulator";
import { exportRoundTrip } from "./export-round-trip";

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
});
afterAll(async () => {
  await emu?.stop();
});

it("accessctl-export (IpPolicyRuleSet form): up of the printed program changes nothing; preview --refresh is clean", async () => {
  await exportRoundTrip(emu, "set");
});
