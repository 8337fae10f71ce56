// Whose object is it (issue 35), through the provider modules against the emulator: what another
// stack's provider made (its marker) is never moved, recorded or deleted by a set; a rule resource's
// delete leaves a rule that is no longer the one it recorded; a key of another account makes no
// object of the stack gone. One process plays each stack (a URN of its own).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, RunningEmulator, startEmulator } from "../helpers/emulator";
import { compiled, configureRequest, newRun, serializedProvider } from "../helpers/provider";

const config = compiled("provider/config.js");
const URN_A = "urn:pulumi:a::shop::pulumi-nodejs:dynamic/accessctl:IpPolicyRuleSet::office";
const URN_B = "urn:pulumi:b::shop::pulumi-nodejs:dynamic/accessctl:IpPolicyRule::partner";
let emu: RunningEmulator;
let set: any;
let rule: any;
beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  set = (await serializedProvider("ip-policy-rule-set")).provider;
  rule = (await serializedProvider("ip-policy-rule")).provider;
});
afterAll(async () => {
  await emu.stop();
});

const withKey = (key: string) => config.configure(configureRequest({ "accessctl:apiUrl": emu.url, "accessctl:apiKey": key, "accessctl:maxRequestsPerMinute": "1000000" }));
const api = () => client(emu.url, emu.adminToken);
const live = async (p: string) => ((await api().get("/ip_policy_rules")).body.ip_policy_rules as any[]).filter((r) => r.ip_policy.id === p).map((r) => `${r.cidr} ${r.action}`).sort();
/** A new provider process: what it proved of keys and walked of lists is forgotten too. */
const freshProcess = () => {
  newRun();
  const all = (globalThis as any)[Symbol.for("@accessctl/pulumi/state/v1")];
  for (const what of ["http-trust", "list-reads", "http-hints"]) delete all?.[what];
};
const cleanUp = async (p: string) => {
  for (const r of (await api().get("/ip_policy_rules")).body.ip_policy_rules as any[]) if (r.ip_policy.id === p) await api().delete(`/ip_policy_rules/${r.id}`);
};

describe("a set and another stack's rule on its policy (case 2)", () => {
  it("refresh leaves it out of the state, naming it; up moves the set's own allow, not it; the set's destroy leaves it and is not stopped by it", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    newRun();
    const made = await set.create((await set.check({}, { ipPolicyId: p, rules: [{ cidr: "192.0.2.0/24", action: "allow" }], __urn: URN_A })).inputs);
    newRun(); // stack B's command
    const theirs = await rule.create((await rule.check({}, { ipPolicyId: p, cidr: "10.7.0.0/16", action: "allow", __urn: URN_B })).inputs);
    newRun(); // stack A: up --refresh
    const refreshed = (await set.read(p, made.outs)).props;
    expect(Object.keys(refreshed.rules)).toEqual(["192.0.2.0/24"]);
    const next = (await set.check(made.outs, { ipPolicyId: p, rules: [{ cidr: "172.16.0.0/12", action: "allow" }], __urn: URN_A })).inputs;
    const after = (await set.update(p, refreshed, next)).outs;
    expect(await live(p)).toEqual(["10.7.0.0/16 allow", "172.16.0.0/12 allow"]);
    expect((await api().get(`/ip_policy_rules/${theirs.id}`)).body.cidr).toBe("10.7.0.0/16");
    expect(after.rules["172.16.0.0/12"].id).toBe(made.outs.rules["192.0.2.0/24"].id); // its own allow, moved
    newRun();
    await set.delete(p, after);
    expect(await live(p)).toEqual(["10.7.0.0/16 allow"]);
    await cleanUp(p);
  });

  it("a rule resource's delete leaves a rule that changed since it was recorded, or that another stack's marker names", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[1];
    newRun();
    const mine = await rule.create((await rule.check({}, { ipPolicyId: p, cidr: "10.8.0.0/16", action: "allow", __urn: URN_B })).inputs);
    await api().patch(`/ip_policy_rules/${mine.id}`, { cidr: "172.16.0.0/12" }); // someone moved it
    newRun();
    await rule.delete(mine.id, mine.outs);
    expect(await live(p)).toEqual(["172.16.0.0/12 allow"]);
    await cleanUp(p);
  });
});

describe("a key of another account makes no object of the stack gone (case 4)", () => {
  it("a set's refresh fails, naming the key's setting and the account it reaches; nothing is forgotten", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    newRun();
    const made = await set.create((await set.check({}, { ipPolicyId: p, rules: [{ cidr: "10.1.0.0/16", action: "allow" }, { cidr: "10.2.0.0/16", action: "deny" }], __urn: URN_A })).inputs);
    freshProcess();
    await withKey(emu.otherAccountToken);
    const err = await set.read(p, made.outs).catch((e: Error) => e);
    expect(String(err)).toMatch(/not taken as deleted: accessctl:apiKey sees none of this stack's objects here \(it reaches the account whose API keys belong to usr_\w+/);
    // The right key: the rules are there; one deleted by hand is gone (another rule of the policy shows the key sees it).
    newRun();
    await withKey(emu.adminToken);
    await api().delete(`/ip_policy_rules/${made.outs.rules["10.2.0.0/16"].id}`);
    expect(Object.keys((await set.read(p, made.outs)).props.rules)).toEqual(["10.1.0.0/16"]);
    await cleanUp(p);
  });

  it("a rule deleted by hand, alone on its policy: not taken as gone unless the user says so (ACCESSCTL_ACCEPT_GONE=1)", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[1];
    newRun();
    const made = await rule.create((await rule.check({}, { ipPolicyId: p, cidr: "10.9.0.0/16", action: "deny", __urn: URN_B })).inputs);
    await api().delete(`/ip_policy_rules/${made.id}`);
    freshProcess();
    expect(String(await rule.read(made.id, made.outs).catch((e: Error) => e))).toContain("ACCESSCTL_ACCEPT_GONE=1 pulumi refresh");
    freshProcess();
    process.env.ACCESSCTL_ACCEPT_GONE = "1";
    try {
      expect(await rule.read(made.id, made.outs)).toEqual({});
    } finally {
      delete process.env.ACCESSCTL_ACCEPT_GONE;
    }
  });
});

describe("a new set's preview fails where its create would", () => {
  it("a policy that holds rules (without takeOver), or whose rules another stack's set made: check fails, naming them; with takeOver it passes", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    const byHand = (await api().post("/ip_policy_rules", { ip_policy_id: p, cidr: "10.4.0.0/16", action: "allow" })).body;
    freshProcess();
    const held = await set.check({}, { ipPolicyId: p, rules: [{ cidr: "10.0.0.0/8", action: "allow" }], __urn: URN_A });
    expect(held.failures.map((f: { reason: string }) => f.reason)).toEqual([expect.stringContaining(`the policy already holds 1 rule: 10.4.0.0/16 allow (${byHand.id}); up would change nothing. To make them this resource's, declare takeOver: true`)]);
    freshProcess();
    expect((await set.check({}, { ipPolicyId: p, rules: [{ cidr: "10.0.0.0/8", action: "allow" }], takeOver: true, __urn: URN_A })).failures).toEqual([]);
    await cleanUp(p);
    // Another stack's set on the policy.
    freshProcess();
    const theirs = await set.create((await set.check({}, { ipPolicyId: p, rules: [{ cidr: "10.6.0.0/16", action: "deny" }], __urn: "urn:pulumi:c::shop::accessctl:index:IpPolicyRuleSet::edge" })).inputs);
    freshProcess();
    const other = await set.check({}, { ipPolicyId: p, rules: [{ cidr: "10.0.0.0/8", action: "allow" }], takeOver: true, __urn: URN_A });
    expect(other.failures.map((f: { property: string; reason: string }) => `${f.property}: ${f.reason}`)).toEqual([expect.stringMatching(/^ipPolicyId: .*the rules of IP policy ipp_\w+ are managed by IpPolicyRuleSet edge of stack shop\/c \(their metadata say so\); up would change nothing\. A policy has one set/)]);
    freshProcess();
    await set.delete(p, theirs.outs);
  });
});
