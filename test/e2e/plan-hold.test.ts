// A deploy job holding to a reviewed plan (ACCESSCTL_PLAN_HOLD) does what its reviewers saw and nothing
// else (issue 39, the insider's design gap): no plan shows a set's delete (the engine's preview of a
// delete or a destroy calls no provider), so a `pulumi destroy`, or an `up` whose program dropped the
// set, is refused in that job before its first request, naming the role and what to do; the same destroy
// from a job that holds no plan deletes the rules. (Kept apart from rule-set.test.ts, the slowest file.)
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { listAll, startEmulator } from "../helpers/emulator";
import { Spec, testStack } from "../helpers/stack";

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const fast = { "accessctl:maxRequestsPerMinute": { value: "100000" } };
type Rule = { cidr: string; action: string };
const setSpec = (ipPolicyId: string, rules: Rule[]): Spec => ({ sets: { s: { ipPolicyId, rules } } });

describe("ACCESSCTL_PLAN_HOLD: a deploy job deletes no set", () => {
  it("destroy, and an up without the set, are refused before any request; a job with no plan destroys", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const p = emu.fixtures.ipPolicies[0];
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "plan-hold", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "plan-hold-"));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, "access-plan.json");
    const key = { ACCESSCTL_PLAN_KEY: "the pipeline's secret, a CI secret of both jobs" };
    const hold = { env: { ...key, ACCESSCTL_PLAN_HOLD: file } };
    const rules: Rule[] = [
      { cidr: "10.20.0.0/16", action: "allow" },
      { cidr: "10.20.5.0/24", action: "deny" },
      { cidr: "192.0.2.0/24", action: "allow" },
    ];
    const live = async () =>
      (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules"))
        .filter((r) => r.ip_policy.id === p)
        .map((r) => `${r.cidr} ${r.action}`)
        .sort();
    await stack.ok("up", setSpec(p, rules.slice(0, 2)));
    // The review job saved a plan (one rule added); the deploy job holds to it, and is run as a destroy.
    await stack.ok("preview", setSpec(p, rules), { env: { ...key, ACCESSCTL_PLAN_SAVE: file } });
    const written = fs.readFileSync(file, "utf8");
    const before = await emu.stats();
    const deletes = async () =>
      ((await emu.stats()).byMethod["DELETE 2xx"] ?? 0) - (before.byMethod["DELETE 2xx"] ?? 0);
    const requests = async () => (await emu.stats()).requests - before.requests;
    const refusal =
      `delete IP policy rule set of ${p}: ACCESSCTL_PLAN_HOLD (${file}) is set: this job deploys a reviewed plan, ` +
      "and no plan shows a set's delete (a preview of a delete or a destroy saves none); nothing was deleted. " +
      "Delete it (`pulumi destroy`, or `pulumi up` without the set) from a job that does not set ACCESSCTL_PLAN_HOLD, " +
      "after that job's own review";

    const destroyed = await stack.run("destroy", setSpec(p, rules), hold);
    expect(destroyed.ok).toBe(false);
    expect(destroyed.output).toContain(refusal);
    expect(await requests()).toBe(0); // refused before its first request
    expect(await live()).toEqual(["10.20.0.0/16 allow", "10.20.5.0/24 deny"]);
    expect(stack.state().resources.filter((r) => r.type.endsWith(":IpPolicyRuleSet")).length).toBe(1);
    // An up whose program dropped the set (the reviewed file holds no plan of a delete either): the same.
    const dropped = await stack.run("up", { sets: {} }, hold);
    expect(dropped.ok).toBe(false);
    expect(dropped.output).toContain(refusal);
    expect(await deletes()).toBe(0);
    expect(await live()).toEqual(["10.20.0.0/16 allow", "10.20.5.0/24 deny"]);
    expect(fs.readFileSync(file, "utf8")).toBe(written); // a deploy job never writes the file

    // The reviewed program deploys in the hold role; the destroy runs from a job that holds no plan.
    await stack.ok("up", setSpec(p, rules), hold);
    expect(await live()).toEqual(["10.20.0.0/16 allow", "10.20.5.0/24 deny", "192.0.2.0/24 allow"]);
    await stack.ok("destroy", setSpec(p, rules));
    expect(await live()).toEqual([]);
  });
});
