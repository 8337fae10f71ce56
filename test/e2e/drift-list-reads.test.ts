// Drift with list-backed reads, with the real engine: a rule changed and a rule deleted through the
// API between runs show up in `preview --refresh --diff` and are put back by `up --refresh`; the
// refresh costs a walk of each list plus a GET for what the walk misses, not a GET per object.
import { afterEach, describe, expect, inject, it } from "vitest";
import { client, listAll, startEmulator } from "../helpers/emulator";
import { Spec, testStack } from "../helpers/stack";

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("drift, with reads answered from the lists", () => {
  it("preview --refresh --diff shows a changed and a deleted rule; up --refresh puts them back", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    // (our pace lifted as the emulator's limit is: at the default 120 a minute the first up's 122 creates
    // wait out the minute, and what this case counts, the refresh's requests, does not depend on the pace)
    const fast = { "accessctl:maxRequestsPerMinute": { value: "100000" } };
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "drift", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const spec: Spec = { rules: {}, keys: { ci: { description: "ci key" } } };
    for (let i = 0; i < 120; i++) {
      spec.rules![`r${i}`] = {
        ipPolicyId: emu.fixtures.ipPolicies[i % 2],
        cidr: `10.40.${i}.0/24`,
        action: "allow",
        description: `rule ${i}`,
      };
    }
    spec.rules!.v6 = {
      ipPolicyId: emu.fixtures.ipPolicies[0],
      cidr: "2001:DB8:AB::/48",
      action: "allow",
      description: "v6",
    };
    const up = await stack.ok("up", spec);
    const ids = up.outputs!;
    const changed = ids.rule_r7.value.id;
    const deleted = ids.rule_r8.value.id;
    const api = client(emu.url, emu.adminToken);
    expect(
      (await api.patch(`/ip_policy_rules/${changed}`, { description: "edited by hand", cidr: "10.41.0.0/16" })).status,
    ).toBe(200);
    expect((await api.delete(`/ip_policy_rules/${deleted}`)).status).toBe(204);
    const v6 = ids.rule_v6.value.id;
    expect((await api.patch(`/ip_policy_rules/${v6}`, { description: "v6 by hand" })).status).toBe(200);

    const before = (await emu.stats()).requests;
    const preview = await stack.ok("preview", spec, { refresh: true });
    const previewRequests = (await emu.stats()).requests - before;
    expect(preview.changeSummary).toMatchObject({ create: 1, update: 2, same: 120 });
    // read() returns the live object as inputs too: the update section marks what drifted ...
    const section = (name: string) =>
      preview.output
        .split(/\n {4}(?=[~+-] )/)
        .filter((s) => s.includes(`::${name}]`))
        .pop() ?? "";
    expect(section("r7")).toMatch(
      /\(update\)[\s\S]*~ cidr\s*: "10\.41\.0\.0\/16" => "10\.40\.7\.0\/24"[\s\S]*~ description: "edited by hand" => "rule 7"/,
    );
    expect(section("r8")).toMatch(/\+ .*\(create\)/);
    // ... and nothing else: the IPv6 CIDR declared in capitals is the live one
    expect(section("v6")).toMatch(/~ description: "v6 by hand" => "v6"/);
    expect(section("v6")).not.toMatch(/~ cidr/);
    // ⌈121/100⌉ = 2 rule pages, 1 key page, 1 GET confirming the deleted rule is gone.
    expect(previewRequests).toBe(4);

    // A replacement still replaces: our diff decides it from the outputs, not from these inputs.
    const deny = { ...spec, rules: { ...spec.rules, r9: { ...spec.rules!.r9, action: "deny" } } };
    const replacing = await stack.ok("preview", deny, { refresh: true });
    expect(replacing.changeSummary).toMatchObject({ create: 1, update: 2, replace: 1 });

    const fixed = await stack.ok("up", spec, { refresh: true });
    expect(fixed.summary!.resourceChanges).toMatchObject({ create: 1, update: 2 });
    const live = await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules");
    expect(live.length).toBe(121);
    const r7 = live.find((r) => r.id === changed);
    expect(r7).toMatchObject({ cidr: "10.40.7.0/24", description: "rule 7" });
    expect(live.find((r) => r.cidr === "10.40.8.0/24")).toMatchObject({ description: "rule 8" });

    const again = await stack.ok("preview", spec, { refresh: true });
    expect(again.changeSummary).toEqual({ same: 123 });
  });
});
