// Teams: several stacks in one shared PostgreSQL backend (started and stopped here) deploying at
// once against one account at the service's 120/60; Pulumi's stack lock with that backend; and one
// stack managing two accounts through a named profile whose credentials never enter the state.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { listAll, RunningEmulator, startEmulator } from "../helpers/emulator";
import { Postgres, startPostgres } from "../helpers/postgres";
import { Spec, testStack } from "../helpers/stack";

let pg: Postgres;
beforeAll(async () => {
  pg = await startPostgres();
}, 120_000);
afterAll(async () => {
  await pg?.stop();
});

function rules(emu: RunningEmulator, count: number, second: number, from = 0): Spec["rules"] {
  const out: Spec["rules"] = {};
  for (let i = from; i < from + count; i++) {
    out[`r${i}`] = {
      ipPolicyId: emu.fixtures.ipPolicies[i % 2],
      cidr: `10.${second}.${i}.0/24`,
      action: "allow",
      description: `team rule ${i}`,
    };
  }
  return out;
}

describe("a team on one account, state in PostgreSQL", () => {
  // 150 creates: more than one window of the limit, so the stacks must share its pace (the benchmarks'
  // team section, npm run bench -- --only team, runs 3 × 100 with file backends).
  it("three stacks of 50 rules deploy at once at 120/60: all converge, 150 rules, under 5% 429s", async () => {
    const emu = await startEmulator([]); // the service's default limit: 120 in any rolling 60 s per account
    const stacks = ["team-a", "team-b", "team-c"].map((name) =>
      testStack({ project: inject("e2e"), emulator: emu, name, backendUrl: pg.url }),
    );
    try {
      const specs = stacks.map((_, s) => ({ rules: rules(emu, 50, 60 + s) }));
      // Pulumi creates its table on first use; several CLIs doing that at once on an empty database
      // can fail ("failed to create table pulumi_state: … duplicate key"): one operation first.
      await stacks[0].ok("preview", specs[0]);
      const started = Date.now();
      const ups = await Promise.all(stacks.map((stack, s) => stack.run("up", specs[s])));
      const seconds = (Date.now() - started) / 1000;
      for (const up of ups) expect(up.ok, up.output.slice(-3000)).toBe(true);
      const stats = await emu.stats();
      const live = await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules");
      expect(live.length).toBe(150);
      const limited = stats.byStatus["429"] ?? 0;
      console.log(
        `teams: 3 × 50 rules in ${seconds.toFixed(1)} s (bound 60 s: 60·⌊(150−1)/120⌋); ${stats.requests} requests, ${limited} answered 429`,
      );
      expect(limited / stats.requests).toBeLessThan(0.05);

      for (const preview of await Promise.all(stacks.map((stack, s) => stack.ok("preview", specs[s]))))
        expect(preview.changeSummary).toEqual({ same: 51 });
    } finally {
      for (const stack of stacks) stack.cleanup();
      await emu.stop();
    }
  });
});

describe("the stack lock, with state in PostgreSQL", () => {
  it("a second up of a stack that is updating fails at once with Pulumi's lock message; the first finishes untouched", async () => {
    // 2 s a request: 80 rules take 20 s or more at Pulumi's parallelism, time enough to collide.
    const emu = await startEmulator(["--rate-limit", "off", "--latency", "2000"]);
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "team-lock", backendUrl: pg.url });
    try {
      const spec = { rules: rules(emu, 80, 90) };
      const first = stack.start("up", spec);
      // The first holds the lock once its provider talks to the service.
      for (let i = 0; i < 1200 && (await emu.stats()).requests === 0; i++) await new Promise((r) => setTimeout(r, 100));
      const t = Date.now();
      const second = await stack.run("up", spec);
      const secondSeconds = (Date.now() - t) / 1000;
      expect(second.ok).toBe(false);
      expect(second.output).toMatch(/the stack is currently locked/);
      expect(secondSeconds).toBeLessThan(20);
      const firstResult = await first.done;
      expect(firstResult.ok, firstResult.output.slice(-3000)).toBe(true);
      expect(firstResult.summary!.resourceChanges).toMatchObject({ create: 81 }); // with the stack itself
      expect((await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).length).toBe(80);
      expect((await stack.ok("preview", spec)).changeSummary).toEqual({ same: 81 });
    } finally {
      stack.cleanup();
      await emu.stop();
    }
  });
});

describe("one stack, two accounts", () => {
  it("declares rules and a key in the default account and in a named profile's; credentials never in inputs or state", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    const staging = { apiUrl: emu.url, apiKey: emu.otherAccountToken };
    const stack = testStack({
      project: inject("e2e"),
      emulator: emu,
      name: "two-accounts",
      extraConfig: { "accessctl:profiles": { value: JSON.stringify({ staging }), secret: true } },
    });
    try {
      const spec: Spec = {
        rules: {
          prod: { ipPolicyId: emu.fixtures.ipPolicies[0], cidr: "10.70.0.0/24", action: "allow" },
          staging: {
            ipPolicyId: emu.otherAccountFixtures.ipPolicies[0],
            cidr: "10.70.0.0/24",
            action: "allow",
            profile: "staging",
          },
        },
        keys: { staging: { description: "staging ci", profile: "staging" } },
      };
      const up = await stack.ok("up", spec);
      expect(up.summary!.resourceChanges).toMatchObject({ create: 4 });
      const prodRules = await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules");
      const stagingRules = await listAll(emu.url, emu.otherAccountToken, "/ip_policy_rules", "ip_policy_rules");
      const stagingKeys = await listAll(emu.url, emu.otherAccountToken, "/api_keys", "keys");
      expect(prodRules.map((r) => r.id)).toEqual([up.outputs!.rule_prod.value.id]);
      expect(stagingRules.map((r) => r.id)).toEqual([up.outputs!.rule_staging.value.id]);
      expect(stagingKeys.map((k) => k.id)).toContain(up.outputs!.key_staging.value.id);
      const text = stack.backendText();
      expect(text).not.toContain(emu.otherAccountToken);
      expect(text).not.toContain(emu.adminToken);
      const staged = stack
        .state()
        .resources.find((r: any) => r.urn.endsWith("::staging") && r.type.endsWith("IpPolicyRule"));
      expect(staged.inputs.profile).toBe("staging");
      expect(staged.outputs.profile).toBe("staging");

      // Refresh reads each object from its own account; a profile change moves the rule.
      expect((await stack.ok("preview", spec, { refresh: true })).changeSummary).toEqual({ same: 4 });
      const moved = {
        ...spec,
        rules: {
          ...spec.rules,
          prod: { ...spec.rules!.prod, ipPolicyId: emu.otherAccountFixtures.ipPolicies[1], profile: "staging" },
        },
      };
      expect((await stack.ok("up", moved)).summary!.resourceChanges).toMatchObject({ replace: 1 });
      expect(await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).toEqual([]);
      await stack.ok("destroy");
      expect(await listAll(emu.url, emu.otherAccountToken, "/ip_policy_rules", "ip_policy_rules")).toEqual([]);
    } finally {
      stack.cleanup();
      await emu.stop();
    }
  });
});
