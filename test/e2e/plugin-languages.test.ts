// Python and Go programs of their own, with the SDKs generated from the schema (sdks/python,
// sdks/go), using the plugin installed from the tarball the npm package carries: the scenario of
// test/helpers/plugin-scenario.ts through the real CLI and each language's host (up, the outputs
// and the token a secret, a clean preview, destroy; the plugin's drift: plugin-yaml.test.ts).
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, it } from "vitest";
import { REPO, startEmulator } from "../helpers/emulator";
import { destroyScenario, runScenario, scenarioConfig } from "../helpers/plugin-scenario";
import { packedPlugin, testStack } from "../helpers/stack";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pythonVenv } = require("../../scripts/python-venv.js");

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function project(name: string, files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, file), text);
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The plugin, and an emulator, for one language's stack. */
async function setUp() {
  const { project: e2e, home } = packedPlugin(cleanups);
  const emu = await startEmulator(["--rate-limit", "off"]);
  cleanups.push(() => emu.stop());
  return { binDir: e2e.binDir, home, emu };
}

const PYTHON = `import pulumi
import pulumi_accessctl as accessctl

config = pulumi.Config()
ci = accessctl.ApiKey("ci", description="deploys", triggers=["2026-11"])
office = accessctl.IpPolicyRule("office", ip_policy_id=config.require("rulePolicy"), cidr="203.0.113.0/24", action="allow", description="HQ")
allow = accessctl.IpPolicyRuleSet("allow", ip_policy_id=config.require("setPolicy"), rules=[
    accessctl.IpPolicyRuleSetRuleArgs(cidr="10.0.0.0/8", action="allow"),
    {"cidr": "198.51.100.7", "action": "deny", "description": "one host"},
])
edge = accessctl.TlsEdgeMutualTls("edge", edge_id=config.require("edgeId"), certificate_authority_ids=[config.require("caId")])
pulumi.export("token", ci.token)
pulumi.export("officeId", office.id)
pulumi.export("keyId", ci.id)
pulumi.export("denied", allow.rules.apply(lambda rules: rules["198.51.100.7/32"].id))
pulumi.export("listed", accessctl.list_ip_policy_rules_output(ip_policy_id=config.require("rulePolicy")).apply(lambda result: [r.cidr for r in result.rules]))
`;

const GO = `package main

import (
	"github.com/accessctl/pulumi-accessctl/sdks/go/accessctl"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		cfg := config.New(ctx, "")
		ci, err := accessctl.NewApiKey(ctx, "ci", &accessctl.ApiKeyArgs{Description: pulumi.String("deploys"), Triggers: pulumi.Array{pulumi.String("2026-11")}})
		if err != nil {
			return err
		}
		office, err := accessctl.NewIpPolicyRule(ctx, "office", &accessctl.IpPolicyRuleArgs{
			IpPolicyId: pulumi.String(cfg.Require("rulePolicy")), Cidr: pulumi.String("203.0.113.0/24"), Action: pulumi.String("allow"), Description: pulumi.String("HQ"),
		})
		if err != nil {
			return err
		}
		allow, err := accessctl.NewIpPolicyRuleSet(ctx, "allow", &accessctl.IpPolicyRuleSetArgs{
			IpPolicyId: pulumi.String(cfg.Require("setPolicy")),
			Rules: accessctl.IpPolicyRuleSetRuleArray{
				accessctl.IpPolicyRuleSetRuleArgs{Cidr: pulumi.String("10.0.0.0/8"), Action: pulumi.String("allow")},
				accessctl.IpPolicyRuleSetRuleArgs{Cidr: pulumi.String("198.51.100.7"), Action: pulumi.String("deny"), Description: pulumi.String("one host")},
			},
		})
		if err != nil {
			return err
		}
		_, err = accessctl.NewTlsEdgeMutualTls(ctx, "edge", &accessctl.TlsEdgeMutualTlsArgs{EdgeId: pulumi.String(cfg.Require("edgeId")), CertificateAuthorityIds: pulumi.StringArray{pulumi.String(cfg.Require("caId"))}})
		if err != nil {
			return err
		}
		ctx.Export("token", ci.Token)
		ctx.Export("officeId", office.ID())
		ctx.Export("keyId", ci.ID())
		ctx.Export("denied", allow.Rules.MapIndex(pulumi.String("198.51.100.7/32")).Id())
		return nil
	})
}
`;

describe("the plugin from other languages, with the generated SDKs", () => {
  it("a Python program (pulumi_accessctl)", async () => {
    const { binDir, home, emu } = await setUp();
    const venv: string = pythonVenv();
    const dir = project("accessctl-python", {
      "Pulumi.yaml": "name: accessctl-python\nruntime: python\n",
      "__main__.py": PYTHON,
    });
    // The generated SDK, installed as pip installs it, beside the program (the venv is shared).
    const site = path.join(dir, "site");
    execFileSync(
      path.join(venv, "bin", "pip"),
      [
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--no-build-isolation",
        "--target",
        site,
        path.join(REPO, "sdks/python"),
      ],
      { stdio: "pipe" },
    );
    const env = { ...home.env, VIRTUAL_ENV: venv, PYTHONPATH: site };
    const stack = testStack({
      project: { dir, binDir },
      emulator: emu,
      name: "python",
      env,
      extraConfig: scenarioConfig(emu),
    });
    cleanups.push(() => stack.cleanup());
    await runScenario(stack, emu, {}, { drift: false });
    await destroyScenario(stack, emu);
  });

  it("a Go program (sdks/go)", async () => {
    const { binDir, home, emu } = await setUp();
    const gomod = `module accessctl-go\n\ngo 1.26\n\nrequire (\n\tgithub.com/accessctl/pulumi-accessctl/sdks/go v0.0.0\n\tgithub.com/pulumi/pulumi/sdk/v3 v3.259.0\n)\n\nreplace github.com/accessctl/pulumi-accessctl/sdks/go => ${path.join(REPO, "sdks/go")}\n`;
    const dir = project("accessctl-go", {
      "Pulumi.yaml": "name: accessctl-go\nruntime: go\n",
      "main.go": GO,
      "go.mod": gomod,
    });
    const goEnv = { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod" };
    execFileSync("go", ["mod", "tidy"], { cwd: dir, env: goEnv, stdio: "pipe" });
    const env = { ...home.env, GOTOOLCHAIN: "local" };
    const stack = testStack({
      project: { dir, binDir },
      emulator: emu,
      name: "go",
      env,
      extraConfig: scenarioConfig(emu),
    });
    cleanups.push(() => stack.cleanup());
    await runScenario(stack, emu, {}, { drift: false });
    await destroyScenario(stack, emu);
  });
});
