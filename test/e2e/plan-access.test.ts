// A reviewed plan's access, through the real CLI (issue 42): the signed plan file carries what its
// preview showed the set doing to the policy's access, and `up` holding to it says it did exactly that,
// or less, naming what it held back (with exact counts, IPv4 and IPv6); an IpPolicyRule's preview says
// what the rule opens or closes beside the policy's other rules as last listed, or at most, saying so.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, inject, it } from "vitest";
import { client, listAll, RunningEmulator, startEmulator } from "../helpers/emulator";
import { packedPlugin, Spec, testStack } from "../helpers/stack";

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const fast = { "accessctl:maxRequestsPerMinute": { value: "100000" } };
type Rule = { cidr: string; action: string };
const r = (rule: string): Rule => ({ cidr: rule.split(" ")[0], action: rule.split(" ")[1] });
const setSpec = (ipPolicyId: string, rules: Rule[]): Spec => ({ sets: { s: { ipPolicyId, rules } }, idsOnly: true });

async function policyRules(emu: RunningEmulator, ipPolicyId: string) {
  const all = await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules");
  return all.filter((x) => x.ip_policy.id === ipPolicyId);
}

describe("the reviewed plan carries the access effect, and up says it did exactly that, or less", () => {
  it(
    "exactly: the file holds the opening and closing its preview showed; held to it, up says so with the same " +
      "counts; less: a deny the plan keeps deleted by hand since holds the opening back, and up names it",
    async () => {
      const emu = await startEmulator(["--rate-limit", "off"]);
      cleanups.push(() => emu.stop());
      const api = client(emu.url, emu.adminToken);
      const p = emu.fixtures.ipPolicies[0];
      const stack = testStack({ project: inject("e2e"), emulator: emu, name: "plan-access", extraConfig: fast });
      cleanups.push(() => stack.cleanup());
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "plan-access-"));
      cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
      const file = path.join(dir, "plan.json");
      const save = { env: { ACCESSCTL_PLAN_SAVE: file } };
      const hold = { env: { ACCESSCTL_PLAN_HOLD: file }, withPreview: true };
      const kept = ["10.0.0.0/8 allow", "10.5.0.0/16 deny", "2001:db8::/32 allow"].map(r);
      await stack.ok("up", setSpec(p, [...kept, r("192.0.2.0/24 allow")]));

      // The review job: its preview shows the access change, and the file carries it.
      const reviewed = [...kept, r("172.16.0.0/12 allow"), r("2001:db8:ab::/48 deny")];
      const closes =
        "closes 192.0.2.0/24 (256 addresses) and 2001:db8:ab::/48 " + "(1,208,925,819,614,629,174,706,176 addresses)";
      const change = `opens 172.16.0.0/12 (1,048,576 addresses); ${closes}`;
      const preview = await stack.ok("preview", setSpec(p, reviewed), save);
      expect(preview.output).toContain(`access of ${p}: ${change}`);
      const sets = Object.values(JSON.parse(fs.readFileSync(file, "utf8")).sets) as { access: unknown }[];
      const access = { opens: ["172.16.0.0/12"], closes: ["192.0.2.0/24", "2001:db8:ab::/48"] };
      expect(sets.map((s) => s.access)).toEqual([access]);
      // The deploy job, held to it: did exactly that.
      const exact = await stack.ok("up", setSpec(p, reviewed), hold);
      expect(exact.output).toContain(`access of ${p}: did exactly what the plan showed: ${change}`);
      expect(exact.output).not.toContain("did less");

      // The next review: open 198.51.100.0/24, close 172.16.0.0/12 again.
      const next = [...kept, r("2001:db8:ab::/48 deny"), r("198.51.100.0/24 allow")];
      const reviewedAgain = await stack.ok("preview", setSpec(p, next), save);
      expect(reviewedAgain.output).toContain(
        `access of ${p}: opens 198.51.100.0/24 (256 addresses); closes 172.16.0.0/12 (1,048,576 addresses)`,
      );
      // Meanwhile a hand deletes the deny the plan keeps: the plan's one step (a move of the allow) would open, and is
      // held back; up says what of the plan it held back, and that it changed no access.
      const deny = (await policyRules(emu, p)).find((x) => x.cidr === "10.5.0.0/16");
      expect((await api.delete(`/ip_policy_rules/${deny.id}`)).status).toBe(204);
      const less = await stack.ok("up", setSpec(p, next), hold);
      expect(less.output).toContain(
        `access of ${p}: did less than the plan showed: ` +
          "held back opening 198.51.100.0/24 (256 addresses) and closing 172.16.0.0/12 (1,048,576 addresses); " +
          "did: access unchanged",
      );
      const heldBack = /held back 1 change that would open more than the preview showed, .*: move 172\.16\.0\.0\/12 /;
      expect(less.output).toMatch(heldBack);
      expect((await policyRules(emu, p)).map((x) => `${x.cidr} ${x.action}`).sort()).toEqual([
        "10.0.0.0/8 allow",
        "172.16.0.0/12 allow",
        "2001:db8::/32 allow",
        "2001:db8:ab::/48 deny",
      ]);
    },
  );
});

describe("an IpPolicyRule's preview names what the rule opens or closes", () => {
  it(
    "beside the policy's other rules as last listed (preview --refresh), or at most when this run listed none, " +
      "saying so; the plugin says the same",
    async () => {
      const { home } = packedPlugin(cleanups);
      const emu = await startEmulator(["--rate-limit", "off"]);
      cleanups.push(() => emu.stop());
      const api = client(emu.url, emu.adminToken);
      const p = emu.fixtures.ipPolicies[1];
      const e2e = inject("e2e");
      const stack = testStack({ project: e2e, emulator: emu, name: "rule-access", extraConfig: fast, env: home.env });
      cleanups.push(() => stack.cleanup());
      const wide = { ipPolicyId: p, cidr: "10.0.0.0/8", action: "allow" };
      await stack.ok("up", { rules: { wide } });
      // A deny added by hand inside the range the new rule will deny: the other rules, as listed, hold it.
      const byHand = { ip_policy_id: p, cidr: "10.7.128.0/17", action: "deny" };
      expect((await api.post("/ip_policy_rules", byHand)).status).toBe(201);
      const spec: Spec = { rules: { wide, block: { ipPolicyId: p, cidr: "10.7.0.0/16", action: "deny" } } };
      const blind = await stack.ok("preview", spec);
      expect(blind.output).toContain(
        `access of ${p}: this rule closes at most 10.7.0.0/16 (65,536 addresses) ` +
          "(the policy's other rules were not listed in this run: `pulumi preview --refresh` lists them)",
      );
      const listed = await stack.ok("preview", spec, { refresh: true });
      const known =
        `access of ${p}: this rule closes 10.7.0.0/17 (32,768 addresses), ` +
        "given the policy's 2 other rules as last listed";
      expect(listed.output).toContain(known);
      // The same through the plugin (the stack moves to it by its import line: nothing written).
      await stack.ok("up", { rules: { wide }, plugin: true });
      const onPlugin = await stack.ok("preview", { ...spec, plugin: true }, { refresh: true });
      expect(onPlugin.output).toContain(known);
    },
  );
});
