// A set that takes a policy over in the same run that deletes what held its rules before (the rule
// resources it replaces in the program, or the set it replaces on the same policy, e.g. a profile
// of the same account): the deletes leave the rules the new set recorded (found by an attack: the
// policy ended empty while the state said its rules existed).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, RunningEmulator, startEmulator } from "../helpers/emulator";
import { compiled, configureRequest, newRun, serializedProvider } from "../helpers/provider";

const config = compiled("provider/config.js");
let emu: RunningEmulator;
let set: any;
let rule: any;
beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  set = (await serializedProvider("ip-policy-rule-set")).provider;
  rule = (await serializedProvider("ip-policy-rule")).provider;
  await config.configure(configureRequest({ "accessctl:apiUrl": emu.url, "accessctl:apiKey": emu.adminToken, "accessctl:profiles": JSON.stringify({ main: { apiUrl: emu.url, apiKey: emu.adminToken } }) }));
});
afterAll(async () => {
  await emu.stop();
});

/** A new provider process: what one run remembers (claims, owners) is forgotten. */
function freshRun() {
  newRun();
  const all = (globalThis as unknown as Record<symbol, Record<string, unknown>>)[Symbol.for("@accessctl/pulumi/state/v1")];
  if (all) delete all["ownership"];
}

const live = async (ipPolicyId: string) => ((await client(emu.url, emu.adminToken).get("/ip_policy_rules")).body.ip_policy_rules as { ip_policy: { id: string }; cidr: string }[]).filter((r) => r.ip_policy.id === ipPolicyId).map((r) => r.cidr).sort();

describe("a set that takes over a policy in the run that deletes its former owners", () => {
  it("the rule resources it replaces: their deletes leave the rules", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[0];
    const declared = [{ cidr: "10.0.0.0/8", action: "allow" }, { cidr: "10.1.0.0/16", action: "deny" }];
    const made = [];
    for (const r of declared) made.push(await rule.create((await rule.check({}, { ipPolicyId: P, ...r })).inputs));
    freshRun(); // the next run: the program now declares the set instead of the rules
    const inputs = (await set.check({}, { ipPolicyId: P, rules: declared, takeOver: true })).inputs;
    const taken = await set.create(inputs);
    expect(Object.keys(taken.outs.rules)).toEqual(["10.0.0.0/8", "10.1.0.0/16"]);
    for (const m of made) await rule.delete(m.id, m.outs); // the rule resources removed from the program
    expect(await live(P)).toEqual(["10.0.0.0/8", "10.1.0.0/16"]);
    freshRun();
    await set.delete(P, taken.outs);
  });

  it("the set it replaces on the same policy: its delete leaves the rules", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[1];
    const rules = [{ cidr: "10.0.0.0/8", action: "allow" }, { cidr: "10.1.0.0/16", action: "deny" }];
    const v1 = (await set.check({}, { ipPolicyId: P, rules, takeOver: true })).inputs;
    const old = await set.create(v1);
    freshRun();
    const v2 = (await set.check(v1, { ipPolicyId: P, rules, takeOver: true, profile: "main" })).inputs;
    expect((await set.diff(P, old.outs, v2)).replaces).toEqual(["profile"]);
    const made = await set.create(v2); // the engine creates the replacement, then deletes the old
    await set.delete(P, old.outs);
    expect(Object.keys(made.outs.rules)).toEqual(["10.0.0.0/8", "10.1.0.0/16"]);
    expect(await live(P)).toEqual(["10.0.0.0/8", "10.1.0.0/16"]);
    freshRun();
    await set.delete(P, made.outs);
    expect(await live(P)).toEqual([]);
  });
});
