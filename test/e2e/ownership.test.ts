// Whose object is it, with the real CLI (issue 35): two stacks on one account decide by what the
// provider wrote (its marker in an object's metadata), never by timing or by who ran first.
//   1. a rule create held at a gateway and lost, while the other stack makes the identical rule: not taken;
//   2. a set next to another stack's rule on its policy: never moves, records or deletes it;
//   3. two sets started on one empty policy at once: one goes on, the other deletes what it made and fails;
//   4. a refresh through another account's key: fails, naming the key's setting, and forgets nothing.
// The two stacks share a team key (A in its secret config, B in the environment): their markers verify.
// Issue 39: a marker that does not verify proves nothing (a forged claim on a set's policy is drift),
// and ACCESSCTL_ACCEPT_GONE never empties a state by destroy; a marker is bound to its rule's id, so a
// copy of another stack's marker onto a new identical rule (after that stack removed its own) is drift.
import { afterEach, describe, expect, inject, it } from "vitest";
import { client, listAll, RunningEmulator, startEmulator } from "../helpers/emulator";
import { startFaultProxy } from "../helpers/fault-proxy";
import { packedPlugin, Spec, testStack } from "../helpers/stack";

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const fast = { "accessctl:maxRequestsPerMinute": { value: "100000" } };
const TEAM_KEY = "e2e-team-key-0123456789abcdef";
const teamConfig = { ...fast, "accessctl:teamKey": { value: TEAM_KEY, secret: true } };
const teamEnv = { ACCESSCTL_TEAM_KEY: TEAM_KEY };
const onPolicy = async (emu: RunningEmulator, p: string) =>
  (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).filter((r) => r.ip_policy.id === p);

describe("ownership between stacks", () => {
  it("a lost create, a set beside another stack's rule, two sets at once, a key of another account", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const proxy = await startFaultProxy(emu.url);
    cleanups.push(() => proxy.close());
    const api = client(emu.url, emu.adminToken);
    const [p, q] = emu.fixtures.ipPolicies;
    const stackA = testStack({
      project: inject("e2e"),
      emulator: { ...emu, url: proxy.url },
      name: "own-a",
      extraConfig: teamConfig,
      credentials: "env",
    });
    const stackB = testStack({ project: inject("e2e"), emulator: emu, name: "own-b", extraConfig: fast, env: teamEnv });
    cleanups.push(
      () => stackA.cleanup(),
      () => stackB.cleanup(),
    );

    // 1. A's create of a deny is held 4 s at the gateway and answered 502, never forwarded; B makes the identical rule meanwhile.
    const deny = { ipPolicyId: p, cidr: "198.51.100.0/24", action: "deny" };
    proxy.fail({ method: "POST", path: /^\/ip_policy_rules$/, when: "before", status: 502, delayMs: 4000 });
    const lost = stackA.start("up", { rules: { guard: deny } });
    await new Promise((r) => setTimeout(r, 1500));
    await stackB.ok("up", { rules: { guard: deny } });
    const a1 = await lost.done;
    expect(a1.ok).toBe(false);
    const theirs = (await onPolicy(emu, p)).find((r) => r.cidr === "198.51.100.0/24")!;
    expect(a1.output).toContain(
      `rule ${theirs.id} already holds this CIDR and was made by IpPolicyRule guard of stack accessctl-e2e/own-b (its metadata says so)`,
    );
    await stackA.ok("destroy", { rules: {} });
    expect((await api.get(`/ip_policy_rules/${theirs.id}`)).status).toBe(200); // A took nothing, so deletes nothing

    // 2. A's set on p, beside B's rule: up --refresh moves A's own allow and deletes its deny (B's allow,
    // which the preview's refresh named, does not hold that back); B's rule is left, named; A's destroy leaves it.
    const setOn = (policy: string, rules: object[]): Spec => ({
      sets: { s: { ipPolicyId: policy, rules } },
      idsOnly: true,
    });
    await stackA.ok(
      "up",
      setOn(p, [
        { cidr: "192.0.2.0/24", action: "allow" },
        { cidr: "10.5.0.0/16", action: "deny" },
      ]),
    );
    await stackB.ok("up", { rules: { guard: deny, partner: { ipPolicyId: p, cidr: "10.7.0.0/16", action: "allow" } } });
    const moved = await stackA.ok("up", setOn(p, [{ cidr: "172.16.0.0/12", action: "allow" }]), {
      refresh: true,
      withPreview: true,
    });
    const partner = (await onPolicy(emu, p)).find((r) => r.cidr === "10.7.0.0/16")!;
    expect(moved.output).toContain(
      `left 10.7.0.0/16 allow (${partner.id}), made by IpPolicyRule partner of stack accessctl-e2e/own-b (not recorded)`,
    );
    expect((await onPolicy(emu, p)).map((r) => `${r.cidr} ${r.action}`).sort()).toEqual([
      "10.7.0.0/16 allow",
      "172.16.0.0/12 allow",
      "198.51.100.0/24 deny",
    ]);

    // 4. A refresh through another account's key: fails, naming the setting; the state still holds A's rule.
    const wrongKey = await stackA.run("refresh", setOn(p, [{ cidr: "172.16.0.0/12", action: "allow" }]), {
      env: { ACCESSCTL_API_KEY: emu.otherAccountToken },
    });
    expect(wrongKey.ok).toBe(false);
    expect(wrongKey.output).toContain(
      "not taken as deleted: ACCESSCTL_API_KEY sees none of this stack's objects here (it reaches the account whose API keys belong to usr_",
    );
    const setState = stackA.state().resources.find((r) => r.type.endsWith(":IpPolicyRuleSet"));
    expect(Object.keys(setState.outputs.rules)).toEqual(["172.16.0.0/12"]);
    await stackA.ok("destroy", setOn(p, []));
    expect((await onPolicy(emu, p)).map((r) => r.cidr).sort()).toEqual(["10.7.0.0/16", "198.51.100.0/24"]);
    await stackB.ok("destroy", { rules: {} });
    expect(await onPolicy(emu, p)).toEqual([]);

    // 3. Both sets start on the empty policy q at once (every create held 5 s, so both listings are
    // usually empty): one fails, naming the other; q holds the other's rules only. On a loaded machine
    // the later one's preview may list the first one's rule already: it then fails there, writing nothing.
    proxy.hold("POST", /^\/ip_policy_rules$/, 5000);
    const stackC = testStack({
      project: inject("e2e"),
      emulator: { ...emu, url: proxy.url },
      name: "own-c",
      extraConfig: fast,
      env: teamEnv,
    });
    cleanups.push(() => stackC.cleanup());
    const [x, y] = await Promise.all([
      stackA.start(
        "up",
        setOn(q, [
          { cidr: "10.5.0.0/16", action: "deny" },
          { cidr: "10.0.0.0/8", action: "allow" },
        ]),
      ).done,
      stackC.start("up", setOn(q, [{ cidr: "10.6.0.0/16", action: "deny" }])).done,
    ]);
    expect([x.ok, y.ok].sort()).toEqual([false, true]);
    const [loser, winner] = x.ok ? [y, "own-a"] : [x, "own-c"];
    expect(loser.output).toMatch(
      new RegExp(
        `are managed by IpPolicyRuleSet s of stack accessctl-e2e/${winner} \\(their metadata say so\\); (it started on the policy at the same time as this one and came first, so this set deleted the 1 rule it had made|up would change nothing)`,
      ),
    );
    const held = (await onPolicy(emu, q)).map((r) => r.cidr).sort();
    expect(held).toEqual(x.ok ? ["10.0.0.0/8", "10.5.0.0/16"] : ["10.6.0.0/16"]);
  });

  it("a forged marker on a set's policy is drift: the gate fails naming its claim, up --refresh deletes it; a destroy with ACCESSCTL_ACCEPT_GONE and another account's key keeps the state", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const api = client(emu.url, emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    const stack = testStack({
      project: inject("e2e"),
      emulator: emu,
      name: "own-forged",
      extraConfig: fast,
      credentials: "env",
      env: teamEnv,
    });
    cleanups.push(() => stack.cleanup());
    const spec: Spec = {
      sets: {
        s: {
          ipPolicyId: p,
          rules: [
            { cidr: "10.20.0.0/16", action: "allow" },
            { cidr: "10.5.0.0/16", action: "deny" },
          ],
        },
      },
      idsOnly: true,
    };
    await stack.ok("up", spec);
    const live = async () => (await onPolicy(emu, p)).map((r) => `${r.cidr} ${r.action}`).sort();
    // Reproduction 5: a hand-made 0.0.0.0/0 allow whose marker names a stack that does not exist, with a
    // signature copied from the set's own deny (valid there, not on this rule).
    const deny = (await onPolicy(emu, p)).find((r) => r.cidr === "10.5.0.0/16")!;
    const claim = { ...JSON.parse(deny.metadata), stack: "accessctl-e2e/ghost", resource: "IpPolicyRule::partner" };
    const forged = (
      await api.post("/ip_policy_rules", {
        ip_policy_id: p,
        cidr: "0.0.0.0/0",
        action: "allow",
        metadata: JSON.stringify(claim),
      })
    ).body;
    const gate = await stack.run("preview", spec, { refresh: true, expectNoChanges: true });
    expect(gate.ok).toBe(false);
    expect(gate.output).toContain(
      `added 0.0.0.0/0 allow (${forged.id}), claims IpPolicyRule partner of stack accessctl-e2e/ghost: not verified (its signature is bound to another rule)`,
    );
    await stack.ok("up", spec, { refresh: true });
    expect(await live()).toEqual(["10.20.0.0/16 allow", "10.5.0.0/16 deny"]);
    // Reproduction 4: destroy with the user's say-so and a key of another account: fails, nothing deleted or forgotten.
    const gone = await stack.run("destroy", spec, {
      env: { ...teamEnv, ACCESSCTL_ACCEPT_GONE: "1", ACCESSCTL_API_KEY: emu.otherAccountToken },
    });
    expect(gone.ok).toBe(false);
    expect(gone.output).toContain("not taken as deleted: ACCESSCTL_API_KEY sees none of this stack's objects here");
    expect(await live()).toEqual(["10.20.0.0/16 allow", "10.5.0.0/16 deny"]);
    const set = stack.state().resources.find((r) => r.type.endsWith(":IpPolicyRuleSet"));
    expect(Object.keys(set.outputs.rules).sort()).toEqual(["10.20.0.0/16", "10.5.0.0/16"]);
    await stack.ok("destroy", spec);
    expect(await live()).toEqual([]);
  });

  it("a marker does not outlive its rule: B removes its allow; its old marker copied onto a new identical rule is drift to A's set (plugin host)", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const { home } = packedPlugin(cleanups);
    const api = client(emu.url, emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    const stackA = testStack({
      project: inject("e2e"),
      emulator: emu,
      name: "own-replay-a",
      extraConfig: teamConfig,
      env: home.env,
    });
    const stackB = testStack({
      project: inject("e2e"),
      emulator: emu,
      name: "own-replay-b",
      extraConfig: fast,
      env: teamEnv,
    });
    cleanups.push(
      () => stackA.cleanup(),
      () => stackB.cleanup(),
    );
    const specA: Spec = {
      sets: { s: { ipPolicyId: p, rules: [{ cidr: "192.0.2.0/24", action: "deny" }] } },
      idsOnly: true,
      plugin: true,
    };
    const live = async () => (await onPolicy(emu, p)).map((r) => `${r.cidr} ${r.action}`).sort();
    await stackA.ok("up", specA);
    // B's rule (dynamic host): its create signs the marker again onto the rule's id; A's set leaves it.
    await stackB.ok("up", { rules: { partner: { ipPolicyId: p, cidr: "10.7.0.0/16", action: "allow" } } });
    const partner = (await onPolicy(emu, p)).find((r) => r.cidr === "10.7.0.0/16")!;
    expect(JSON.parse(partner.metadata)).toMatchObject({
      stack: "accessctl-e2e/own-replay-b",
      idSig: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
    });
    const clean = await stackA.run("preview", specA, { refresh: true, expectNoChanges: true });
    expect(clean.exitCode).toBe(0);
    expect(clean.output).toContain(
      `left 10.7.0.0/16 allow (${partner.id}), made by IpPolicyRule partner of stack accessctl-e2e/own-replay-b (not recorded)`,
    );
    // B removes it (a reviewed up); the insider (console, no secret) makes it again with B's old marker.
    await stackB.ok("up", { rules: {} });
    const copy = (
      await api.post("/ip_policy_rules", {
        ip_policy_id: p,
        cidr: "10.7.0.0/16",
        action: "allow",
        metadata: partner.metadata,
      })
    ).body;
    const gate = await stackA.run("preview", specA, { refresh: true, expectNoChanges: true });
    expect(gate.ok).toBe(false);
    expect(gate.output).toContain(
      `added 10.7.0.0/16 allow (${copy.id}), claims IpPolicyRule partner of stack accessctl-e2e/own-replay-b: not verified (its signature is bound to another rule)`,
    );
    await stackA.ok("up", specA, { refresh: true });
    expect(await live()).toEqual(["192.0.2.0/24 deny"]);
    await stackA.ok("destroy", specA);
    expect(await live()).toEqual([]);
  });
});
