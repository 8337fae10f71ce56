// Walks of the account per command, with the real CLI (issue 40): a set in an account of enough rules
// to need several pages (the API lists every rule of the account: a set's rules are found by walking
// it all). A walk is a first page of GET /ip_policy_rules in the emulator's request log (its next
// pages log as "GET /ip_policy_rules?…"). And the harness names its stack in every call: a stack
// selected by someone else (or by nobody) does not make a successful `up` look failed.
import { afterEach, describe, expect, inject, it } from "vitest";
import { startEmulator } from "../helpers/emulator";
import { Spec, testStack } from "../helpers/stack";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pulumi } = require("../../scripts/stack.js");

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const fast = { "accessctl:maxRequestsPerMinute": { value: "100000" } };

describe("walks of the account, per command", () => {
  it("a new set's up walks once in each engine; an update, a refresh and a destroy walk once", async () => {
    const emu = await startEmulator(["--rate-limit", "off", "--seed-rules", "450"]); // with the set's rules: 5 pages
    cleanups.push(() => emu.stop());
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "walks", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const p = emu.fixtures.ipPolicies[0];
    const setOf = (rules: object[]): Spec => ({ sets: { s: { ipPolicyId: p, rules } }, idsOnly: true });
    const rules = (n: number) => Array.from({ length: n }, (_, i) => ({ cidr: `192.0.${i}.0/24`, action: "allow" }));

    /** Walks and list pages the emulator logged during one command. */
    const counted = async (op: string, spec: Spec, extra: Record<string, unknown> = {}) => {
      const from = emu.stderr().length;
      const result = await stack.ok(op, spec, extra);
      await new Promise((r) => setTimeout(r, 200));
      const lines = emu.stderr().slice(from).split("\n");
      const walks = lines.filter((l) => / GET \/ip_policy_rules 200 /.test(l)).length;
      return { walks, pages: lines.filter((l) => / GET \/ip_policy_rules(\?…)? 200 /.test(l)).length, result };
    };

    // A new set's up with its preview: the preview's engine walks, the update's engine walks once (after its first rule).
    const up = await counted("up", setOf(rules(3)), { withPreview: true });
    expect(up.walks).toBe(2);
    expect(up.pages).toBe(10);
    // A change, with its preview: the preview's diff walks nothing; the update walks once.
    expect((await counted("up", setOf(rules(4)), { withPreview: true })).walks).toBe(1);
    expect((await counted("refresh", setOf(rules(4)))).walks).toBe(1);
    expect((await counted("destroy", setOf(rules(4)), { withPreview: true })).walks).toBe(1);
  });

  it("every call of the harness names its stack: with no stack selected, an up succeeds and says so", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "named", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const spec: Spec = {
      rules: { r: { ipPolicyId: emu.fixtures.ipPolicies[0], cidr: "10.1.0.0/16", action: "allow" } },
    };
    await stack.ok("up", spec);
    const project = inject("e2e");
    const job = { dir: project.dir, binDir: project.binDir, backend: `file://${stack.backend}` };
    // Another run in this directory selects another stack, or unselects: this stack's calls do not depend on it.
    expect((await pulumi(job, ["stack", "unselect"], { quiet: true })).code).toBe(0);
    const again = await stack.run("up", { rules: { r: { ...spec.rules!.r, description: "named" } } });
    expect(again.ok).toBe(true);
    expect(again.outputs).toHaveProperty("rule_r");
    const listed = JSON.parse((await pulumi(job, ["stack", "ls", "--json"], { quiet: true })).stdout) as {
      name: string;
      current: boolean;
    }[];
    expect(listed.filter((s) => s.current)).toEqual([]); // the harness selected nothing
    await stack.ok("destroy", spec);
  });
});
