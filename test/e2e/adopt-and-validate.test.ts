// The real engine: adopting existing objects, bad input stopped at preview with no API call,
// credentials from the environment, and the read-only list helpers in a program.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { client, listAll, RunningEmulator, startEmulator } from "../helpers/emulator";
import { testStack } from "../helpers/stack";

let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startEmulator();
});
afterAll(async () => {
  await emu?.stop();
});

describe("adoption", () => {
  it("takes over an existing rule and module by id without creating new objects", async () => {
    const admin = client(emu.url, emu.adminToken);
    const f = emu.fixtures;
    const rule = (await admin.post("/ip_policy_rules", { ip_policy_id: f.ipPolicies[1], cidr: "198.51.100.0/24", action: "deny", description: "by hand" })).body;
    const edgePath = `/edges/tls/${f.tlsEdges[1]}/mutual_tls`;
    await admin.put(edgePath, { enabled: false, certificate_authority_ids: [f.certificateAuthorities[1]] });
    const rulesBefore = (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).length;

    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "adopt" });
    try {
      const spec = {
        rules: { scanner: { adoptId: rule.id, ipPolicyId: f.ipPolicies[1], cidr: "198.51.100.0/24", action: "deny", description: "managed" } },
        modules: { edge: { edgeId: f.tlsEdges[1], certificateAuthorityIds: f.certificateAuthorities, enabled: true } },
      };
      const up = await stack.ok("up", spec);
      expect(up.outputs!.rule_scanner.value.id).toBe(rule.id);
      expect((await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).length).toBe(rulesBefore);
      expect((await admin.get(`/ip_policy_rules/${rule.id}`)).body.description).toBe("managed");
      expect((await admin.get(edgePath)).body).toMatchObject({ enabled: true, certificate_authorities: [{ id: f.certificateAuthorities[0] }, { id: f.certificateAuthorities[1] }] });
      expect((await stack.ok("preview", spec)).changeSummary).toEqual({ same: 3 });
      await stack.ok("destroy", spec);
      expect((await admin.get(`/ip_policy_rules/${rule.id}`)).status).toBe(404);
    } finally {
      stack.cleanup();
    }
  });
});

describe("list helpers", () => {
  it("listApiKeys and listIpPolicyRules read every page with the stack's config", async () => {
    const admin = client(emu.url, emu.adminToken);
    const policy = emu.fixtures.ipPolicies[1];
    for (let i = 0; i < 105; i++) await admin.post("/ip_policy_rules", { ip_policy_id: policy, cidr: `172.16.${i}.0/24`, action: "allow" });
    await admin.post("/api_keys", { description: "listed key" });
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "lists" });
    try {
      const up = await stack.ok("up", { listPolicy: policy });
      const cidrs: string[] = up.outputs!.listedRuleCidrs.value;
      expect(cidrs.filter((c) => c.startsWith("172.16."))).toHaveLength(105); // more than one page of 100
      expect(up.outputs!.listedKeyDescriptions.value).toContain("listed key");
    } finally {
      stack.cleanup();
    }
  });
});

describe("bad input", () => {
  it("fails preview naming the property and the reason, and calls no API", async () => {
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "bad-input" });
    try {
      const p = emu.fixtures.ipPolicies[0];
      const requestsBefore = (await emu.stats()).requests;
      // The engine stops at the first resource whose check fails: one bad input per preview.
      const cases: [Record<string, unknown>, string][] = [
        [{ rules: { r: { ipPolicyId: p, cidr: "10.0.0.5/8", action: "allow" } } }, 'property cidr value {10.0.0.5/8} has a problem: cidr "10.0.0.5/8" has host bits set; did you mean 10.0.0.0/8?'],
        [{ rules: { r: { ipPolicyId: p, cidr: "10.1.0.0/16", action: "allow", description: "x".repeat(300) } } }, "has a problem: description is 300 bytes of UTF-8; the limit is 255 bytes"],
        [{ rules: { r: { ipPolicyId: p, cidr: "10.2.0.0/16", action: "permit" } } }, 'property action value {permit} has a problem: action must be "allow" or "deny", got "permit"'],
        [{ keys: { k: { adoptId: "ak_../../ip_policy_rules" } } }, "property adoptId value {ak_../../ip_policy_rules} has a problem: adoptId must contain only letters and digits after the prefix"],
      ];
      for (const [spec, message] of cases) {
        const preview = await stack.run("preview", spec);
        expect(preview.ok).toBe(false);
        expect(preview.output).toContain(message);
      }
      expect((await emu.stats()).requests).toBe(requestsBefore);
    } finally {
      stack.cleanup();
    }
  });

  it("explains a missing API URL", async () => {
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "no-config", credentials: "env", apiKey: "" });
    try {
      const up = await stack.run("up", { keys: { k: {} } }, { env: { ACCESSCTL_API_URL: "", ACCESSCTL_API_KEY: "" } });
      expect(up.ok).toBe(false);
      expect(up.output).toContain("set the stack config `pulumi config set accessctl:apiUrl https://…` or the environment variable ACCESSCTL_API_URL");
    } finally {
      stack.cleanup();
    }
  });
});

describe("credentials from the environment", () => {
  it("runs up and destroy with ACCESSCTL_API_URL / ACCESSCTL_API_KEY only, and keeps the key out of state", async () => {
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "env-creds", credentials: "env" });
    try {
      const spec = { keys: { env: { description: "from env" } }, rules: { r: { ipPolicyId: emu.fixtures.ipPolicies[0], cidr: "2001:db8:e::/48", action: "allow" } } };
      const up = await stack.ok("up", spec);
      expect(up.summary!.resourceChanges).toMatchObject({ create: 3 });
      const text = stack.backendText();
      expect(text).not.toContain(emu.adminToken);
      expect(text).not.toContain(up.outputs!.token_env.value);
      await stack.ok("destroy", spec);
    } finally {
      stack.cleanup();
    }
  });
});
