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
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "drift" });
    cleanups.push(() => stack.cleanup());
    const spec: Spec = { rules: {}, keys: { ci: { description: "ci key" } } };
    for (let i = 0; i < 120; i++) {
      spec.rules![`r${i}`] = { ipPolicyId: emu.fixtures.ipPolicies[i % 2], cidr: `10.40.${i}.0/24`, action: "allow", description: `rule ${i}` };
    }
    const up = await stack.ok("up", spec);
    const ids = up.outputs!;
    const changed = ids.rule_r7.value.id;
    const deleted = ids.rule_r8.value.id;
    const api = client(emu.url, emu.adminToken);
    expect((await api.patch(`/ip_policy_rules/${changed}`, { description: "edited by hand", cidr: "10.41.0.0/16" })).status).toBe(200);
    expect((await api.delete(`/ip_policy_rules/${deleted}`)).status).toBe(204);

    const before = (await emu.stats()).requests;
    const preview = await stack.ok("preview", spec, { refresh: true });
    const previewRequests = (await emu.stats()).requests - before;
    expect(preview.changeSummary).toMatchObject({ create: 1, update: 1, same: 120 });
    expect(preview.output).toMatch(/~ .*r7.*update/);
    expect(preview.output).toMatch(/\+ .*r8.*create/);
    // ⌈120/100⌉ = 2 rule pages, 1 key page, 1 GET confirming the deleted rule is gone.
    expect(previewRequests).toBe(4);

    const fixed = await stack.ok("up", spec, { refresh: true });
    expect(fixed.summary!.resourceChanges).toMatchObject({ create: 1, update: 1 });
    const live = await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules");
    expect(live.length).toBe(120);
    const r7 = live.find((r) => r.id === changed);
    expect(r7).toMatchObject({ cidr: "10.40.7.0/24", description: "rule 7" });
    expect(live.find((r) => r.cidr === "10.40.8.0/24")).toMatchObject({ description: "rule 8" });

    const again = await stack.ok("preview", spec, { refresh: true });
    expect(again.changeSummary).toEqual({ same: 122 });
  });
});
