// The real Pulumi engine, our package installed from `npm pack`, and the emulator over HTTP:
// up, preview, in-place updates and replacements (a key's by its owner and by its triggers), secrets
// in state, one address as the rule of one host, drift of every kind by hand, destroy.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { client, listAll, RunningEmulator, startEmulator } from "../helpers/emulator";
import { packedPlugin, Spec, testStack } from "../helpers/stack";

let emu: RunningEmulator;
let stack: ReturnType<typeof testStack>;
let spec: Spec;
let before: { keys: string[]; rules: string[] };

const keyIds = async () => (await listAll(emu.url, emu.adminToken, "/api_keys", "keys")).map((k) => k.id).sort();
const rules = () => listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules");

beforeAll(async () => {
  emu = await startEmulator();
  stack = testStack({ project: inject("e2e"), emulator: emu, name: "lifecycle" });
  const f = emu.fixtures;
  spec = {
    keys: { ci: { description: "CI deploy key", metadata: '{"team":"infra"}', triggers: ["2026-10"] } },
    rules: {
      office: { ipPolicyId: f.ipPolicies[0], cidr: "203.0.113.0/24", action: "allow", description: "HQ" },
      // Written in upper case and uncompressed: stored canonical, and still no diff on the next run.
      lab6: { ipPolicyId: f.ipPolicies[0], cidr: "2001:0DB8:00AB:0000::/64", action: "deny", description: "lab" },
      // One address is the rule of that host: /32, /128.
      host: { ipPolicyId: f.ipPolicies[0], cidr: "198.51.100.7", action: "deny", description: "one host" },
      host6: { ipPolicyId: f.ipPolicies[0], cidr: "2001:db8::7", action: "deny", description: "one host" },
    },
    modules: { edge: { edgeId: f.tlsEdges[0], certificateAuthorityIds: [f.certificateAuthorities[0]], enabled: true } },
  };
  before = { keys: await keyIds(), rules: (await rules()).map((r) => r.id) };
});

afterAll(async () => {
  await emu?.stop();
  stack?.cleanup();
});

describe("a stack of all three resources", () => {
  it("up creates exactly what was declared", async () => {
    const up = await stack.ok("up", spec);
    expect(up.summary!.resourceChanges).toMatchObject({ create: 7 }); // 6 resources + the stack
    // The program ran on the Node.js on PATH (test/e2e/user-project.test.ts runs one on Node.js 24 too).
    expect(up.outputs!.nodeVersion.value.split(".")[0]).toBe(process.versions.node.split(".")[0]);
    const live = await rules();
    expect(live.map((r) => [r.cidr, r.action, r.description]).sort()).toEqual([
      ["198.51.100.7/32", "deny", "one host"],
      ["2001:db8::7/128", "deny", "one host"],
      ["2001:db8:ab::/64", "deny", "lab"],
      ["203.0.113.0/24", "allow", "HQ"],
    ]);
    expect(up.outputs!.rule_host.value.cidr).toBe("198.51.100.7/32");
    expect(up.outputs!.rule_host6.value.cidr).toBe("2001:db8::7/128");
    const keyId = up.outputs!.key_ci.value.id;
    expect(await keyIds()).toEqual([...before.keys, keyId].sort());
    const key = (await client(emu.url, emu.adminToken).get(`/api_keys/${keyId}`)).body;
    expect(key).toMatchObject({
      description: "CI deploy key",
      metadata: '{"team":"infra"}',
      owner_id: emu.fixtures.users[0].id,
    });
    const module = (await client(emu.url, emu.adminToken).get(`/edges/tls/${emu.fixtures.tlsEdges[0]}/mutual_tls`))
      .body;
    expect(module).toMatchObject({
      enabled: true,
      certificate_authorities: [{ id: emu.fixtures.certificateAuthorities[0] }],
    });
  });

  it("keeps the token secret: in the outputs, and nowhere in plain text in the state", async () => {
    const outputs = (await stack.ok("outputs")).outputs!;
    expect(outputs.token_ci.secret).toBe(true);
    const token = outputs.token_ci.value as string;
    expect(token.length).toBeGreaterThan(20);
    // It is the real token: it authenticates.
    expect((await client(emu.url, token).get("/api_keys?limit=1")).status).toBe(200);
    const stored = stack.backendText();
    expect(stored).not.toContain(token);
    expect(stored).not.toContain(emu.adminToken);
    const key = stack.state().resources.find((r: any) => r.type.endsWith("ApiKey"));
    expect(key.outputs.token).toMatchObject({
      "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
      ciphertext: expect.any(String),
    });
  });

  it("serializes the provider as a small require of the installed package, not a copy of it", async () => {
    const ours = stack.state().resources.filter((r: any) => r.type.startsWith("pulumi-nodejs:dynamic/accessctl:"));
    expect(ours).toHaveLength(6);
    for (const r of ours) {
      expect(r.inputs.__provider).toMatch(/require\("@accessctl\/pulumi\/dist\/provider\/bounded\/[a-z-]+\.js"\)/);
      expect(r.inputs.__provider.length).toBeLessThan(2000);
    }
  });

  it("a second preview shows no changes (no perpetual diff)", async () => {
    const preview = await stack.ok("preview", spec);
    expect(preview.changeSummary).toEqual({ same: 7 });
  });

  it("updates a description in place", async () => {
    const officeId = (await stack.ok("outputs")).outputs!.rule_office.value.id;
    spec.rules!.office.description = "HQ, 3rd floor";
    const up = await stack.ok("up", spec);
    expect(up.summary!.resourceChanges).toMatchObject({ update: 1, same: 6 });
    expect(up.outputs!.rule_office.value.id).toBe(officeId);
    expect((await client(emu.url, emu.adminToken).get(`/ip_policy_rules/${officeId}`)).body.description).toBe(
      "HQ, 3rd floor",
    );
  });

  it("replaces a rule when its action or policy changes, leaving nothing behind", async () => {
    const first = (await stack.ok("outputs")).outputs!.rule_office.value.id;
    spec.rules!.office.action = "deny"; // same CIDR, same policy: deleted before the new one is made
    const up = await stack.ok("up", spec);
    expect(up.summary!.resourceChanges).toMatchObject({ replace: 1 });
    const second = up.outputs!.rule_office.value.id;
    expect(second).not.toBe(first);
    spec.rules!.office.ipPolicyId = emu.fixtures.ipPolicies[1];
    const moved = await stack.ok("up", spec);
    expect(moved.summary!.resourceChanges).toMatchObject({ replace: 1 });
    const live = await rules();
    expect(live.map((r) => r.id)).not.toContain(first);
    expect(live.map((r) => r.id)).not.toContain(second);
    expect(live.filter((r) => r.cidr === "203.0.113.0/24")).toEqual([
      expect.objectContaining({
        action: "deny",
        ip_policy: expect.objectContaining({ id: emu.fixtures.ipPolicies[1] }),
      }),
    ]);
    expect(live).toHaveLength(before.rules.length + 4);
  });

  it("replaces the key when its owner changes, and when its triggers change (the new key made before the old one is deleted), each time with a new token", async () => {
    const old = (await stack.ok("outputs")).outputs!;
    spec.keys!.ci.ownerId = emu.fixtures.bots[0];
    const up = await stack.ok("up", spec);
    expect(up.summary!.resourceChanges).toMatchObject({ replace: 1 });
    expect(up.outputs!.key_ci.value.ownerId).toBe(emu.fixtures.bots[0]);
    expect(up.outputs!.token_ci.value).not.toBe(old.token_ci.value);
    expect(await keyIds()).toEqual([...before.keys, up.outputs!.key_ci.value.id].sort());
    expect((await client(emu.url, old.token_ci.value).get("/api_keys")).status).toBe(401);
    expect(stack.backendText()).not.toContain(up.outputs!.token_ci.value);

    // A rotation by its triggers: a new key (and token) before the old one is deleted.
    spec.keys!.ci.triggers = ["2026-11"];
    const rotated = await stack.ok("up", spec);
    expect(rotated.summary!.resourceChanges).toMatchObject({ replace: 1 });
    const lines = rotated.output.split("\n");
    const created = lines.findIndex((l) => /ApiKey ci created replacement/.test(l));
    const deleted = lines.findIndex((l) => /ApiKey ci deleting original/.test(l));
    expect(created, rotated.output).toBeGreaterThan(-1);
    expect(deleted).toBeGreaterThan(created); // create before delete: no moment without a key
    const now = { id: rotated.outputs!.key_ci.value.id, token: rotated.outputs!.token_ci };
    expect(now.id).not.toBe(up.outputs!.key_ci.value.id);
    expect(now.token.secret).toBe(true);
    expect(now.token.value).not.toBe(up.outputs!.token_ci.value);
    expect((await client(emu.url, emu.adminToken).get(`/api_keys/${up.outputs!.key_ci.value.id}`)).status).toBe(404);
    expect((await client(emu.url, up.outputs!.token_ci.value).get("/api_keys")).status).toBe(401);
    expect((await client(emu.url, now.token.value).get("/api_keys")).status).toBe(200);
    expect(await keyIds()).toEqual([...before.keys, now.id].sort());
    expect(stack.backendText()).not.toContain(now.token.value);
  });

  it("shows drift with preview --refresh and puts it right with refresh + up: a description and a CIDR changed, a rule, a key and a module deleted by hand", async () => {
    const outputs = (await stack.ok("outputs")).outputs!;
    const admin = client(emu.url, emu.adminToken);
    const edge = `/edges/tls/${emu.fixtures.tlsEdges[0]}/mutual_tls`;
    await admin.patch(`/ip_policy_rules/${outputs.rule_lab6.value.id}`, { description: "changed by hand" });
    await admin.patch(`/ip_policy_rules/${outputs.rule_office.value.id}`, { cidr: "203.0.113.0/25" });
    expect((await admin.delete(`/ip_policy_rules/${outputs.rule_host6.value.id}`)).status).toBe(204);
    await admin.delete(`/api_keys/${outputs.key_ci.value.id}`);
    expect((await admin.delete(edge)).status).toBe(204);

    const preview = await stack.ok("preview", spec, { refresh: true });
    expect(preview.changeSummary).toMatchObject({ create: 3, update: 2 });

    await stack.ok("refresh", spec);
    const up = await stack.ok("up", spec);
    expect(up.summary!.resourceChanges).toMatchObject({ create: 3, update: 2 });
    expect((await rules()).filter((r) => r.cidr === "2001:db8::7/128").map((r) => r.id)).toEqual([
      up.outputs!.rule_host6.value.id,
    ]);
    expect((await admin.get(`/ip_policy_rules/${outputs.rule_lab6.value.id}`)).body.description).toBe("lab");
    expect((await admin.get(`/ip_policy_rules/${outputs.rule_office.value.id}`)).body).toMatchObject({
      cidr: "203.0.113.0/24",
      description: "HQ, 3rd floor",
    });
    expect((await admin.get(edge)).body).toMatchObject({
      enabled: true,
      certificate_authorities: [{ id: emu.fixtures.certificateAuthorities[0] }],
    });
    expect(await keyIds()).toEqual([...before.keys, up.outputs!.key_ci.value.id].sort());
    expect(up.outputs!.token_ci.value).not.toBe(outputs.token_ci.value); // a new key, a new token
    expect((await stack.ok("preview", spec, { refresh: true })).changeSummary).toEqual({ same: 7 });
  });

  it("destroy leaves the account as it was before up", async () => {
    await stack.ok("destroy", spec);
    expect(await keyIds()).toEqual(before.keys);
    expect((await rules()).map((r) => r.id)).toEqual(before.rules);
    expect(
      (await client(emu.url, emu.adminToken).get(`/edges/tls/${emu.fixtures.tlsEdges[0]}/mutual_tls`)).status,
    ).toBe(404);
  });
});

describe("Pulumi's update plans on the README's first program (a stack output of a rule's id from the set's rules)", () => {
  const cleanups: (() => unknown)[] = [];
  afterAll(() =>
    cleanups
      .splice(0)
      .reverse()
      .forEach((c) => c()),
  );

  it.each(["dynamic", "plugin"] as const)(
    "%s: preview --save-plan, then up --plan: the create and a later update are applied, up exits 0, the output holds the rule's id; the clean gate; the run record",
    async (host) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-plans-"));
      // A Pulumi home of its own: the run records of this stack's commands alone (docs/guides/rule-sets.md).
      const plugin = host === "plugin" ? packedPlugin(cleanups).home.env : undefined;
      const home = plugin?.PULUMI_HOME ?? path.join(dir, "home");
      const runs = () =>
        fs.existsSync(path.join(home, "accessctl-runs")) ? fs.readdirSync(path.join(home, "accessctl-runs")) : [];
      const plans = testStack({
        project: inject("e2e"),
        emulator: emu,
        name: `plans-${host}`,
        env: plugin ?? { PULUMI_HOME: home },
      });
      try {
        const p = emu.fixtures.ipPolicies[1];
        const hq = { cidr: "203.0.113.0/24", action: "allow", description: "HQ" };
        const rulesOf = (extra: Record<string, unknown>[]) => [hq, { cidr: "198.51.100.7", action: "deny" }, ...extra];
        const spec = (extra: Record<string, unknown>[] = []): Spec => ({
          sets: { allowlist: { ipPolicyId: p, rules: rulesOf(extra) } },
          idsOnly: true,
          ruleIdOf: hq.cidr,
          plugin: !!plugin,
        });
        const experimental = { env: { ...plugin, PULUMI_EXPERIMENTAL: "true" } };
        const hqId = async () => (await rules()).find((r) => r.ip_policy.id === p && r.cidr === hq.cidr)?.id;
        for (const [i, step] of [spec(), spec([{ cidr: "192.0.2.0/24", action: "allow" }])].entries()) {
          const plan = path.join(dir, `plan-${i}.json`);
          await plans.ok("preview", step, { args: ["--save-plan", plan] });
          const up = await plans.run("up", step, { args: ["--plan", plan], ...experimental });
          expect(up.exitCode, up.output.slice(-3000)).toBe(0);
          expect(up.outputs!.ruleId_allowlist.value).toBe(await hqId());
        }
        // The record of the last up stays after it; the next command removes it and leaves its own.
        const afterUp = runs();
        expect(afterUp).toHaveLength(1);
        // The clean drift gate (preview --refresh --diff --expect-no-changes): nothing from the provider,
        // and the set's refresh row marks nothing but Pulumi's own `~ rules (hidden)` (docs/guides/drift-detection.md).
        const gate = await plans.ok("preview", spec([{ cidr: "192.0.2.0/24", action: "allow" }]), {
          refresh: true,
          expectNoChanges: true,
        });
        expect(gate.exitCode).toBe(0);
        expect(gate.output).not.toMatch(/refresh of the IpPolicyRuleSet|plan for ipp_/);
        const marked = gate.output
          .split("\n")
          .filter((l) => /^\s*[~+-] /.test(l) && !/pulumi:pulumi:Stack: \(refresh\)/.test(l));
        const type = plugin ? "accessctl:index:IpPolicyRuleSet" : "pulumi-nodejs:dynamic/accessctl:IpPolicyRuleSet";
        expect(marked.map((l) => l.trim())).toEqual([`~ ${type}: (refresh)`, "~ rules (hidden)"]);
        expect(runs()).toHaveLength(1);
        expect(runs()).not.toEqual(afterUp);
        await plans.ok("destroy", spec());
      } finally {
        plans.cleanup();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
