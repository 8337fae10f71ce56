// One scenario for a program of any language that uses the plugin (YAML, Python, Go): it declares
// an API key "ci", a rule "office" (203.0.113.0/24 allow, "HQ") on config rulePolicy, a set "allow"
// (10.0.0.0/8 allow, 198.51.100.7 deny "one host") on setPolicy and a mutual TLS module "edge", and
// exports token, officeId, keyId and denied (the set's rule for 198.51.100.7/32). Through the real
// CLI: up, the token a secret, a clean preview, drift by hand failing the gate, up --refresh, a
// clean gate, destroy. The drift is the plugin's, whatever the language: { drift: false } leaves it
// to the YAML program's test (plugin-yaml.test.ts) for a language whose SDK is what is tested.
import { expect } from "vitest";
import { client, listAll, RunningEmulator } from "./emulator";
import { testStack } from "./stack";

/** The config every such program reads. */
export function scenarioConfig(emu: RunningEmulator): Record<string, { value: string }> {
  const [rulePolicy, setPolicy] = emu.fixtures.ipPolicies;
  return {
    rulePolicy: { value: rulePolicy },
    setPolicy: { value: setPolicy },
    edgeId: { value: emu.fixtures.tlsEdges[0] },
    caId: { value: emu.fixtures.certificateAuthorities[0] },
  };
}

/** Runs the scenario; returns the outputs of the first up (for what a test does next, e.g. import). */
export async function runScenario(
  stack: ReturnType<typeof testStack>,
  emu: RunningEmulator,
  extra: Record<string, unknown> = {},
  { drift = true } = {},
) {
  const [, setPolicy] = emu.fixtures.ipPolicies;
  const up = await stack.ok("up", {}, extra);
  expect(up.summary!.resourceChanges).toEqual({ create: 5 });
  expect(up.outputs!.token.secret).toBe(true);
  expect(up.outputs!.denied.value).toMatch(/^ipr_/); // the set's rules keyed by canonical CIDR
  expect(stack.backendText()).not.toContain(up.outputs!.token.value);
  const clean = await stack.run("preview", {}, { ...extra, expectNoChanges: true });
  expect(clean.exitCode, clean.output).toBe(0);
  if (!drift) return up.outputs!;

  const api = client(emu.url, emu.adminToken);
  expect((await api.patch(`/ip_policy_rules/${up.outputs!.officeId.value}`, { description: "by hand" })).status).toBe(
    200,
  );
  expect(
    (await api.post("/ip_policy_rules", { ip_policy_id: setPolicy, cidr: "0.0.0.0/0", action: "allow" })).status,
  ).toBe(201);
  const gate = await stack.run("preview", {}, { ...extra, refresh: true, expectNoChanges: true });
  expect(gate.ok).toBe(false);
  expect(gate.output).toMatch(/~ description: "by hand" => "HQ"/);
  expect(gate.output).toMatch(/plan for ipp_\w+: delete 1: 1 request\n\s+- 0\.0\.0\.0\/0 allow/);
  await stack.ok("up", {}, { ...extra, refresh: true });
  expect((await api.get(`/ip_policy_rules/${up.outputs!.officeId.value}`)).body.description).toBe("HQ");
  const after = await stack.run("preview", {}, { ...extra, refresh: true, expectNoChanges: true });
  expect(after.exitCode, after.output).toBe(0);
  return up.outputs!;
}

/** destroy, and nothing of the scenario is left. */
export async function destroyScenario(
  stack: ReturnType<typeof testStack>,
  emu: RunningEmulator,
  extra: Record<string, unknown> = {},
) {
  await stack.ok("destroy", {}, extra);
  expect(await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).toEqual([]);
}
