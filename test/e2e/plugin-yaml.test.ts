// A Pulumi YAML program of its own using the plugin pulumi-resource-accessctl, installed from the
// tarball the npm package carries: the scenario of test/helpers/plugin-scenario.ts (a set, a rule, a
// key and a mutual TLS module; drift by hand; the token a secret), and `pulumi import` of each
// resource into another stack, whose generated program then previews clean.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator } from "../helpers/emulator";
import { destroyScenario, runScenario, scenarioConfig } from "../helpers/plugin-scenario";
import { packedPlugin, testStack } from "../helpers/stack";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pulumi } = require("../../scripts/stack.js");

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const PROGRAM = `name: accessctl-yaml
runtime: yaml
config:
  rulePolicy: { type: string }
  setPolicy: { type: string }
  edgeId: { type: string }
  caId: { type: string }
resources:
  ci:
    type: accessctl:index:ApiKey
    properties:
      description: deploys
      triggers: ["2026-11"]
  office:
    type: accessctl:index:IpPolicyRule
    properties:
      ipPolicyId: \${rulePolicy}
      cidr: 203.0.113.0/24
      action: allow
      description: HQ
  allow:
    type: accessctl:index:IpPolicyRuleSet
    properties:
      ipPolicyId: \${setPolicy}
      rules:
        - cidr: 10.0.0.0/8
          action: allow
        - cidr: 198.51.100.7
          action: deny
          description: one host
    options:
      hideDiffs: [rules]
  edge:
    type: accessctl:index:TlsEdgeMutualTls
    properties:
      edgeId: \${edgeId}
      certificateAuthorityIds:
        - \${caId}
outputs:
  token: \${ci.token}
  officeId: \${office.id}
  keyId: \${ci.id}
  denied: \${allow.rules["198.51.100.7/32"].id}
`;

function yamlProject(name: string, program: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), program);
  return dir;
}

describe("the plugin from a YAML program", () => {
  it("up, a clean preview, drift by hand failing the gate, up --refresh, destroy; the token a secret; pulumi import of each resource, whose program text previews clean", async () => {
    const { project: e2e, home } = packedPlugin(cleanups);
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const q = emu.fixtures.ipPolicies[1];
    const dir = yamlProject("accessctl-yaml", PROGRAM);
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const stack = testStack({
      project: { dir, binDir: e2e.binDir },
      emulator: emu,
      name: "yaml",
      env: home.env,
      extraConfig: scenarioConfig(emu),
    });
    cleanups.push(() => stack.cleanup());

    const up = { outputs: await runScenario(stack, emu) };

    // Another stack, empty, imports each object; the program Pulumi writes for them previews clean there.
    const other = yamlProject("accessctl-imported", "name: accessctl-imported\nruntime: yaml\n");
    cleanups.push(() => fs.rmSync(other, { recursive: true, force: true }));
    const imports = testStack({
      project: { dir: other, binDir: e2e.binDir },
      emulator: emu,
      name: "imports",
      env: home.env,
    });
    cleanups.push(() => imports.cleanup());
    await imports.ok("preview", {});
    const job = {
      dir: other,
      stack: "imports",
      binDir: e2e.binDir,
      backend: `file://${imports.backend}`,
      env: { ...home.env },
    };
    const outFile = path.join(other, "imported.yaml");
    const resources = [
      ["accessctl:index:IpPolicyRule", "office", up.outputs!.officeId.value],
      ["accessctl:index:IpPolicyRuleSet", "allow", q],
      ["accessctl:index:ApiKey", "ci", up.outputs!.keyId.value],
      ["accessctl:index:TlsEdgeMutualTls", "edge", emu.fixtures.tlsEdges[0]],
    ];
    const spec = { resources: resources.map(([type, name, id]) => ({ type, name, id })) };
    fs.writeFileSync(path.join(other, "import.json"), JSON.stringify(spec));
    const imported = await pulumi(job, [
      "import",
      "--file",
      "import.json",
      "--yes",
      "--non-interactive",
      "--stack",
      "imports",
      "--out",
      outFile,
    ]);
    expect(imported.code, imported.stderr + imported.stdout).toBe(0);
    const text = fs.readFileSync(outFile, "utf8");
    expect(text).toContain("type: accessctl:IpPolicyRuleSet");
    expect(text).toMatch(/rules:\n\s+- action: allow\n\s+cidr: 10\.0\.0\.0\/8/); // the rules as a program writes them: a list
    expect(text).toMatch(/cidr: 198\.51\.100\.7\/32\n\s+description: one host/);
    const state = imports.state().resources;
    expect(state.find((r) => r.type === "accessctl:index:ApiKey").outputs.token).toBeUndefined(); // shown once, to its creator
    fs.writeFileSync(path.join(other, "Pulumi.yaml"), `name: accessctl-imported\nruntime: yaml\n${text}`);
    expect((await imports.run("preview", {}, { expectNoChanges: true })).exitCode).toBe(0);
    expect(await pulumi(job, ["stack", "rm", "imports", "--force", "--yes", "--non-interactive"])).toMatchObject({
      code: 0,
    }); // imported objects are protected: leave them

    await destroyScenario(stack, emu);
  });

  it("refuses at preview, before any request: an API key (or the team key) kept in plain text, alone or in profiles (Configure), a URL that is not https (CheckConfig)", async () => {
    const { project: e2e, home } = packedPlugin(cleanups);
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const dir = yamlProject(
      "accessctl-yaml-config",
      "name: accessctl-yaml-config\nruntime: yaml\nresources:\n  ci:\n    type: accessctl:index:ApiKey\n",
    );
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const plain = testStack({
      project: { dir, binDir: e2e.binDir },
      emulator: emu,
      name: "plain",
      env: home.env,
      extraConfig: { "accessctl:apiKey": { value: emu.adminToken, secret: false } },
    });
    cleanups.push(() => plain.cleanup());
    const refused = await plain.run("preview", {});
    expect(refused.ok).toBe(false);
    expect(refused.output).toContain(
      "accessctl:apiKey is stored in plain text in Pulumi.<stack>.yaml and in the state",
    );
    const profiles = JSON.stringify({ staging: { apiUrl: emu.url, apiKey: emu.adminToken } });
    const inProfiles = testStack({
      project: { dir, binDir: e2e.binDir },
      emulator: emu,
      name: "plain-profile",
      env: home.env,
      extraConfig: { "accessctl:profiles": { value: profiles } },
    });
    cleanups.push(() => inProfiles.cleanup());
    const refusedToo = await inProfiles.run("preview", {});
    expect(refusedToo.ok).toBe(false);
    expect(refusedToo.output).toContain(
      "accessctl:profiles holds an API key stored in plain text in Pulumi.<stack>.yaml and in the state",
    );
    const plainTeam = testStack({
      project: { dir, binDir: e2e.binDir },
      emulator: emu,
      name: "plain-team",
      env: home.env,
      extraConfig: { "accessctl:teamKey": { value: "team-key-0123456789abcdef", secret: false } },
    });
    cleanups.push(() => plainTeam.cleanup());
    const team = await plainTeam.run("preview", {});
    expect(team.ok).toBe(false);
    expect(team.output).toContain("accessctl:teamKey is stored in plain text in Pulumi.<stack>.yaml and in the state");
    const http = testStack({
      project: { dir, binDir: e2e.binDir },
      emulator: emu,
      name: "http",
      env: home.env,
      extraConfig: { "accessctl:apiUrl": { value: "http://192.0.2.10:8787" } },
    });
    cleanups.push(() => http.cleanup());
    const bad = await http.run("preview", {});
    expect(bad.ok).toBe(false);
    expect(bad.output).toContain(
      "accessctl:apiUrl must use https:// (plain http:// is allowed only to loopback addresses), got http://192.0.2.10:8787",
    );
    expect((await emu.stats()).requests).toBe(0);
  });
});
