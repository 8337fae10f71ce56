// IpPolicyRuleSet with the real engine on a project directory: authoritative drift (a rule added,
// changed or deleted by hand), takeOver, the planner's calls counted at the emulator, checks at
// preview, a partial update that loses nothing, `pulumi` killed in the middle of a create and of
// an update (sets of 300 rules; many more in one resource: npm run bench -- --only set, --set-large).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { client, listAll, RunningEmulator, startEmulator } from "../helpers/emulator";
import { startFaultProxy } from "../helpers/fault-proxy";
import { alive, killJob, Spec, testStack } from "../helpers/stack";

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

// Against an emulator at --rate-limit off, lift our client-side pace too (it defaults to the service's 120/min).
const fast = { "accessctl:maxRequestsPerMinute": { value: "100000" } };

type Rule = { cidr: string; action: string; description?: string; metadata?: string };

/** `count` rules 10.{second+⌊i/250⌋}.{i%250}.0/24, allow. */
function many(count: number, second: number, description = (i: number) => `rule ${i}`): Rule[] {
  return Array.from({ length: count }, (_, i) => ({
    cidr: `10.${second + Math.floor(i / 250)}.${i % 250}.0/24`,
    action: "allow",
    description: description(i),
  }));
}

function setSpec(ipPolicyId: string, rules: Rule[], more: Record<string, unknown> = {}): Spec {
  return { sets: { s: { ipPolicyId, rules, ...more } } };
}

async function policyRules(emu: RunningEmulator, ipPolicyId: string) {
  return (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).filter(
    (r) => r.ip_policy.id === ipPolicyId,
  );
}

/** The policy holds exactly these rules: each CIDR once, with its action and description. */
async function expectExactly(emu: RunningEmulator, ipPolicyId: string, rules: Rule[]) {
  const live = await policyRules(emu, ipPolicyId);
  const shown = (r: Rule) => `${r.cidr} ${r.action} ${r.description ?? ""}`;
  expect(live.map(shown).sort()).toEqual(rules.map(shown).sort());
}

async function until(condition: () => Promise<boolean> | boolean, what: string, seconds = 120) {
  const deadline = Date.now() + seconds * 1000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Write requests by method since `before` (emulator stats), successful ones. */
async function writes(emu: RunningEmulator, before: Record<string, number>) {
  const now = (await emu.stats()).byMethod;
  const delta = (k: string) => (now[k] ?? 0) - (before[k] ?? 0);
  return { POST: delta("POST 2xx"), PATCH: delta("PATCH 2xx"), DELETE: delta("DELETE 2xx") };
}

describe("IpPolicyRuleSet: the policy as one resource", () => {
  it("a rule added by hand fails the drift gate and is named by preview --diff; changed and deleted rules are restored; up deletes the stray", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "set-drift", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const p = emu.fixtures.ipPolicies[0];
    const rules: Rule[] = [
      { cidr: "192.0.2.0/24", action: "allow", description: "office" },
      { cidr: "198.51.100.0/24", action: "deny" },
      { cidr: "2001:DB8:AB::/48", action: "allow", description: "v6" },
    ];
    const up = await stack.ok("up", setSpec(p, rules));
    const out = up.outputs!.set_s.value;
    expect(out.id).toBe(p);
    expect(Object.keys(out.rules)).toEqual(["192.0.2.0/24", "198.51.100.0/24", "2001:db8:ab::/48"]); // keyed by canonical CIDR
    expect(Object.keys(out.rules["192.0.2.0/24"]).sort()).toEqual([
      "action",
      "cidr",
      "createdAt",
      "description",
      "id",
      "metadata",
      "uri",
    ]);
    expect(
      (await stack.ok("preview", setSpec(p, [...rules].reverse()), { refresh: true, expectNoChanges: true }))
        .changeSummary,
    ).toEqual({ same: 2 });

    const api = client(emu.url, emu.adminToken);
    expect(
      (
        await api.post("/ip_policy_rules", {
          ip_policy_id: p,
          cidr: "0.0.0.0/0",
          action: "allow",
          description: "in a hurry",
        })
      ).status,
    ).toBe(201);
    const gate = await stack.run("preview", setSpec(p, rules), { refresh: true, expectNoChanges: true });
    expect(gate.ok).toBe(false);
    // Pulumi's diff of the rules (every rule, changed or not) is hidden; the provider's plan names the rule and says what up will do.
    expect(gate.output).toMatch(/rules \(hidden\)/);
    expect(gate.output).toMatch(
      /plan for ipp_\w+: delete 1: 1 request\n\s+- 0\.0\.0\.0\/0 allow \(ipr_\w+\), description "in a hurry"/,
    );

    const byCidr = (cidr: string) => out.rules[cidr].id;
    expect(
      (await api.patch(`/ip_policy_rules/${byCidr("192.0.2.0/24")}`, { description: "edited by hand" })).status,
    ).toBe(200);
    expect((await api.delete(`/ip_policy_rules/${byCidr("198.51.100.0/24")}`)).status).toBe(204);
    const before = (await emu.stats()).byMethod;
    const fixed = await stack.ok("up", setSpec(p, rules), { refresh: true });
    expect(fixed.summary!.resourceChanges).toMatchObject({ update: 1 });
    expect(await writes(emu, before)).toEqual({ POST: 1, PATCH: 1, DELETE: 1 });
    await expectExactly(
      emu,
      p,
      rules.map((r) => ({ ...r, cidr: r.cidr.toLowerCase() })),
    );
    expect(
      (await stack.ok("preview", setSpec(p, rules), { refresh: true, expectNoChanges: true })).changeSummary,
    ).toEqual({ same: 2 });

    // A deny that came after the last refresh was in no preview: destroy deletes the set's rules and leaves it, naming it.
    const late = (
      await api.post("/ip_policy_rules", {
        ip_policy_id: p,
        cidr: "203.0.113.0/24",
        action: "deny",
        description: "another stack's",
      })
    ).body;
    const destroyed = await stack.ok("destroy", setSpec(p, rules));
    expect(destroyed.output).toContain(
      `left 1 deny rule(s) no preview of this stack showed (added since its last refresh): 203.0.113.0/24 deny (${late.id})`,
    );
    expect((await policyRules(emu, p)).map((r) => r.id)).toEqual([late.id]);
  });

  it("within one command, up does only what its preview showed: a rule that lands between the preview's refresh and the update's is left; a takeover takes only what its preview listed; destroy --refresh leaves what its own refresh found first", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const proxy = await startFaultProxy(emu.url);
    cleanups.push(() => proxy.close());
    const api = client(emu.url, emu.adminToken);
    const [p, q] = emu.fixtures.ipPolicies;
    const stack = testStack({
      project: inject("e2e"),
      emulator: { ...emu, url: proxy.url },
      name: "set-between",
      extraConfig: fast,
    });
    cleanups.push(() => stack.cleanup());
    const base: Rule[] = [
      { cidr: "10.1.0.0/16", action: "allow" },
      { cidr: "10.2.0.0/16", action: "deny" },
    ];
    await stack.ok("up", setSpec(p, base));
    const list = /^\/ip_policy_rules$/;

    // up --refresh: another team's deny lands right after the preview's refresh listed the policy.
    let theirs: { id: string } | undefined;
    proxy.afterRequest(
      "GET",
      list,
      1,
      async () =>
        (theirs = (await api.post("/ip_policy_rules", { ip_policy_id: p, cidr: "192.0.2.0/24", action: "deny" })).body),
    );
    const raced = await stack.ok("up", setSpec(p, base), { refresh: true, withPreview: true });
    expect(raced.output).toContain(
      `left undone 1 change the preview of this run did not show (a refresh after it found the policy changed, or a value of the program changed): delete 192.0.2.0/24 deny (${theirs!.id})`,
    );
    expect((await api.get(`/ip_policy_rules/${theirs!.id}`)).status).toBe(200);
    // The next up's preview shows it, and that up deletes it.
    const next = await stack.ok("up", setSpec(p, base), { withPreview: true });
    expect(next.output).toMatch(/plan for ipp_\w+: delete 1: 1 request\n\s+- 192\.0\.2\.0\/24 deny/);
    expect((await api.get(`/ip_policy_rules/${theirs!.id}`)).status).toBe(404);

    // A responder deletes a declared allow right after the preview's refresh: the preview showed no change, so up does not put it back.
    const allow = (await policyRules(emu, p)).find((r) => r.cidr === "10.1.0.0/16")!;
    proxy.afterRequest("GET", list, 1, async () => void (await api.delete(`/ip_policy_rules/${allow.id}`)));
    const closed = await stack.ok("up", setSpec(p, base), { refresh: true, withPreview: true });
    expect(closed.output).toContain(
      "left undone 1 change the preview of this run did not show (a refresh after it found the policy changed, or a value of the program changed): create 10.1.0.0/16 allow",
    );
    expect((await policyRules(emu, p)).map((r) => r.cidr)).toEqual(["10.2.0.0/16"]);
    await stack.ok("up", setSpec(p, base), { withPreview: true }); // shown now, and made
    expect((await policyRules(emu, p)).map((r) => r.cidr).sort()).toEqual(["10.1.0.0/16", "10.2.0.0/16"]);

    // destroy --refresh: a rule that only the refresh after its preview found is left, named (the preview cannot have shown it).
    let late: { id: string } | undefined;
    proxy.afterRequest(
      "GET",
      list,
      1,
      async () =>
        (late = (await api.post("/ip_policy_rules", { ip_policy_id: p, cidr: "203.0.113.0/24", action: "deny" })).body),
    );
    const destroyed = await stack.ok("destroy", setSpec(p, base), { refresh: true, withPreview: true });
    expect(destroyed.output).toMatch(
      new RegExp(
        `refresh of the IpPolicyRuleSet of ipp_\\w+: rules changed since the state last recorded the policy: 1 added\\n\\s+added 203\\.0\\.113\\.0/24 deny \\(${late!.id}\\)`,
      ),
    );
    expect(destroyed.output).toContain(
      `left 1 deny rule(s) no preview of this stack showed (added since its last refresh): 203.0.113.0/24 deny (${late!.id})`,
    );
    expect((await policyRules(emu, p)).map((r) => r.id)).toEqual([late!.id]);
    await api.delete(`/ip_policy_rules/${late!.id}`);

    // takeOver: a rule that lands after the preview listed the policy is not taken.
    const held = (await api.post("/ip_policy_rules", { ip_policy_id: q, cidr: "10.9.0.0/16", action: "allow" })).body;
    let after: { id: string } | undefined;
    proxy.afterRequest(
      "GET",
      list,
      1,
      async () =>
        (after = (await api.post("/ip_policy_rules", { ip_policy_id: q, cidr: "198.51.100.0/24", action: "deny" }))
          .body),
    );
    const taken = await stack.ok("up", setSpec(q, [{ cidr: "10.9.0.0/16", action: "allow" }], { takeOver: true }), {
      withPreview: true,
    });
    expect(taken.output).toContain(
      `left 1 rule its preview did not list (added since), not recorded: 198.51.100.0/24 deny (${after!.id})`,
    );
    expect(
      Object.values(stack.state().resources.find((r) => r.type.endsWith(":IpPolicyRuleSet")).outputs.rules).map(
        (r: any) => r.id,
      ),
    ).toEqual([held.id]);
    await stack.ok("destroy", setSpec(q, [{ cidr: "10.9.0.0/16", action: "allow" }]));
    expect((await policyRules(emu, q)).map((r) => r.id)).toEqual([after!.id]);
  });

  it("a rule no preview of the set showed is never changed: not flipped by update, not taken by ACCESSCTL_ADOPT_EXISTING unless exactly as declared", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const api = client(emu.url, emu.adminToken);
    const [p, q] = emu.fixtures.ipPolicies;
    const base: Rule[] = [{ cidr: "10.0.0.0/8", action: "allow" }];
    const a = testStack({ project: inject("e2e"), emulator: emu, name: "set-unseen", extraConfig: fast });
    cleanups.push(() => a.cleanup());
    await a.ok("up", setSpec(p, base));
    // Another stack's deny rule lands on the policy after the set's last refresh.
    const theirs = (
      await api.post("/ip_policy_rules", {
        ip_policy_id: p,
        cidr: "192.0.2.0/24",
        action: "deny",
        description: "team B block",
      })
    ).body;
    const flip = await a.run("up", setSpec(p, [...base, { cidr: "192.0.2.0/24", action: "allow" }]));
    expect(flip.ok).toBe(false);
    expect(flip.output).toContain(
      `the plan its preview showed would touch 192.0.2.0/24 deny (${theirs.id}) (not recorded: added since the last refresh, by hand or by another stack); nothing was changed`,
    );
    expect((await api.get(`/ip_policy_rules/${theirs.id}`)).body).toMatchObject({
      action: "deny",
      description: "team B block",
    });
    await api.delete(`/ip_policy_rules/${theirs.id}`);
    // Nor is an identical one taken in unseen (the set's destroy would then delete another stack's rule).
    const twin = (await api.post("/ip_policy_rules", { ip_policy_id: p, cidr: "192.0.2.0/24", action: "allow" })).body;
    const takeIn = await a.run("up", setSpec(p, [...base, { cidr: "192.0.2.0/24", action: "allow" }]));
    expect(takeIn.ok).toBe(false);
    expect(takeIn.output).toContain(
      `the plan its preview showed would touch 192.0.2.0/24 allow (${twin.id}) (not recorded`,
    );
    await api.delete(`/ip_policy_rules/${twin.id}`);
    // One the plan does not touch is left, named and not recorded: the set's destroy, whose preview
    // cannot show it, leaves it too.
    const block = (await api.post("/ip_policy_rules", { ip_policy_id: p, cidr: "10.66.0.0/16", action: "deny" })).body;
    const grown = await a.ok("up", setSpec(p, [...base, { cidr: "10.2.0.0/16", action: "allow" }]));
    expect(grown.output).toContain(
      `left 1 rule added since the last refresh (by hand or by another stack), not recorded: 10.66.0.0/16 deny (${block.id})`,
    );
    expect(Object.keys(a.state().resources.find((r) => r.type.endsWith(":IpPolicyRuleSet")).outputs.rules)).toEqual([
      "10.0.0.0/8",
      "10.2.0.0/16",
    ]);
    const gone = await a.ok("destroy", setSpec(p, base));
    expect(gone.output).toContain(
      `left 1 deny rule(s) no preview of this stack showed (added since its last refresh): 10.66.0.0/16 deny (${block.id})`,
    );
    expect((await policyRules(emu, p)).map((r) => r.id)).toEqual([block.id]);
    await api.delete(`/ip_policy_rules/${block.id}`);

    // A first up of a set with the recovery switch: a rule exactly as declared is taken, any other refused.
    const same = (await api.post("/ip_policy_rules", { ip_policy_id: q, cidr: "10.1.0.0/16", action: "allow" })).body;
    const deny = (await api.post("/ip_policy_rules", { ip_policy_id: q, cidr: "192.0.2.0/24", action: "deny" })).body;
    const c = testStack({ project: inject("e2e"), emulator: emu, name: "set-adopt-existing", extraConfig: fast });
    cleanups.push(() => c.cleanup());
    const declared = setSpec(q, [
      { cidr: "10.1.0.0/16", action: "allow" },
      { cidr: "192.0.2.0/24", action: "allow" },
    ]);
    const refused = await c.run("up", declared, { env: { ACCESSCTL_ADOPT_EXISTING: "1" } });
    expect(refused.ok).toBe(false);
    expect(refused.output).toContain(
      `the policy already holds 1 rule not as declared: 192.0.2.0/24 deny (${deny.id}); up would change nothing`,
    );
    expect((await policyRules(emu, q)).map((r) => `${r.id} ${r.action}`).sort()).toEqual(
      [`${deny.id} deny`, `${same.id} allow`].sort(),
    );
    await api.delete(`/ip_policy_rules/${deny.id}`);
    const taken = await c.ok("up", declared, { env: { ACCESSCTL_ADOPT_EXISTING: "1" } });
    expect(Object.keys(taken.outputs!.set_s.value.rules)).toEqual(["10.1.0.0/16", "192.0.2.0/24"]);
    expect(taken.outputs!.set_s.value.rules["10.1.0.0/16"].id).toBe(same.id);
    await c.ok("destroy", declared);
  });

  it("takeOver: refused without it, naming the rules; with it the set takes them as they are and writes nothing, its preview says so; the next preview shows each change and up makes it; PATCH reuse; action flip", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "set-takeover", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const p = emu.fixtures.ipPolicies[1];
    const api = client(emu.url, emu.adminToken);
    for (const [cidr, action, description] of [
      ["10.9.0.0/16", "allow", "old"],
      ["10.8.0.0/16", "allow", "stray"],
      ["10.7.0.0/16", "allow", "flips"],
      ["10.5.0.0/16", "deny", "as declared"],
    ]) {
      expect((await api.post("/ip_policy_rules", { ip_policy_id: p, cidr, action, description })).status).toBe(201);
    }
    const rules: Rule[] = [
      { cidr: "10.9.0.0/16", action: "allow", description: "declared" },
      { cidr: "10.7.0.0/16", action: "deny", description: "flipped" },
      { cidr: "10.6.0.0/16", action: "allow" },
      { cidr: "10.5.0.0/16", action: "deny", description: "as declared" },
    ];
    const before = (await emu.stats()).byMethod;
    const refused = await stack.run("up", setSpec(p, rules));
    expect(refused.ok).toBe(false);
    expect(refused.output).toMatch(
      /the policy already holds 4 rules: 10\.5\.0\.0\/16 deny \(ipr_\w+\), 10\.7\.0\.0\/16 allow \(ipr_\w+\), 10\.8\.0\.0\/16 allow \(ipr_\w+\), 10\.9\.0\.0\/16 allow \(ipr_\w+\); up would change nothing\. .*declare takeOver: true/,
    );
    expect(await writes(emu, before)).toEqual({ POST: 0, PATCH: 0, DELETE: 0 });

    // The takeover's preview says what it takes and that it writes nothing; its up writes nothing.
    const previewed = await stack.ok("preview", setSpec(p, rules, { takeOver: true }));
    expect(previewed.output).toMatch(
      /plan for ipp_\w+: take over the 4 rules the policy holds \(1 as declared, 1 not declared\), writing nothing now; the next up then: update 1, move 1, replace 1: 4 requests/,
    );
    const taken = await stack.ok("up", setSpec(p, rules, { takeOver: true }));
    expect(taken.output).toMatch(/take over the 4 rules/);
    expect(await writes(emu, before)).toEqual({ POST: 0, PATCH: 0, DELETE: 0 });
    expect(Object.keys(taken.outputs!.set_s.value.rules)).toEqual([
      "10.5.0.0/16",
      "10.7.0.0/16",
      "10.8.0.0/16",
      "10.9.0.0/16",
    ]);
    // The next preview shows every change, and up makes exactly those.
    const preview = await stack.ok("preview", setSpec(p, rules, { takeOver: true }));
    expect(preview.changeSummary).toEqual({ same: 1, update: 1 });
    expect(preview.output).toMatch(/plan for ipp_\w+: update 1, move 1, replace 1: 4 requests/);
    expect(preview.output).toContain('~ 10.9.0.0/16: description "old" → "declared"');
    expect(preview.output).toMatch(
      /~ 10\.8\.0\.0\/16 → 10\.6\.0\.0\/16 \(ipr_\w+, allow: one PATCH of cidr\), description "stray" → ""/,
    );
    expect(preview.output).toMatch(
      /± 10\.7\.0\.0\/16: action allow → deny \(ipr_\w+ deleted, then created again\), description "flipped"/,
    );
    const beforeUp = (await emu.stats()).byMethod;
    await stack.ok("up", setSpec(p, rules, { takeOver: true }));
    expect(await writes(emu, beforeUp)).toEqual({ POST: 1, PATCH: 2, DELETE: 1 });
    await expectExactly(emu, p, rules);

    // One CIDR moved to another of the same action, one description changed: two PATCHes, nothing else.
    const moved: Rule[] = [
      { cidr: "10.9.0.0/16", action: "allow", description: "declared, edited" },
      { cidr: "10.7.0.0/16", action: "deny", description: "flipped" },
      { cidr: "172.16.0.0/16", action: "allow" },
      { cidr: "10.5.0.0/16", action: "deny", description: "as declared" },
    ];
    const ids = (await policyRules(emu, p)).map((r) => r.id).sort();
    const beforeMove = (await emu.stats()).byMethod;
    const movedUp = await stack.ok("up", setSpec(p, moved, { takeOver: true }));
    expect(movedUp.output).toMatch(/update 1, move 1: 2 requests/);
    expect(movedUp.output).toMatch(/~ 10\.6\.0\.0\/16 → 172\.16\.0\.0\/16 \(ipr_\w+, allow: one PATCH of cidr\)/);
    expect(await writes(emu, beforeMove)).toEqual({ POST: 0, PATCH: 2, DELETE: 0 });
    await expectExactly(emu, p, moved);
    expect((await policyRules(emu, p)).map((r) => r.id).sort()).toEqual(ids); // the same rules, reused

    // An action flip: the policy holds a CIDR once, so delete, then create.
    const flipped = moved.map((r) => (r.cidr === "172.16.0.0/16" ? { ...r, action: "deny" } : r));
    const beforeFlip = (await emu.stats()).byMethod;
    await stack.ok("up", setSpec(p, flipped, { takeOver: true }));
    expect(await writes(emu, beforeFlip)).toEqual({ POST: 1, PATCH: 0, DELETE: 1 });
    await expectExactly(emu, p, flipped);
    await stack.ok("destroy", setSpec(p, flipped));
    expect(await policyRules(emu, p)).toEqual([]);
  });

  it("checks at preview with 0 requests: each bad rule named, duplicates in any spelling, a set and a rule on one policy", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "set-checks", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const p = emu.fixtures.ipPolicies[0];
    const bad = await stack.run(
      "preview",
      setSpec(p, [
        { cidr: "10.0.0.0/8", action: "allow" },
        { cidr: "2001:db8::/32", action: "allow" },
        { cidr: "10.1.0.5/16", action: "allow" },
        { cidr: "2001:DB8::/32", action: "deny" },
        { cidr: "10.2.0.0/16", action: "permit" },
      ]),
    );
    expect(bad.ok).toBe(false);
    expect(bad.output).toContain('rules[2].cidr "10.1.0.5/16" has host bits set; did you mean 10.1.0.0/16?');
    expect(bad.output).toContain(
      'rules[3].cidr "2001:DB8::/32" is declared twice: rules[1] is the same range (2001:db8::/32)',
    );
    expect(bad.output).toContain('rules[4].action must be "allow" or "deny", got "permit" (rule 10.2.0.0/16)');
    expect((await emu.stats()).requests).toBe(0);
    const both = await stack.run("preview", {
      ...setSpec(p, [{ cidr: "10.0.0.0/8", action: "allow" }]),
      rules: { extra: { ipPolicyId: p, cidr: "10.3.0.0/16", action: "allow" } },
    });
    expect(both.ok).toBe(false);
    // Whichever of the two the engine checks second fails, naming the other.
    expect(both.output).toMatch(
      /the IpPolicyRule extra also manages a rule of IP policy ipp_\w+; a set owns every rule of its policy, so the set would delete that rule at every up|IP policy ipp_\w+ is owned by the IpPolicyRuleSet s, which would delete this rule at every up; declare it in the set's rules instead/,
    );
    const requests = (await emu.stats()).requests; // (a new set's preview lists its policy: what up would meet)
    // ignoreChanges into `rules` cannot be matched by Pulumi (the state keys rules by CIDR), which would
    // make the change all the same: refused, naming the path and what works.
    const ignoring = await stack.run("preview", {
      ...setSpec(p, [{ cidr: "10.0.0.0/8", action: "allow" }]),
      opts: { s: { ignoreChanges: ["rules[0].action"] } },
    });
    expect(ignoring.ok).toBe(false);
    expect(ignoring.output).toContain(
      'accessctl:IpPolicyRuleSet s: ignoreChanges "rules[0].action" names a part of rules, which Pulumi cannot match',
    );
    expect((await emu.stats()).requests).toBe(requests);
  });

  it("a failure halfway (429s, no retries) records exactly the rules that exist; refresh works; the next up finishes the job", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-set-partial-"));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const data = path.join(dir, "emulator.json");
    const token = "fixed-admin-token-0123456789";
    const limited = await startEmulator(["--data", data, "--admin-token", token, "--rate-limit", "40/600"]);
    const port = new URL(limited.url).port;
    const config = { "accessctl:maxRetries": { value: "0" }, "accessctl:maxRequestsPerMinute": { value: "100000" } };
    const stack = testStack({ project: inject("e2e"), emulator: limited, name: "set-partial", extraConfig: config });
    cleanups.push(() => stack.cleanup());
    const p = limited.fixtures.ipPolicies[0];
    await stack.ok("up", setSpec(p, many(10, 50)));
    const failed = await stack.run("up", setSpec(p, many(100, 50)));
    expect(failed.ok).toBe(false);
    expect(failed.output).toMatch(
      /update IP policy rule set of ipp_\w+: \d+ calls? failed, first: create IP policy rule 10\.50\.\d+\.0\/24: HTTP 429/,
    );
    await limited.stop();
    // The same account without the limit (its budget is spent), to look at what exists.
    const open = await startEmulator(["--data", data, "--admin-token", token, "--rate-limit", "off", "--port", port]);
    cleanups.push(() => open.stop());
    const live = await policyRules(open, p);
    expect(live.length).toBeGreaterThan(10);
    expect(live.length).toBeLessThan(100);
    const set = stack.state().resources.find((r) => r.type.endsWith(":IpPolicyRuleSet"));
    expect(
      Object.values(set.outputs.rules)
        .map((r: any) => r.id)
        .sort(),
    ).toEqual(live.map((r) => r.id).sort()); // a partial update: exactly what exists
    expect(typeof set.outputs.__provider).toBe("string");
    await stack.ok("refresh", setSpec(p, many(100, 50)));
    await stack.ok("up", setSpec(p, many(100, 50)));
    await expectExactly(open, p, many(100, 50));
    await stack.ok("destroy", setSpec(p, many(100, 50)));
    expect(await policyRules(open, p)).toEqual([]);
  });
});

describe("IpPolicyRuleSet: a reviewed preview binds a later up", () => {
  it("Pulumi's update plans and the provider's plan file: a rule added by hand after the reviewed preview is untouched and named; with nothing changed, up --plan --refresh of a plain preview's plan succeeds", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const api = client(emu.url, emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "set-plans", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "set-plans-"));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const base: Rule[] = [
      { cidr: "192.0.2.0/24", action: "allow" },
      { cidr: "10.5.0.0/16", action: "deny" },
    ];
    const next: Rule[] = [
      { cidr: "172.16.0.0/12", action: "allow" },
      { cidr: "10.5.0.0/16", action: "deny" },
    ];
    // Pulumi's update plans hold stack outputs too, and a dynamic resource's outputs at preview are its
    // inputs: a stack output of the rules would differ at up (their ids) and fail it. The program exports ids.
    const setSpec = (ipPolicyId: string, rules: Rule[]): Spec => ({
      sets: { s: { ipPolicyId, rules } },
      idsOnly: true,
    });
    const experimental = { env: { PULUMI_EXPERIMENTAL: "true" } };
    const cidrs = async () => (await policyRules(emu, p)).map((r) => r.cidr).sort();
    await stack.ok("up", setSpec(p, base));

    // Pulumi's update plans. A plan saved by a plain preview holds under up --refresh when nothing changed.
    const plain = path.join(dir, "plain.json");
    await stack.ok("preview", setSpec(p, next), { args: ["--save-plan", plain] });
    await stack.ok("up", setSpec(p, next), { refresh: true, args: ["--plan", plain], ...experimental });
    expect(await cidrs()).toEqual(["10.5.0.0/16", "172.16.0.0/12"]);
    await stack.ok("up", setSpec(p, base));
    // A rule added by hand after the reviewed preview: up --refresh --plan fails before any write, naming the set's plan.
    const reviewed = path.join(dir, "reviewed.json");
    await stack.ok("preview", setSpec(p, next), { refresh: true, args: ["--save-plan", reviewed] });
    const stray = (await api.post("/ip_policy_rules", { ip_policy_id: p, cidr: "10.7.0.0/16", action: "allow" })).body;
    const violated = await stack.run("up", setSpec(p, next), {
      refresh: true,
      args: ["--plan", reviewed],
      ...experimental,
    });
    expect(violated.ok).toBe(false);
    expect(violated.output).toMatch(/IpPolicyRuleSet::s violates plan: properties changed: .*__plan/);
    expect(await cidrs()).toEqual(["10.5.0.0/16", "10.7.0.0/16", "192.0.2.0/24"]);
    await api.delete(`/ip_policy_rules/${stray.id}`);
    await stack.ok("refresh", setSpec(p, base));

    // The provider's plan file, whatever the Pulumi flags: a plain up leaves the rule added since, and names it.
    const save = { env: { ACCESSCTL_PLAN_SAVE: path.join(dir, "accessctl-plan.json") } };
    const hold = { env: { ACCESSCTL_PLAN_HOLD: path.join(dir, "accessctl-plan.json") } };
    await stack.ok("preview", setSpec(p, next), save);
    const late = (await api.post("/ip_policy_rules", { ip_policy_id: p, cidr: "10.8.0.0/16", action: "allow" })).body;
    const held = await stack.ok("up", setSpec(p, next), { ...hold, withPreview: true });
    expect(held.output).toContain(
      `left 1 rule added since the last refresh (by hand or by another stack), not recorded: 10.8.0.0/16 allow (${late.id})`,
    );
    expect(await cidrs()).toEqual(["10.5.0.0/16", "10.8.0.0/16", "172.16.0.0/12"]);
    // up --refresh records it: the state is no longer the one the file was made from, and nothing is written.
    await stack.ok("preview", setSpec(p, base), save);
    const stale = await stack.run("up", setSpec(p, base), { ...hold, refresh: true, withPreview: true });
    expect(stale.ok).toBe(false);
    expect(stale.output).toMatch(
      new RegExp(
        `ACCESSCTL_PLAN_HOLD \\(.*accessctl-plan\\.json\\) was made for an older state: the rules this stack records changed since its preview \\(\\+ 10\\.8\\.0\\.0/16 allow \\(${late.id}\\)\\)\\. This command refreshed and its preview did not`,
      ),
    );
    expect(await cidrs()).toEqual(["10.5.0.0/16", "10.8.0.0/16", "172.16.0.0/12"]);
  });

  it("the signed plan: an edited or forged file is refused before any write; `pulumi --stack preview up` holds to the reviewed plan and never writes it; a reviewed preview --refresh that found drift is deployed by up --refresh", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const api = client(emu.url, emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    // A stack named `preview`, named before the command: the provider once took the first command-like word of pulumi's command line.
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "preview", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "signed-plan-"));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, "access-plan.json");
    const save = { env: { ACCESSCTL_PLAN_SAVE: file }, stackFirst: true };
    const hold = { env: { ACCESSCTL_PLAN_HOLD: file }, stackFirst: true };
    const base: Rule[] = [{ cidr: "192.0.2.0/24", action: "allow" }];
    const reviewed: Rule[] = [...base, { cidr: "10.20.0.0/16", action: "allow" }];
    const unreviewed: Rule[] = [...reviewed, { cidr: "0.0.0.0/0", action: "allow" }];
    const cidrs = async () => (await policyRules(emu, p)).map((r) => `${r.cidr} ${r.action}`).sort();
    await stack.ok("up", setSpec(p, base));
    const before = await emu.stats();

    // The review job: its preview writes the plan (signed with a key derived from the API key: no ACCESSCTL_PLAN_KEY).
    await stack.ok("preview", setSpec(p, reviewed), save);
    const written = fs.readFileSync(file, "utf8");
    expect(JSON.parse(written)).toMatchObject({ format: "accessctl-plan/3" });
    // The deploy job with another API key of the same account: refused, naming the key setting.
    const other = (await api.post("/api_keys", { description: "deploy job" })).body.token as string;
    const otherKey = await stack.run("up", setSpec(p, reviewed), {
      ...hold,
      moreConfig: { "accessctl:apiKey": { value: other, secret: true } },
    });
    expect(otherKey.ok).toBe(false);
    expect(otherKey.output).toContain(
      "was signed with another key than this job's (derived from the API key in accessctl:apiKey, as no ACCESSCTL_PLAN_KEY is set",
    );
    // Reproduction 1: the file edited to approve the unreviewed program (a) declared deleted, a wildcard for what it showed;
    // (b) a forged create whose digest is copied from another entry. Both refused before any write, naming why.
    const edits: [string, (plan: any) => void][] = [
      [
        "wildcard",
        (plan) => {
          const set = Object.values(plan.sets)[0] as any;
          delete set.declared;
          set.steps = [];
          set.anyOf = [];
        },
      ],
      [
        "forged",
        (plan) => {
          const set = Object.values(plan.sets)[0] as any;
          set.declared.push({ cidr: "0.0.0.0/0", action: "allow", texts: set.declared[0].texts });
          set.steps.push({ op: "create", to: { cidr: "0.0.0.0/0", action: "allow", texts: set.steps[0].to.texts } });
        },
      ],
    ];
    for (const [what, edit] of edits) {
      const plan = JSON.parse(written);
      edit(plan);
      fs.writeFileSync(file, JSON.stringify(plan));
      const forged = await stack.run("up", setSpec(p, unreviewed), hold);
      expect(forged.ok, what).toBe(false);
      expect(forged.output, what).toMatch(
        /ACCESSCTL_PLAN_HOLD \(.*access-plan\.json\) was changed after its preview wrote it: its signature does not verify; nothing was changed/,
      );
    }
    // Reproduction 2: `pulumi --stack preview up --yes` with the unreviewed program holds to the file: refused, and the file is not written.
    fs.writeFileSync(file, written);
    const unseen = await stack.run("up", setSpec(p, unreviewed), { ...hold, withPreview: true });
    expect(unseen.ok).toBe(false);
    expect(unseen.output).toContain(
      "was made for another program: the rules declared now differ from those of its preview (+ 0.0.0.0/0 allow)",
    );
    expect(fs.readFileSync(file, "utf8")).toBe(written);
    expect(await writes(emu, before.byMethod)).toEqual({ POST: 1, PATCH: 0, DELETE: 0 }); // the API key above, no rule
    // The reviewed program deploys, and the file stays as the review wrote it.
    await stack.ok("up", setSpec(p, reviewed), { ...hold, withPreview: true });
    expect(await cidrs()).toEqual(["10.20.0.0/16 allow", "192.0.2.0/24 allow"]);
    expect(fs.readFileSync(file, "utf8")).toBe(written);

    // The pipeline converges when the reviewed preview --refresh found drift: a plain up is refused saying to refresh; up --refresh deploys it.
    const stray = (
      await api.post("/ip_policy_rules", {
        ip_policy_id: p,
        cidr: "10.66.0.0/16",
        action: "allow",
        description: "by hand",
      })
    ).body;
    // As the guide writes it: one ACCESSCTL_PLAN_KEY in both jobs, `preview --refresh --diff`, then `up --yes --refresh`.
    const key = { ACCESSCTL_PLAN_KEY: "the pipeline's secret, a CI secret of both jobs" };
    const saveKeyed = { ...save, env: { ...save.env, ...key } };
    const holdKeyed = { ...hold, env: { ...hold.env, ...key } };
    await stack.ok("preview", setSpec(p, reviewed), { ...saveKeyed, refresh: true });
    const plain = await stack.run("up", setSpec(p, reviewed), holdKeyed);
    expect(plain.ok).toBe(false);
    expect(plain.output).toContain(
      `was made for an older state: the rules this stack records changed since its preview (- 10.66.0.0/16 allow (${stray.id})). ` +
        "Its preview refreshed (`pulumi preview --refresh`) and found the policy changed since the state recorded it; this command did not refresh. Deploy it as `pulumi up --refresh`",
    );
    await stack.ok("up", setSpec(p, reviewed), { ...holdKeyed, refresh: true, withPreview: true });
    expect(await cidrs()).toEqual(["10.20.0.0/16 allow", "192.0.2.0/24 allow"]);
  });
});

describe("IpPolicyRuleSet: pulumi is killed", () => {
  /** Starts `up`, kills the job with every process below it once the emulator has seen `after` requests, checks none is left. */
  async function killedUp(stack: ReturnType<typeof testStack>, emu: RunningEmulator, spec: Spec, after: number) {
    const running = stack.start("up", spec);
    await until(async () => (await emu.stats()).requests > after, `${after} requests`);
    const pids = killJob(running.child);
    expect(pids.length).toBeGreaterThan(2); // pulumi, the language host, the dynamic provider, …
    expect((await running.done).ok).toBe(false);
    await until(() => pids.every((pid) => !alive(pid)), "every process of the killed run to end", 20);
  }

  /** docs/guides/recovering-interrupted-runs.md: cancel the lock (after restoring the checkpoint if it was cut), drop pending creates. */
  async function recover(stack: ReturnType<typeof testStack>, spec: Spec) {
    let locked = await stack.run("up", spec);
    if (/failed to load checkpoint/.test(locked.output)) {
      stack.restoreCheckpointBackup();
      locked = await stack.run("up", spec);
    }
    expect(locked.ok).toBe(false);
    expect(locked.output).toMatch(/currently locked by 1 lock\(s\)|concurrent update/i);
    await stack.ok("cancel");
    await stack.ok("refresh", spec, { clearPendingCreates: true });
  }

  it("in the middle of a 300-rule create: cancel, refresh --clear-pending-creates, ACCESSCTL_ADOPT_EXISTING=1 up converge", async () => {
    const emu = await startEmulator(["--rate-limit", "off", "--latency", "150"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "set-killed-create", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const p = emu.fixtures.ipPolicies[0];
    const spec = setSpec(p, many(300, 60));
    await killedUp(stack, emu, spec, 60);
    const made = (await policyRules(emu, p)).length;
    expect(made).toBeGreaterThan(0);
    expect(made).toBeLessThan(300);

    await recover(stack, spec);
    expect(stack.state().resources.filter((r) => r.type.endsWith(":IpPolicyRuleSet"))).toEqual([]);
    const refused = await stack.run("up", spec);
    expect(refused.ok).toBe(false);
    expect(refused.output).toMatch(/the policy already holds \d+ rules: .*ACCESSCTL_ADOPT_EXISTING=1 pulumi up/);
    await stack.ok("up", spec, { env: { ACCESSCTL_ADOPT_EXISTING: "1" } });
    await expectExactly(emu, p, many(300, 60));
    expect((await stack.ok("preview", spec, { refresh: true, expectNoChanges: true })).changeSummary).toEqual({
      same: 2,
    });
    await stack.ok("destroy", spec);
    expect(await policyRules(emu, p)).toEqual([]);
  });

  it("in the middle of a 300-rule update: cancel, refresh --clear-pending-creates, up converge", async () => {
    const emu = await startEmulator(["--rate-limit", "off", "--latency", "150"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "set-killed-update", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const p = emu.fixtures.ipPolicies[1];
    await stack.ok(
      "up",
      setSpec(
        p,
        many(20, 70, (i) => `first ${i}`),
      ),
    );
    const start = (await emu.stats()).requests;
    // 300 rules: the first 20 get new descriptions (PATCHes), 280 are new (POSTs).
    const spec = setSpec(p, many(300, 70));
    await killedUp(stack, emu, spec, start + 60);
    const made = (await policyRules(emu, p)).length;
    expect(made).toBeGreaterThan(20);
    expect(made).toBeLessThan(300);

    await recover(stack, spec);
    await stack.ok("up", spec);
    await expectExactly(emu, p, many(300, 70));
    expect((await stack.ok("preview", spec, { refresh: true, expectNoChanges: true })).changeSummary).toEqual({
      same: 2,
    });
    await stack.ok("destroy", spec);
    expect(await policyRules(emu, p)).toEqual([]);
  });
});
