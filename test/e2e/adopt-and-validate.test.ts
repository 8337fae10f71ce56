// The real engine: adopting existing objects, bad input stopped at preview with no API call, a
// missing API URL, and the read-only list helpers in a program. (Credentials from the environment
// only: no-leaks.test.ts, whose env run does up, preview --refresh and destroy and finds the key in
// no output, state or log. Each message of check(): test/provider/check-diff.test.ts.)
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { client, listAll, RunningEmulator, startEmulator } from "../helpers/emulator";
import { testStack } from "../helpers/stack";

let emu: RunningEmulator;

beforeAll(async () => {
  // No rate limit: the list helpers' test makes 106 objects through the API first.
  emu = await startEmulator(["--rate-limit", "off"]);
});
afterAll(async () => {
  await emu?.stop();
});

describe("adoption", () => {
  it("takes over an existing rule and module by id without creating new objects", async () => {
    const admin = client(emu.url, emu.adminToken);
    const f = emu.fixtures;
    const rule = (
      await admin.post("/ip_policy_rules", {
        ip_policy_id: f.ipPolicies[1],
        cidr: "198.51.100.0/24",
        action: "deny",
        description: "by hand",
      })
    ).body;
    const edgePath = `/edges/tls/${f.tlsEdges[1]}/mutual_tls`;
    await admin.put(edgePath, { enabled: false, certificate_authority_ids: [f.certificateAuthorities[1]] });
    const rulesBefore = (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).length;

    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "adopt" });
    try {
      const spec = {
        rules: {
          scanner: {
            adoptId: rule.id,
            ipPolicyId: f.ipPolicies[1],
            cidr: "198.51.100.0/24",
            action: "deny",
            description: "managed",
          },
        },
        modules: { edge: { edgeId: f.tlsEdges[1], certificateAuthorityIds: f.certificateAuthorities, enabled: true } },
      };
      const up = await stack.ok("up", spec);
      expect(up.outputs!.rule_scanner.value.id).toBe(rule.id);
      expect((await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).length).toBe(rulesBefore);
      expect((await admin.get(`/ip_policy_rules/${rule.id}`)).body.description).toBe("managed");
      expect((await admin.get(edgePath)).body).toMatchObject({
        enabled: true,
        certificate_authorities: [{ id: f.certificateAuthorities[0] }, { id: f.certificateAuthorities[1] }],
      });
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
    for (let i = 0; i < 105; i++)
      await admin.post("/ip_policy_rules", { ip_policy_id: policy, cidr: `172.16.${i}.0/24`, action: "allow" });
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
      // The engine stops at the first resource whose check fails: one bad input per preview. One
      // of a rule and one of a key; the other messages are check()'s, in test/provider/check-diff.test.ts.
      const cases: [Record<string, unknown>, string][] = [
        [
          { rules: { r: { ipPolicyId: p, cidr: "10.0.0.5/8", action: "allow" } } },
          'property cidr value {10.0.0.5/8} has a problem: cidr "10.0.0.5/8" has host bits set; did you mean 10.0.0.0/8?',
        ],
        [
          { keys: { k: { adoptId: "ak_../../ip_policy_rules" } } },
          "property adoptId value {ak_../../ip_policy_rules} has a problem: adoptId must contain only letters and digits after the prefix",
        ],
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
    const stack = testStack({
      project: inject("e2e"),
      emulator: emu,
      name: "no-config",
      credentials: "env",
      apiKey: "",
    });
    try {
      const up = await stack.run("up", { keys: { k: {} } }, { env: { ACCESSCTL_API_URL: "", ACCESSCTL_API_KEY: "" } });
      expect(up.ok).toBe(false);
      expect(up.output).toContain(
        "set the stack config `pulumi config set accessctl:apiUrl https://…` or the environment variable ACCESSCTL_API_URL",
      );
    } finally {
      stack.cleanup();
    }
  });
});
