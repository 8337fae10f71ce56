// The guardrails pack (templates/accessctl-guardrails, as the npm package ships it) run by the real
// CLI on the example of docs/guides/guardrails.md, a YAML program on the plugin: a program allowing
// 0.0.0.0/0 fails `pulumi preview --policy-pack` and `pulumi up --policy-pack` with one line per
// violation, before any request that writes; without that rule, and with the guide's config file, it
// passes, the config's advisory shown. The CLI built here has a Node.js host without RunPlugin, so the
// pack runs as the guide says: a copy of `pulumi` beside the YAML host alone, and the pack's
// bin/pulumi-analyzer-policy-nodejs on PATH (Pulumi's path for CLIs without a Node.js host). A
// TypeScript program runs it the same way when the Automation API runs it inline (no language host):
// its preview fails on the dynamic classes' set and the plugin's key. Python and Go programs (the
// generated SDKs, as plugin-languages.test.ts runs them) go the same way: one program each, allowing
// 0.0.0.0/0 (the preview fails, naming it) and then without it (the preview passes).
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RunningEmulator, startEmulator } from "../helpers/emulator";
import { packedPlugin, testStack } from "../helpers/stack";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pythonVenv } = require("../../scripts/python-venv.js");

const REPO = path.resolve(__dirname, "../..");
const GUIDE = fs.readFileSync(path.join(REPO, "docs/guides/guardrails.md"), "utf8");

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The guide's fenced block whose info string is `lang` ("" for none) and that holds `marker`. */
function guideBlock(lang: string, marker: string): string {
  const blocks: { lang: string; text: string }[] = [];
  let open: { lang: string; lines: string[] } | undefined;
  for (const line of GUIDE.split("\n")) {
    const fence = /^```(\S*)\s*$/.exec(line);
    if (fence && !open) open = { lang: fence[1], lines: [] };
    else if (fence && open) {
      blocks.push({ lang: open.lang, text: open.lines.join("\n") + "\n" });
      open = undefined;
    } else open?.lines.push(line);
  }
  const found = blocks.find((b) => b.lang === lang && b.text.includes(marker));
  if (!found) throw new Error(`docs/guides/guardrails.md has no ${lang || "plain"} block holding ${marker}`);
  return found.text;
}

function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The pack as the guide installs it: copied from the installed package, its dependencies installed (ours: tarball). */
function installPack(installed: string, tarball: string): string {
  const pack = path.join(tempDir("accessctl-guardrails"), "guardrails");
  fs.cpSync(path.join(installed, "templates/accessctl-guardrails"), pack, { recursive: true });
  const pkg = JSON.parse(fs.readFileSync(path.join(pack, "package.json"), "utf8"));
  pkg.dependencies["@accessctl/pulumi"] = `file:${tarball}`;
  fs.writeFileSync(path.join(pack, "package.json"), JSON.stringify(pkg, null, 2));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel", "error"], {
    cwd: pack,
    stdio: ["ignore", "inherit", "inherit"],
  });
  return pack;
}

/**
 * ROOT/bin holding a copy of `pulumi`, the YAML, Python and Go hosts and the dynamic providers' shim,
 * and no Node.js host: Pulumi then runs the pack through PATH's analyzer. Returns ROOT/bin.
 */
function binWithoutNodeHost(binDir: string): string {
  const dir = path.join(tempDir("accessctl-cli"), "bin");
  fs.mkdirSync(dir);
  // A copy: Pulumi looks for hosts beside the resolved binary.
  fs.copyFileSync(path.join(binDir, "pulumi"), path.join(dir, "pulumi"));
  fs.chmodSync(path.join(dir, "pulumi"), 0o755);
  const hosts = ["yaml", "python", "python-exec", "go"].map((l) => `pulumi-language-${l}`);
  for (const host of [...hosts, "pulumi-resource-pulumi-nodejs"])
    fs.symlinkSync(path.join(binDir, host), path.join(dir, host));
  return dir;
}

/**
 * The environment of a run through the analyzer: the pack's bin/ first on PATH, and no directory
 * holding a Node.js host or another dynamic providers' shim (npx puts this repository's node_modules/.bin first).
 */
function analyzerEnv(pack: string, home: Record<string, string>): Record<string, string> {
  const other = (p: string) =>
    ["pulumi-language-nodejs", "pulumi-resource-pulumi-nodejs"].some((f) => fs.existsSync(path.join(p, f)));
  const paths = (process.env.PATH ?? "").split(path.delimiter).filter((p) => p && !other(p));
  return {
    ...home,
    PULUMI_IGNORE_AMBIENT_PLUGINS: "false",
    PATH: [path.join(pack, "bin"), ...paths].join(path.delimiter),
  };
}

describe("the guardrails policy pack", () => {
  it("fails preview and up of the guide's program allowing 0.0.0.0/0, one line per violation, before any write; \
passes without it, with the guide's config", async () => {
    const { project: e2e, home } = packedPlugin(cleanups);
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const pack = installPack(path.join(e2e.dir, "node_modules/@accessctl/pulumi"), e2e.tarball);
    const bin = binWithoutNodeHost(e2e.binDir);
    const dir = tempDir("accessctl-guarded");
    const program = guideBlock("yaml", "name: office-access");
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), program);
    const configFile = path.join(dir, "guardrails-config.json");
    fs.writeFileSync(configFile, guideBlock("json", '"accessctl-forbidden-ranges"'));
    const env = analyzerEnv(pack, home.env);
    const policy = emu.fixtures.ipPolicies[0];
    const stack = testStack({
      project: { dir, binDir: bin },
      emulator: emu,
      name: "guarded",
      env,
      extraConfig: { ipPolicyId: { value: policy } },
    });
    cleanups.push(() => stack.cleanup());
    const withPack = ["--policy-pack", pack];

    const preview = await stack.run("preview", {}, { args: withPack });
    expect(preview.exitCode, preview.output).toBe(1);
    const lines = guideBlock("", 'IpPolicyRuleSet "office" on ipp_…')
      .trim()
      .split("\n")
      .map((l) => l.replace("ipp_…", policy));
    for (const line of lines) expect(preview.output.split("\n").map((l) => l.trim())).toContain(line);
    expect(preview.output).toContain("accessctl-forbidden-ranges");
    const up = await stack.run("up", {}, { args: withPack, withPreview: true });
    expect(up.ok, up.output).toBe(false);
    expect(up.output).toContain(lines[0]);
    const { byMethod } = await emu.stats();
    expect([byMethod.POST, byMethod.PATCH, byMethod.DELETE]).toEqual([undefined, undefined, undefined]);

    // The guide's fix: the 0.0.0.0/0 rule removed; its config file makes the widest allow /28, advisory.
    fs.writeFileSync(
      path.join(dir, "Pulumi.yaml"),
      program.replace("        - cidr: 0.0.0.0/0\n          action: allow\n", ""),
    );
    const clean = await stack.run("preview", {}, { args: [...withPack, "--policy-pack-config", configFile] });
    expect(clean.ok, clean.output).toBe(true);
    expect(clean.output).toContain(
      `IpPolicyRuleSet "office" on ${policy}: rule 203.0.113.0/24 allow is wider than /28, the widest IPv4 allow`,
    );
    expect(clean.output).toContain(
      `IpPolicyRuleSet "office" on ${policy}: rule 198.51.100.7/32 deny lies outside every allow of the policy`,
    );
    expect(clean.output).toMatch(/\[advisory\]\s+accessctl-widest-allow/);
  });

  it("fails the preview of a TypeScript program run inline by the Automation API (no language host), \
on the dynamic classes and the plugin's", async () => {
    const { project: e2e, home } = packedPlugin(cleanups);
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const pack = installPack(path.join(e2e.dir, "node_modules/@accessctl/pulumi"), e2e.tarball);
    const bin = binWithoutNodeHost(e2e.binDir);
    // The user's project: its node_modules (our package, @pulumi/pulumi) and a workspace directory of its own.
    const work = tempDir("accessctl-inline");
    fs.symlinkSync(path.join(e2e.dir, "node_modules"), path.join(work, "node_modules"));
    const fromProject = createRequire(path.join(e2e.dir, "package.json"));
    const { LocalWorkspace, PulumiCommand } = fromProject("@pulumi/pulumi/automation");
    const dynamic = fromProject("@accessctl/pulumi");
    const plugin = fromProject("@accessctl/pulumi/plugin");
    const policy = emu.fixtures.ipPolicies[1];
    const program = async () => {
      new dynamic.IpPolicyRuleSet("office", {
        ipPolicyId: policy,
        rules: [
          { cidr: "0.0.0.0/0", action: "allow" },
          { cidr: "10.0.0.0/8", action: "deny" },
        ],
      });
      new plugin.ApiKey("ci", { triggers: ["2026-11"] });
    };
    const backend = tempDir("accessctl-inline-backend");
    const envVars = {
      ...analyzerEnv(pack, home.env),
      PULUMI_BACKEND_URL: `file://${backend}`,
      PULUMI_CONFIG_PASSPHRASE: "accessctl-local",
      PULUMI_SKIP_UPDATE_CHECK: "true",
      ACCESSCTL_API_URL: emu.url,
      ACCESSCTL_API_KEY: emu.adminToken,
    };
    // The program's directory (`main`; the Automation API's default is the process's): the dynamic
    // providers' plugin resolves @pulumi/pulumi, and through it our package, from there.
    const projectSettings = { name: "guarded-ts", runtime: "nodejs", main: work };
    const pulumiCommand = await PulumiCommand.get({ root: path.dirname(bin), skipVersionCheck: true });
    const stack = await LocalWorkspace.createOrSelectStack(
      { stackName: "inline", projectName: "guarded-ts", program },
      { workDir: work, pulumiCommand, envVars, projectSettings },
    );
    let output = "";
    const failed = await stack.preview({ policyPacks: [pack], onOutput: (o: string) => (output += o) }).then(
      () => false,
      () => true,
    );
    expect(failed, output).toBe(true);
    expect(output).toMatch(
      /\[mandatory\]\s+accessctl-forbidden-ranges\s+\(pulumi-nodejs:dynamic\/accessctl:IpPolicyRuleSet: office\)/,
    );
    expect(output).toContain(
      `IpPolicyRuleSet "office" on ${policy}: rule 0.0.0.0/0 allow allows all of IPv4: it makes reachable 0.0.0.0/0 except 10.0.0.0/8 (4,278,190,080 addresses)`,
    );
    expect(output).toMatch(/\[mandatory\]\s+accessctl-api-key-description\s+\(accessctl:index:ApiKey: ci\)/);
    expect(output).toContain('ApiKey "ci" has no description');
    const { byMethod } = await emu.stats();
    expect([byMethod.POST, byMethod.PATCH, byMethod.DELETE]).toEqual([undefined, undefined, undefined]);
  });
});

const PYTHON = `import pulumi
import pulumi_accessctl as accessctl

accessctl.IpPolicyRuleSet("office", ip_policy_id=pulumi.Config().require("ipPolicyId"), rules=[
    {"cidr": "0.0.0.0/0", "action": "allow"},
    {"cidr": "10.0.0.0/8", "action": "deny"},
])
`;

const GO = `package main

import (
	"github.com/accessctl/pulumi-accessctl/sdks/go/accessctl"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		_, err := accessctl.NewIpPolicyRuleSet(ctx, "office", &accessctl.IpPolicyRuleSetArgs{
			IpPolicyId: pulumi.String(config.New(ctx, "").Require("ipPolicyId")),
			Rules: accessctl.IpPolicyRuleSetRuleArray{
				accessctl.IpPolicyRuleSetRuleArgs{Cidr: pulumi.String("0.0.0.0/0"), Action: pulumi.String("allow")},
				accessctl.IpPolicyRuleSetRuleArgs{Cidr: pulumi.String("10.0.0.0/8"), Action: pulumi.String("deny")},
			},
		})
		return err
	})
}
`;

describe("the guardrails pack on Python and Go programs (the generated SDKs, through Pulumi's analyzer path)", () => {
  it("a program allowing 0.0.0.0/0 fails `pulumi preview --policy-pack` with the one-line violation; \
without it, it passes", async () => {
    const { project: e2e, home } = packedPlugin(cleanups);
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const pack = installPack(path.join(e2e.dir, "node_modules/@accessctl/pulumi"), e2e.tarball);
    const bin = binWithoutNodeHost(e2e.binDir);
    const env = analyzerEnv(pack, home.env);

    // Python: the SDK installed as pip installs it, beside the program (the venv is plugin-languages.test.ts's).
    const venv: string = pythonVenv();
    const python = tempDir("accessctl-guarded-python");
    fs.writeFileSync(path.join(python, "Pulumi.yaml"), "name: guarded-python\nruntime: python\n");
    const pip = ["install", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-build-isolation"];
    const site = path.join(python, "site");
    const sdk = path.join(REPO, "sdks/python");
    execFileSync(path.join(venv, "bin", "pip"), [...pip, "--target", site, sdk], { stdio: "pipe" });
    const pythonEnv = { ...env, VIRTUAL_ENV: venv, PYTHONPATH: site };
    await guarded(emu, 0, { dir: python, file: "__main__.py", program: PYTHON, bin, env: pythonEnv }, pack);

    // Go: the SDK by a replace directive, modules from the Go module proxy (or its cache).
    const go = tempDir("accessctl-guarded-go");
    const ours = "github.com/accessctl/pulumi-accessctl/sdks/go";
    const gomod =
      `module guarded-go\n\ngo 1.26\n\nrequire (\n\t${ours} v0.0.0\n` +
      `\tgithub.com/pulumi/pulumi/sdk/v3 v3.259.0\n)\n\nreplace ${ours} => ${path.join(REPO, "sdks/go")}\n`;
    fs.writeFileSync(path.join(go, "Pulumi.yaml"), "name: guarded-go\nruntime: go\n");
    fs.writeFileSync(path.join(go, "go.mod"), gomod);
    fs.writeFileSync(path.join(go, "main.go"), GO);
    const goEnv = { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod" };
    execFileSync("go", ["mod", "tidy"], { cwd: go, env: goEnv, stdio: "pipe" });
    await guarded(emu, 1, { dir: go, file: "main.go", program: GO, bin, env: { ...env, GOTOOLCHAIN: "local" } }, pack);
  });
});

/** One language's program through the pack: refused while it allows 0.0.0.0/0, nothing written; passed without it. */
async function guarded(
  emu: RunningEmulator,
  n: number,
  p: { dir: string; file: string; program: string; bin: string; env: Record<string, string> },
  pack: string,
): Promise<void> {
  fs.writeFileSync(path.join(p.dir, p.file), p.program);
  const policy = emu.fixtures.ipPolicies[n];
  const name = path.basename(p.dir).replace(/^accessctl-guarded-(\w+).*$/, "$1");
  const extraConfig = { ipPolicyId: { value: policy } };
  const stack = testStack({ project: { dir: p.dir, binDir: p.bin }, emulator: emu, name, env: p.env, extraConfig });
  cleanups.push(() => stack.cleanup());
  const refused = await stack.run("preview", {}, { args: ["--policy-pack", pack] });
  expect(refused.exitCode, refused.output).toBe(1);
  const mandatory = /\[mandatory\]\s+accessctl-forbidden-ranges\s+\(accessctl:index:IpPolicyRuleSet: office\)/;
  expect(refused.output).toMatch(mandatory);
  const line =
    `IpPolicyRuleSet "office" on ${policy}: rule 0.0.0.0/0 allow allows all of IPv4: it makes reachable ` +
    "0.0.0.0/0 except 10.0.0.0/8 (4,278,190,080 addresses)";
  expect(refused.output.split("\n").map((l) => l.trim())).toContain(line);
  const { byMethod } = await emu.stats();
  expect([byMethod.POST, byMethod.PATCH, byMethod.DELETE]).toEqual([undefined, undefined, undefined]);
  // Without the allow of everything (an office range instead): the pack passes it.
  fs.writeFileSync(path.join(p.dir, p.file), p.program.replace("0.0.0.0/0", "203.0.113.0/24"));
  const clean = await stack.run("preview", {}, { args: ["--policy-pack", pack] });
  expect(clean.ok, clean.output).toBe(true);
  expect(clean.output).not.toMatch(/\[mandatory\]/);
}
