// Whose object is it (issue 35), through the provider modules against the emulator: what another
// stack's provider made (its marker) is never moved, recorded or deleted by a set; a rule resource's
// delete leaves a rule that is no longer the one it recorded; a key of another account makes no
// object of the stack gone. One process plays each stack (a URN of its own).
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { client, RunningEmulator, startEmulator } from "../helpers/emulator";
import { startFaultProxy } from "../helpers/fault-proxy";
import { compiled, configureRequest, newRun, serializedProvider } from "../helpers/provider";

const config = compiled("provider/config.js");
const inOperation = compiled("provider/operation.js").inOperation;
const URN_A = "urn:pulumi:a::shop::pulumi-nodejs:dynamic/accessctl:IpPolicyRuleSet::office";
const URN_B = "urn:pulumi:b::shop::pulumi-nodejs:dynamic/accessctl:IpPolicyRule::partner";
let emu: RunningEmulator;
let set: any;
let rule: any;
// The stacks here share a team key (docs/design/ownership.md): their markers verify. Without one, or
// with a marker that does not verify, a set's policy holds no one else's rules (see "unverified markers").
const TEAM_KEY = "team-key-of-shop-0123456789abcdef";
beforeAll(async () => {
  process.env.ACCESSCTL_TEAM_KEY = TEAM_KEY;
  emu = await startEmulator(["--rate-limit", "off"]);
  set = (await serializedProvider("ip-policy-rule-set")).provider;
  rule = (await serializedProvider("ip-policy-rule")).provider;
});
afterAll(async () => {
  delete process.env.ACCESSCTL_TEAM_KEY;
  await emu.stop();
});

const withKey = (key: string) =>
  config.configure(
    configureRequest({
      "accessctl:apiUrl": emu.url,
      "accessctl:apiKey": key,
      "accessctl:maxRequestsPerMinute": "1000000",
    }),
  );
const api = () => client(emu.url, emu.adminToken);
const live = async (p: string) =>
  ((await api().get("/ip_policy_rules")).body.ip_policy_rules as any[])
    .filter((r) => r.ip_policy.id === p)
    .map((r) => `${r.cidr} ${r.action}`)
    .sort();
/** A new provider process: what it proved of keys and walked of lists is forgotten too. */
const freshProcess = () => {
  newRun();
  const all = (globalThis as any)[Symbol.for("@accessctl/pulumi/state/v1")];
  for (const what of ["http-trust", "list-reads", "http-hints"]) delete all?.[what];
};
const cleanUp = async (p: string) => {
  for (const r of (await api().get("/ip_policy_rules")).body.ip_policy_rules as any[])
    if (r.ip_policy.id === p) await api().delete(`/ip_policy_rules/${r.id}`);
};

describe("a set and another stack's rule on its policy (case 2)", () => {
  it("refresh leaves it out of the state, naming it; up moves the set's own allow, not it; the set's destroy leaves it and is not stopped by it", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    freshProcess(); // (an earlier test's rules there were deleted directly: no walk of this process saw that)
    const made = await set.create(
      (await set.check({}, { ipPolicyId: p, rules: [{ cidr: "192.0.2.0/24", action: "allow" }], __urn: URN_A })).inputs,
    );
    newRun(); // stack B's command
    const theirs = await rule.create(
      (await rule.check({}, { ipPolicyId: p, cidr: "10.7.0.0/16", action: "allow", __urn: URN_B })).inputs,
    );
    newRun(); // stack A: up --refresh
    const refreshed = (await set.read(p, made.outs)).props;
    expect(Object.keys(refreshed.rules)).toEqual(["192.0.2.0/24"]);
    const next = (
      await set.check(made.outs, { ipPolicyId: p, rules: [{ cidr: "172.16.0.0/12", action: "allow" }], __urn: URN_A })
    ).inputs;
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
    const mine = await rule.create(
      (await rule.check({}, { ipPolicyId: p, cidr: "10.8.0.0/16", action: "allow", __urn: URN_B })).inputs,
    );
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
    freshProcess(); // (an earlier test's rules there were deleted directly: no walk of this process saw that)
    const made = await set.create(
      (
        await set.check(
          {},
          {
            ipPolicyId: p,
            rules: [
              { cidr: "10.1.0.0/16", action: "allow" },
              { cidr: "10.2.0.0/16", action: "deny" },
            ],
            __urn: URN_A,
          },
        )
      ).inputs,
    );
    freshProcess();
    await withKey(emu.otherAccountToken);
    const err = await set.read(p, made.outs).catch((e: Error) => e);
    expect(String(err)).toMatch(
      /not taken as deleted: accessctl:apiKey sees none of this stack's objects here \(it reaches the account whose API keys belong to usr_\w+/,
    );
    // The right key: the rules are there; one deleted by hand is gone (another rule of the policy shows the key sees it).
    newRun();
    await withKey(emu.adminToken);
    await api().delete(`/ip_policy_rules/${made.outs.rules["10.2.0.0/16"].id}`);
    expect(Object.keys((await set.read(p, made.outs)).props.rules)).toEqual(["10.1.0.0/16"]);
    await cleanUp(p);
  });

  it("a set's destroy with ACCESSCTL_ACCEPT_GONE=1 and a key of another account fails, deleting nothing and forgetting nothing", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    freshProcess(); // (an earlier test's rules there were deleted directly: no walk of this process saw that)
    const made = await set.create(
      (
        await set.check(
          {},
          {
            ipPolicyId: p,
            rules: [
              { cidr: "10.1.0.0/16", action: "allow" },
              { cidr: "10.2.0.0/16", action: "deny" },
            ],
            __urn: URN_A,
          },
        )
      ).inputs,
    );
    freshProcess();
    await withKey(emu.otherAccountToken);
    process.env.ACCESSCTL_ACCEPT_GONE = "1";
    try {
      const err = await inOperation(() => set.delete(p, made.outs), undefined, "delete").catch((e: Error) => e);
      expect(String(err)).toContain("not taken as deleted: accessctl:apiKey sees none of this stack's objects here");
    } finally {
      delete process.env.ACCESSCTL_ACCEPT_GONE;
    }
    expect(await live(p)).toEqual(["10.1.0.0/16 allow", "10.2.0.0/16 deny"]);
    await withKey(emu.adminToken);
    await cleanUp(p);
  });

  it("a rule deleted by hand, alone on its policy: not taken as gone unless the user says so (ACCESSCTL_ACCEPT_GONE=1)", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[1];
    newRun();
    const made = await rule.create(
      (await rule.check({}, { ipPolicyId: p, cidr: "10.9.0.0/16", action: "deny", __urn: URN_B })).inputs,
    );
    await api().delete(`/ip_policy_rules/${made.id}`);
    freshProcess();
    expect(String(await rule.read(made.id, made.outs).catch((e: Error) => e))).toContain(
      "ACCESSCTL_ACCEPT_GONE=1 pulumi refresh",
    );
    freshProcess();
    process.env.ACCESSCTL_ACCEPT_GONE = "1";
    try {
      expect(await inOperation(() => rule.read(made.id, made.outs), undefined, "read")).toEqual({});
      // Not in a destroy: its read of the rule is no refresh (issue 39, reproduction 4).
      freshProcess();
      expect(
        String(await inOperation(() => rule.delete(made.id, made.outs), undefined, "delete").catch((e: Error) => e)),
      ).toContain("not taken as deleted");
    } finally {
      delete process.env.ACCESSCTL_ACCEPT_GONE;
    }
  });
});

describe("a new set's preview fails where its create would", () => {
  it("a policy that holds rules (without takeOver), or whose rules another stack's set made: check fails, naming them; with takeOver it passes", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    const byHand = (await api().post("/ip_policy_rules", { ip_policy_id: p, cidr: "10.4.0.0/16", action: "allow" }))
      .body;
    freshProcess();
    const held = await set.check({}, { ipPolicyId: p, rules: [{ cidr: "10.0.0.0/8", action: "allow" }], __urn: URN_A });
    expect(held.failures.map((f: { reason: string }) => f.reason)).toEqual([
      expect.stringContaining(
        `the policy already holds 1 rule: 10.4.0.0/16 allow (${byHand.id}); up would change nothing. To make them this resource's, declare takeOver: true`,
      ),
    ]);
    freshProcess();
    expect(
      (
        await set.check(
          {},
          { ipPolicyId: p, rules: [{ cidr: "10.0.0.0/8", action: "allow" }], takeOver: true, __urn: URN_A },
        )
      ).failures,
    ).toEqual([]);
    await cleanUp(p);
    // Another stack's set on the policy.
    freshProcess();
    const theirs = await set.create(
      (
        await set.check(
          {},
          {
            ipPolicyId: p,
            rules: [{ cidr: "10.6.0.0/16", action: "deny" }],
            __urn: "urn:pulumi:c::shop::accessctl:index:IpPolicyRuleSet::edge",
          },
        )
      ).inputs,
    );
    freshProcess();
    const other = await set.check(
      {},
      { ipPolicyId: p, rules: [{ cidr: "10.0.0.0/8", action: "allow" }], takeOver: true, __urn: URN_A },
    );
    expect(other.failures.map((f: { property: string; reason: string }) => `${f.property}: ${f.reason}`)).toEqual([
      expect.stringMatching(
        /^ipPolicyId: .*the rules of IP policy ipp_\w+ are managed by IpPolicyRuleSet edge of stack shop\/c \(their metadata say so\); up would change nothing\. A policy has one set/,
      ),
    ]);
    freshProcess();
    await set.delete(p, theirs.outs);
  });
});

// What an attack on the above found, each fixed (issue 35's review).
describe("what an attack found", () => {
  const URN_C = "urn:pulumi:c::shop::accessctl:index:IpPolicyRuleSet::edge";

  it("ACCESSCTL_ADOPT_EXISTING=1 does not make a rule resource take a rule another stack's marker names", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    newRun();
    const theirs = await rule.create(
      (
        await rule.check(
          {},
          { ipPolicyId: p, cidr: "10.7.0.0/16", action: "allow", description: "partner office", __urn: URN_B },
        )
      ).inputs,
    );
    newRun();
    process.env.ACCESSCTL_ADOPT_EXISTING = "1";
    try {
      const mine = await rule
        .create(
          (
            await rule.check(
              {},
              {
                ipPolicyId: p,
                cidr: "10.7.0.0/16",
                action: "allow",
                description: "stack a's",
                __urn: "urn:pulumi:a::shop::x:IpPolicyRule::guard",
              },
            )
          ).inputs,
        )
        .catch((e: Error) => e);
      expect(String(mine)).toContain("was made by IpPolicyRule partner of stack shop/b (its metadata says so)");
    } finally {
      delete process.env.ACCESSCTL_ADOPT_EXISTING;
    }
    expect((await api().get(`/ip_policy_rules/${theirs.id}`)).body.description).toBe("partner office");
    await cleanUp(p);
  });

  it("a new set's check after its first step fails: the rule that step made is in the error's outputs (a partial create), not left unrecorded", async () => {
    const p = emu.fixtures.ipPolicies[0];
    const proxy = await startFaultProxy(emu.url);
    try {
      await config.configure(
        configureRequest({
          "accessctl:apiUrl": proxy.url,
          "accessctl:apiKey": emu.adminToken,
          "accessctl:maxRequestsPerMinute": "1000000",
          "accessctl:maxRetries": "0",
        }),
      );
      freshProcess();
      const inputs = (
        await set.check(
          {},
          {
            ipPolicyId: p,
            rules: [
              { cidr: "0.0.0.0/0", action: "allow" },
              { cidr: "10.0.0.0/8", action: "deny" },
            ],
            __urn: URN_A,
          },
        )
      ).inputs;
      proxy.afterRequest("POST", /^\/ip_policy_rules$/, 1, async () =>
        proxy.fail({ method: "GET", path: /^\/ip_policy_rules$/, when: "before", status: 400, times: Infinity }),
      );
      const err = await set.create(inputs).catch((e: any) => e);
      const made = await live(p);
      expect(made).toHaveLength(1);
      expect(err.id).toBe(p);
      expect(Object.values(err.properties.rules).map((r: any) => `${r.cidr} ${r.action}`)).toEqual(made);
    } finally {
      await proxy.close();
      await withKey(emu.adminToken);
      await cleanUp(p);
    }
  });

  it("a set whose create failed before its first rule does not add rules, at its next up, to a policy another stack's set holds since", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[1];
    freshProcess();
    // Stack c's create failed before any rule: the engine keeps a set with no rules.
    const failed = { ipPolicyId: p, rules: {}, __urn: URN_C };
    freshProcess();
    const a = await set.create(
      (await set.check({}, { ipPolicyId: p, rules: [{ cidr: "10.0.0.0/8", action: "deny" }], __urn: URN_A })).inputs,
    );
    freshProcess();
    const next = (
      await set.check(failed, { ipPolicyId: p, rules: [{ cidr: "10.6.0.0/16", action: "allow" }], __urn: URN_C })
    ).inputs;
    await set.diff(p, failed, next);
    const up = await set.update(p, failed, next).catch((e: Error) => e);
    expect(String(up)).toMatch(
      /the rules of IP policy ipp_\w+ are managed by IpPolicyRuleSet office of stack shop\/a \(their metadata say so\); nothing was changed/,
    );
    expect(await live(p)).toEqual(["10.0.0.0/8 deny"]);
    freshProcess();
    await set.delete(p, a.outs);
  });

  it("a key proven by an object of one profile proves nothing of another profile's objects (that profile's key set, by mistake, to the first account's)", async () => {
    const withProfileKey = (bKey: string) =>
      config.configure(
        configureRequest({
          "accessctl:apiUrl": emu.url,
          "accessctl:apiKey": emu.adminToken,
          "accessctl:maxRequestsPerMinute": "1000000",
          "accessctl:profiles": JSON.stringify({
            b: { apiUrl: emu.url, apiKey: bKey, maxRequestsPerMinute: "1000000" },
          }),
        }),
      );
    await withProfileKey(emu.otherAccountToken);
    newRun();
    const a = await rule.create(
      (
        await rule.check(
          {},
          { ipPolicyId: emu.fixtures.ipPolicies[0], cidr: "10.1.0.0/16", action: "allow", __urn: URN_B + "-a" },
        )
      ).inputs,
    );
    const b = await rule.create(
      (
        await rule.check(
          {},
          {
            ipPolicyId: emu.otherAccountFixtures.ipPolicies[0],
            cidr: "10.2.0.0/16",
            action: "deny",
            profile: "b",
            __urn: URN_B + "-b",
          },
        )
      ).inputs,
    );
    freshProcess();
    await withProfileKey(emu.adminToken); // the mistake
    expect((await rule.read(a.id, a.outs)).id).toBe(a.id); // proves the key, for the default profile
    expect(String(await rule.read(b.id, b.outs).catch((e: Error) => e))).toContain(
      "not taken as deleted: accessctl:profiles.b.apiKey sees none of this stack's objects here",
    );
    expect(
      String(
        await rule.delete(b.id, b.outs).then(
          () => "deleted",
          (e: Error) => e,
        ),
      ),
    ).toContain("not taken as deleted");
    await withKey(emu.adminToken);
    await rule.delete(a.id, a.outs);
    await client(emu.url, emu.otherAccountToken).delete(`/ip_policy_rules/${b.id}`);
  });

  it("adoptId of a rule on another CIDR: refused before any write (the preview shows a create, not the move)", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    const deny = (await api().post("/ip_policy_rules", { ip_policy_id: p, cidr: "10.0.0.0/8", action: "deny" })).body;
    freshProcess();
    const adopted = await rule
      .create(
        (await rule.check({}, { ipPolicyId: p, cidr: "10.1.0.0/16", action: "deny", adoptId: deny.id, __urn: URN_B }))
          .inputs,
      )
      .catch((e: Error) => e);
    expect(String(adopted)).toContain(
      `adopt IP policy rule ${deny.id}: its cidr is 10.0.0.0/8, not 10.1.0.0/16; nothing was changed. Declare cidr: "10.0.0.0/8"`,
    );
    expect(await live(p)).toEqual(["10.0.0.0/8 deny"]);
    await cleanUp(p);
  });

  it("a set removed while IpPolicyRules of the same run adopt its rules: its delete leaves them to those resources", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    freshProcess(); // (an earlier test's rules there were deleted directly: no walk of this process saw that)
    const made = await set.create(
      (
        await set.check(
          {},
          {
            ipPolicyId: p,
            rules: [
              { cidr: "10.0.0.0/8", action: "allow" },
              { cidr: "10.5.0.0/16", action: "deny" },
            ],
            __urn: URN_A,
          },
        )
      ).inputs,
    );
    newRun(); // the up that moves the rules into rule resources: the adoptions, then the set's delete
    const denyId = made.outs.rules["10.5.0.0/16"].id;
    await rule.create(
      (
        await rule.check(
          {},
          { ipPolicyId: p, cidr: "10.5.0.0/16", action: "deny", description: "kept", adoptId: denyId, __urn: URN_B },
        )
      ).inputs,
    );
    await set.delete(p, made.outs);
    expect(await live(p)).toEqual(["10.5.0.0/16 deny"]);
    await cleanUp(p);
  });
});

describe("unverified markers prove nothing (issue 39, reproduction 5)", () => {
  /** What the provider reports (outside an engine, to stderr) while `fn` runs. */
  const said = async <T>(fn: () => Promise<T>): Promise<{ value: T; text: string }> => {
    const lines: string[] = [];
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: any) => (lines.push(String(chunk)), true));
    try {
      return { value: await fn(), text: lines.join("") };
    } finally {
      spy.mockRestore();
    }
  };
  const forge = (from: any, extra: Record<string, string> = {}) =>
    JSON.stringify({ ...JSON.parse(from.metadata), ...extra });

  it("a marker copied from another stack's rule onto a hand-made 0.0.0.0/0 allow: the refresh records it, naming its claim; up deletes it; the copied-from rule stays theirs", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    freshProcess(); // (an earlier test's rules there were deleted directly: no walk of this process saw that)
    const made = await set.create(
      (await set.check({}, { ipPolicyId: p, rules: [{ cidr: "192.0.2.0/24", action: "deny" }], __urn: URN_A })).inputs,
    );
    newRun();
    const theirs = await rule.create(
      (await rule.check({}, { ipPolicyId: p, cidr: "10.7.0.0/16", action: "allow", __urn: URN_B })).inputs,
    );
    const signed = (await api().get(`/ip_policy_rules/${theirs.id}`)).body;
    expect(JSON.parse(signed.metadata).idSig).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const forged = (
      await api().post("/ip_policy_rules", {
        ip_policy_id: p,
        cidr: "0.0.0.0/0",
        action: "allow",
        metadata: forge(signed),
      })
    ).body;
    const ghost = (
      await api().post("/ip_policy_rules", {
        ip_policy_id: p,
        cidr: "10.9.0.0/16",
        action: "allow",
        metadata: forge(signed, { stack: "shop/nowhere", idSig: "" }),
      })
    ).body;
    freshProcess();
    const { value, text } = await said(() => set.read(p, { ...made.outs, __urn: URN_A }));
    expect(Object.keys(value.props.rules).sort()).toEqual(["0.0.0.0/0", "10.9.0.0/16", "192.0.2.0/24"]);
    expect(text).toContain(
      `added 0.0.0.0/0 allow (${forged.id}), claims IpPolicyRule partner of stack shop/b: not verified (its signature is bound to another rule)`,
    );
    expect(text).toContain(
      `added 10.9.0.0/16 allow (${ghost.id}), claims IpPolicyRule partner of stack shop/nowhere: not verified (it is not signed)`,
    );
    expect(text).toContain(
      `left 10.7.0.0/16 allow (${theirs.id}), made by IpPolicyRule partner of stack shop/b (not recorded)`,
    );
    const next = (
      await set.check(value.props, { ipPolicyId: p, rules: [{ cidr: "192.0.2.0/24", action: "deny" }], __urn: URN_A })
    ).inputs;
    const d = await set.diff(p, value.props, next);
    expect(d.changes).toBe(true);
    await set.update(p, value.props, next);
    expect(await live(p)).toEqual(["10.7.0.0/16 allow", "192.0.2.0/24 deny"]);
    await cleanUp(p);
  });

  it("with no team key a set is authoritative: another stack's rule on its policy is drift, named with its claim, and deleted by up", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    freshProcess(); // (an earlier test's rules there were deleted directly: no walk of this process saw that)
    const made = await set.create(
      (await set.check({}, { ipPolicyId: p, rules: [{ cidr: "192.0.2.0/24", action: "allow" }], __urn: URN_A })).inputs,
    );
    newRun();
    await rule.create(
      (await rule.check({}, { ipPolicyId: p, cidr: "10.7.0.0/16", action: "allow", __urn: URN_B })).inputs,
    );
    delete process.env.ACCESSCTL_TEAM_KEY;
    try {
      freshProcess();
      const { value, text } = await said(() => set.read(p, { ...made.outs, __urn: URN_A }));
      expect(text).toMatch(
        /added 10\.7\.0\.0\/16 allow \(ipr_\w+\), claims IpPolicyRule partner of stack shop\/b: not verified \(no team key is set \(accessctl:teamKey or ACCESSCTL_TEAM_KEY\)\)/,
      );
      const next = (
        await set.check(value.props, {
          ipPolicyId: p,
          rules: [{ cidr: "192.0.2.0/24", action: "allow" }],
          __urn: URN_A,
        })
      ).inputs;
      await set.diff(p, value.props, next);
      await set.update(p, value.props, next);
      expect(await live(p)).toEqual(["192.0.2.0/24 allow"]);
    } finally {
      process.env.ACCESSCTL_TEAM_KEY = TEAM_KEY;
    }
    await cleanUp(p);
  });

  it("a rule resource's delete deletes its rule although a marker of another stack was written on it by hand (not verified)", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[1];
    newRun();
    const mine = await rule.create(
      (await rule.check({}, { ipPolicyId: p, cidr: "10.8.0.0/16", action: "allow", __urn: URN_B })).inputs,
    );
    const claim = JSON.stringify({
      "managed-by": "pulumi-accessctl",
      stack: "shop/a",
      resource: "IpPolicyRuleSet::office",
      attempt: "0123456789abcdef",
    });
    await api().patch(`/ip_policy_rules/${mine.id}`, { metadata: claim });
    newRun();
    await rule.delete(mine.id, mine.outs);
    expect(await live(p)).toEqual([]);
  });

  it("a rule resource's move writes a marker signed onto its new CIDR: a set of another stack on the policy still leaves it", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    freshProcess(); // (an earlier test's rules there were deleted directly: no walk of this process saw that)
    const made = await set.create(
      (await set.check({}, { ipPolicyId: p, rules: [{ cidr: "192.0.2.0/24", action: "deny" }], __urn: URN_A })).inputs,
    );
    newRun();
    const theirs = await rule.create(
      (await rule.check({}, { ipPolicyId: p, cidr: "10.7.0.0/16", action: "allow", __urn: URN_B })).inputs,
    );
    const moved = (await rule.check(theirs.outs, { ipPolicyId: p, cidr: "10.6.0.0/16", action: "allow", __urn: URN_B }))
      .inputs;
    await rule.update(theirs.id, { ...theirs.outs, __urn: URN_B }, moved);
    freshProcess();
    const refreshed = (await set.read(p, { ...made.outs, __urn: URN_A })).props;
    expect(Object.keys(refreshed.rules)).toEqual(["192.0.2.0/24"]);
    await cleanUp(p);
  });
});

describe("a lost create takes only the rule it sent (an insider's attack)", () => {
  it("the attempt's marker copied by hand onto a 0.0.0.0/0 allow while the answer was lost: not recorded as the set's", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[1];
    freshProcess();
    const made = await set.create(
      (await set.check({}, { ipPolicyId: p, rules: [{ cidr: "192.0.2.0/24", action: "deny" }], __urn: URN_A })).inputs,
    );
    const proxy = await startFaultProxy(emu.url);
    let copied = false;
    try {
      const through = {
        "accessctl:apiUrl": proxy.url,
        "accessctl:apiKey": emu.adminToken,
        "accessctl:maxRequestsPerMinute": "1000000",
      };
      await config.configure(configureRequest({ ...through, "accessctl:maxRetries": "0" }));
      freshProcess();
      // The insider watches the console: the new rule's marker (its attempt) goes onto a hand-made allow.
      proxy.serialWrites(async () => {
        if (copied) return;
        const mine = ((await api().get("/ip_policy_rules")).body.ip_policy_rules as any[]).find(
          (r) => r.ip_policy.id === p && r.cidr === "10.0.0.0/8",
        );
        if (!mine) return;
        copied = true;
        await api().post("/ip_policy_rules", {
          ip_policy_id: p,
          cidr: "0.0.0.0/0",
          action: "allow",
          metadata: mine.metadata,
        });
      });
      proxy.fail({ method: "POST", path: /^\/ip_policy_rules$/, when: "after", status: 502 });
      const rules = [
        { cidr: "192.0.2.0/24", action: "deny" },
        { cidr: "10.0.0.0/8", action: "deny" },
      ];
      const next = (await set.check(made.outs, { ipPolicyId: p, rules, __urn: URN_A })).inputs;
      await set.diff(p, made.outs, next);
      const err = await set.update(p, { ...made.outs, __urn: URN_A }, next).then(
        () => undefined,
        (e: any) => e,
      );
      expect(copied).toBe(true);
      const recorded = Object.values(err?.properties?.rules ?? {})
        .map((r: any) => `${r.cidr} ${r.action}`)
        .sort();
      expect(recorded).toEqual(["10.0.0.0/8 deny", "192.0.2.0/24 deny"]);
      expect(String(err)).toContain("not recorded, as nothing proves a create of this run made them: 0.0.0.0/0 allow");
    } finally {
      await proxy.close();
      await withKey(emu.adminToken);
      await cleanUp(p);
    }
  });
});

// A signed marker outlives its rule (issue 39, an insider's attack after the fix of reproduction 5): the
// create signs the marker again once the rule id is known (a PATCH), and only that signature proves.
describe("a marker is bound to its rule's id", () => {
  const ownership = compiled("provider/ownership.js");
  /** A marker of stack B signed as a create signs it before the rule id is known (id-less). */
  const idLess = (cidr: string, action: string, p: string) =>
    ownership.markerText(ownership.newMarker(URN_B, ownership.ruleIdentity(p, cidr, action)));
  const saidBy = async <T>(fn: () => Promise<T>): Promise<{ value: T; text: string }> => {
    const lines: string[] = [];
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: any) => (lines.push(String(chunk)), true));
    try {
      return { value: await fn(), text: lines.join("") };
    } finally {
      spy.mockRestore();
    }
  };

  it("stack B removes its allow (reviewed); the insider copies its old marker onto a new identical rule: drift to set A, deleted by up", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    freshProcess();
    const made = await set.create(
      (await set.check({}, { ipPolicyId: p, rules: [{ cidr: "192.0.2.0/24", action: "deny" }], __urn: URN_A })).inputs,
    );
    newRun(); // stack B: its IpPolicyRule, signed marker
    const theirs = await rule.create(
      (await rule.check({}, { ipPolicyId: p, cidr: "10.0.0.0/8", action: "allow", __urn: URN_B })).inputs,
    );
    const metadata = (await api().get(`/ip_policy_rules/${theirs.id}`)).body.metadata; // the insider reads it in the console
    expect(JSON.parse(metadata)).toMatchObject({
      stack: "shop/b",
      idSig: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
    });
    expect(JSON.parse(metadata).sig).toBeUndefined(); // the id-less signature is gone: nothing to copy that is pending
    freshProcess(); // while it stands, set A leaves it
    expect(Object.keys((await set.read(p, { ...made.outs, __urn: URN_A })).props.rules)).toEqual(["192.0.2.0/24"]);
    newRun(); // stack B removes the rule from its program: a reviewed `up` deletes it
    await rule.delete(theirs.id, theirs.outs);
    const copy = (
      await api().post("/ip_policy_rules", { ip_policy_id: p, cidr: "10.0.0.0/8", action: "allow", metadata })
    ).body;
    freshProcess(); // stack A's drift gate: preview --refresh --expect-no-changes
    const { value, text } = await saidBy(() => set.read(p, { ...made.outs, __urn: URN_A }));
    expect(Object.keys(value.props.rules)).toEqual(["10.0.0.0/8", "192.0.2.0/24"]);
    expect(text).toContain(
      `added 10.0.0.0/8 allow (${copy.id}), claims IpPolicyRule partner of stack shop/b: not verified (its signature is bound to another rule)`,
    );
    const next = (
      await set.check(value.props, { ipPolicyId: p, rules: [{ cidr: "192.0.2.0/24", action: "deny" }], __urn: URN_A })
    ).inputs;
    expect((await set.diff(p, value.props, next)).changes).toBe(true);
    await set.update(p, value.props, next);
    expect(await live(p)).toEqual(["192.0.2.0/24 deny"]);
    await cleanUp(p);
  });

  it("an id-less signed marker (a stack between its create and its second signature) is pending for the grace, then drift", async () => {
    await withKey(emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    freshProcess();
    const made = await set.create(
      (await set.check({}, { ipPolicyId: p, rules: [{ cidr: "192.0.2.0/24", action: "deny" }], __urn: URN_A })).inputs,
    );
    const midway = (
      await api().post("/ip_policy_rules", {
        ip_policy_id: p,
        cidr: "10.0.0.0/8",
        action: "allow",
        metadata: idLess("10.0.0.0/8", "allow", p),
      })
    ).body;
    freshProcess();
    const within = await saidBy(() => set.read(p, { ...made.outs, __urn: URN_A }));
    expect(Object.keys(within.value.props.rules)).toEqual(["192.0.2.0/24"]);
    expect(within.text).toMatch(
      new RegExp(
        `left 10\\.0\\.0\\.0/8 allow \\(${midway.id}\\), pending: signed by IpPolicyRule partner of stack shop/b before its id was known, left alone until \\S+Z`,
      ),
    );
    // Set A's up and destroy within the grace leave it too.
    const next = (
      await set.check(within.value.props, {
        ipPolicyId: p,
        rules: [{ cidr: "192.0.2.0/24", action: "deny" }],
        __urn: URN_A,
      })
    ).inputs;
    expect((await set.diff(p, within.value.props, next)).changes).toBe(false);
    // Past the grace (the service's clock, as this process knows it, 11 minutes on).
    const now = Date.now();
    const spy = vi.spyOn(Date, "now").mockReturnValue(now + ownership.ID_SIGNING_GRACE_MS + 60_000);
    try {
      freshProcess();
      const past = await saidBy(() => set.read(p, { ...made.outs, __urn: URN_A }));
      expect(Object.keys(past.value.props.rules)).toEqual(["10.0.0.0/8", "192.0.2.0/24"]);
      expect(past.text).toContain(
        `added 10.0.0.0/8 allow (${midway.id}), claims IpPolicyRule partner of stack shop/b: not verified (it was signed before its rule id was known and never bound to it)`,
      );
      const later = (
        await set.check(past.value.props, {
          ipPolicyId: p,
          rules: [{ cidr: "192.0.2.0/24", action: "deny" }],
          __urn: URN_A,
        })
      ).inputs;
      await set.diff(p, past.value.props, later);
      await set.update(p, past.value.props, later);
    } finally {
      spy.mockRestore();
    }
    expect(await live(p)).toEqual(["192.0.2.0/24 deny"]);
    await cleanUp(p);
  });

  it("a rule resource whose second signature fails: a partial create holding the rule; its next update binds the marker", async () => {
    const p = emu.fixtures.ipPolicies[1];
    const proxy = await startFaultProxy(emu.url);
    try {
      await config.configure(
        configureRequest({
          "accessctl:apiUrl": proxy.url,
          "accessctl:apiKey": emu.adminToken,
          "accessctl:maxRequestsPerMinute": "1000000",
          "accessctl:maxRetries": "0",
        }),
      );
      freshProcess();
      const inputs = (await rule.check({}, { ipPolicyId: p, cidr: "10.3.0.0/16", action: "allow", __urn: URN_B }))
        .inputs;
      proxy.fail({ method: "PATCH", path: /^\/ip_policy_rules\/ipr_/, when: "before", status: 503 });
      const err = await rule.create(inputs).then(
        () => undefined,
        (e: any) => e,
      );
      expect(err?.id).toMatch(/^ipr_/);
      expect(JSON.parse((await api().get(`/ip_policy_rules/${err.id}`)).body.metadata).idSig).toBeUndefined();
      freshProcess();
      await rule.update(err.id, { ...err.properties, __urn: URN_B }, (await rule.check(err.properties, inputs)).inputs);
      expect(JSON.parse((await api().get(`/ip_policy_rules/${err.id}`)).body.metadata)).toMatchObject({
        stack: "shop/b",
        idSig: expect.any(String),
      });
    } finally {
      await proxy.close();
      await withKey(emu.adminToken);
      await cleanUp(p);
    }
  });

  it("a second signature that fails after the create: the rule is recorded, and the stack's next up signs it (bound to its id)", async () => {
    const p = emu.fixtures.ipPolicies[1];
    const proxy = await startFaultProxy(emu.url);
    try {
      await config.configure(
        configureRequest({
          "accessctl:apiUrl": proxy.url,
          "accessctl:apiKey": emu.adminToken,
          "accessctl:maxRequestsPerMinute": "1000000",
          "accessctl:maxRetries": "0",
        }),
      );
      freshProcess();
      const inputs = (
        await set.check({}, { ipPolicyId: p, rules: [{ cidr: "10.0.0.0/8", action: "allow" }], __urn: URN_A })
      ).inputs;
      proxy.fail({ method: "PATCH", path: /^\/ip_policy_rules\/ipr_/, when: "before", status: 503 });
      const err = await set.create(inputs).then(
        () => undefined,
        (e: any) => e,
      );
      expect(err?.id).toBe(p);
      const rec = err.properties.rules["10.0.0.0/8"];
      const before = JSON.parse((await api().get(`/ip_policy_rules/${rec.id}`)).body.metadata);
      expect(before).toMatchObject({ stack: "shop/a", sig: expect.any(String) });
      expect(before.idSig).toBeUndefined();
      // The next up (the engine updates a resource whose create failed partway): it finishes the signature.
      freshProcess();
      const next = (
        await set.check(err.properties, {
          ipPolicyId: p,
          rules: [{ cidr: "10.0.0.0/8", action: "allow" }],
          __urn: URN_A,
        })
      ).inputs;
      await set.update(p, { ...err.properties, __urn: URN_A }, next);
      const after = JSON.parse((await api().get(`/ip_policy_rules/${rec.id}`)).body.metadata);
      expect(after).toMatchObject({ stack: "shop/a", idSig: expect.any(String) });
      expect(after.sig).toBeUndefined();
      // Another stack's set sees it as proven, not pending (its grace not needed).
      await withKey(emu.adminToken);
      freshProcess();
      const verdict = ownership.markerVerdict(
        TEAM_KEY,
        ownership.readMarker(JSON.stringify(after)),
        ownership.ruleIdentity(p, "10.0.0.0/8", "allow"),
        { id: rec.id, createdAt: rec.createdAt },
        Date.now(),
      );
      expect(verdict).toEqual({ kind: "verified" });
    } finally {
      await proxy.close();
      await withKey(emu.adminToken);
      await cleanUp(p);
    }
  });
});
