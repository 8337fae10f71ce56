// Every example is a project a user can `cd` into and `pulumi up`: each one is copied as it is,
// given the packed package, deployed to the emulator with the real CLI, checked for no drift and
// destroyed. The pipeline example's workflow file is not just shown: its `pulumi …` lines run here
// in order, with credentials in the environment as the CI's secret store would give them.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { client, REPO, RunningEmulator, startEmulator } from "../helpers/emulator";
import { testStack } from "../helpers/stack";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { makeProject } = require("../../scripts/pack-project.js");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pulumi } = require("../../scripts/stack.js");

let emu: RunningEmulator;
let root: string;
beforeAll(async () => {
  emu = await startEmulator();
  root = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-examples-"));
});
afterAll(async () => {
  await emu?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

const examples = fs
  .readdirSync(path.join(REPO, "examples"))
  .filter((e) => fs.existsSync(path.join(REPO, "examples", e, "Pulumi.yaml")));

/** A user's copy of examples/<name> with the packed package installed. */
function project(name: string): { dir: string; binDir: string; nodeDir?: string } {
  const e2e = inject("e2e");
  const dir = makeProject(path.join(root, name), {
    name: `accessctl-${name}`,
    tarball: e2e.tarball,
    from: path.join(REPO, "examples", name),
  });
  return { dir, binDir: e2e.binDir, nodeDir: e2e.nodeDir };
}

const ruleCount = async () =>
  (await client(emu.url, emu.adminToken).get("/ip_policy_rules")).body.ip_policy_rules.length;

describe("examples", () => {
  it("has the examples the docs name, each its own project", () => {
    expect(examples.sort()).toEqual(["many-rules", "office-allowlist", "pipeline", "quickstart"]);
  });

  it.each([
    [
      "quickstart",
      () => ({
        ipPolicyId: emu.fixtures.ipPolicies[0],
        edgeId: emu.fixtures.tlsEdges[0],
        certificateAuthorityIds: JSON.stringify(emu.fixtures.certificateAuthorities),
      }),
      7,
    ],
    ["many-rules", () => ({ ipPolicyIds: JSON.stringify(emu.fixtures.ipPolicies), count: "12", apiKeys: "2" }), 15],
  ])("%s: up, no drift, destroy", async (name, config, resources) => {
    const rulesBefore = await ruleCount();
    const extraConfig = Object.fromEntries(Object.entries(config()).map(([k, value]) => [k, { value }]));
    const stack = testStack({ project: project(name), emulator: emu, name: "dev", extraConfig });
    try {
      const up = await stack.ok("up", {});
      expect(up.summary!.resourceChanges).toEqual({ create: resources });
      const gate = await stack.run("preview", {}, { refresh: true, expectNoChanges: true });
      expect(gate.exitCode).toBe(0);
      expect(gate.changeSummary).toEqual({ same: resources });
      expect(gate.output).not.toMatch(/\[diff: /); // a refresh of unchanged objects marks no property
      await stack.ok("destroy");
      expect(await ruleCount()).toBe(rulesBefore);
    } finally {
      stack.cleanup();
    }
  });

  // A rule added by hand to a set's policy failing the gate, named, and deleted by up --refresh:
  // rule-set.test.ts (the same resource, a program of the tests); a pipeline's gate: the pipeline example below.
  it("office-allowlist: up, the rules canonical and no drift, destroy", async () => {
    const policy = emu.fixtures.ipPolicies[1];
    const allow = [
      { cidr: "203.0.113.0/24", description: "Berlin office" },
      { cidr: "2001:DB8:1234::/48", description: "Berlin office, IPv6" },
    ];
    const extraConfig = {
      ipPolicyId: { value: policy },
      allow: { value: JSON.stringify(allow) },
      deny: { value: JSON.stringify(["198.51.100.0/24"]) },
    };
    const stack = testStack({ project: project("office-allowlist"), emulator: emu, name: "dev", extraConfig });
    const api = client(emu.url, emu.adminToken);
    const mine = async () =>
      (await api.get("/ip_policy_rules")).body.ip_policy_rules.filter((r: any) => r.ip_policy.id === policy);
    try {
      const up = await stack.ok("up", {});
      expect(up.summary!.resourceChanges).toEqual({ create: 2 });
      expect(up.outputs!.cidrs.value).toEqual([
        "allow 2001:db8:1234::/48",
        "allow 203.0.113.0/24",
        "deny 198.51.100.0/24",
      ]);
      expect((await mine()).map((r: any) => `${r.action} ${r.cidr}`).sort()).toEqual([
        "allow 2001:db8:1234::/48",
        "allow 203.0.113.0/24",
        "deny 198.51.100.0/24",
      ]);
      const gate = await stack.run("preview", {}, { refresh: true, expectNoChanges: true });
      expect(gate.exitCode, gate.output.slice(-3000)).toBe(0);
      expect(gate.output).not.toMatch(/\[diff: /);
      await stack.ok("destroy");
      expect(await mine()).toEqual([]);
    } finally {
      stack.cleanup();
    }
  });

  it("pipeline: the workflow's deploy and drift commands, as CI runs them", async () => {
    const workflow = fs.readFileSync(path.join(REPO, "examples/pipeline/.github/workflows/access-policy.yml"), "utf8");
    const commands = (job: string) => {
      const section = workflow.split(/^ {2}(?=\w+:$)/m).find((s) => s.startsWith(`${job}:`))!;
      return [...section.matchAll(/^\s+(?:- )?run: (pulumi .*)$/gm)].map((m) => m[1].split(" ").slice(1));
    };
    expect(commands("deploy").at(-1)).toEqual(["up", "--stack", "prod", "--yes", "--refresh", "--non-interactive"]);
    // Secrets go to the pulumi steps only, never to the whole workflow (checkout, npm install scripts).
    expect(workflow.split("\njobs:")[0]).not.toMatch(/secrets\./);
    expect(commands("drift").at(-1)).toEqual([
      "preview",
      "--stack",
      "prod",
      "--refresh",
      "--expect-no-changes",
      "--diff",
      "--non-interactive",
    ]);

    // As a user runs it: the example's package.json as written, which installs the package from the
    // tarball the workflow's pack step puts beside it (nothing from a registry under our name).
    const e2e = inject("e2e");
    const dir = path.join(root, "pipeline");
    fs.cpSync(path.join(REPO, "examples/pipeline"), dir, {
      recursive: true,
      filter: (src) => !/node_modules|\.tgz$/.test(src),
    });
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
    expect(pkg.dependencies["@accessctl/pulumi"]).toBe(`file:${path.basename(e2e.tarball)}`);
    const pack = workflow.split(/^ {2}(?=\w+:$)/m).find((s) => s.startsWith("deploy:"))!;
    expect(pack).toMatch(
      /name: Pack @accessctl\/pulumi\n\s+working-directory: \.\n\s+run: npm ci && npm pack --pack-destination examples\/pipeline\n\s+- run: npm install\n/,
    );
    fs.copyFileSync(e2e.tarball, path.join(dir, path.basename(e2e.tarball))); // what `npm pack --pack-destination` leaves there
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel", "error"], {
      cwd: dir,
      stdio: ["ignore", "inherit", "inherit"],
    });
    const installed = JSON.parse(fs.readFileSync(path.join(dir, "package-lock.json"), "utf8")).packages[
      "node_modules/@accessctl/pulumi"
    ];
    expect(installed.resolved).toBe(`file:${path.basename(e2e.tarball)}`);
    const { binDir, nodeDir } = e2e;
    const policy = emu.fixtures.ipPolicies[1];
    // The example's Pulumi.prod.yaml holds a placeholder policy id: point it at the emulator's.
    const stackFile = path.join(dir, "Pulumi.prod.yaml");
    fs.writeFileSync(stackFile, fs.readFileSync(stackFile, "utf8").replace("ipp_REPLACEWITHYOURS", policy));
    const backend = fs.mkdtempSync(path.join(root, "backend-"));
    // What the workflow's env gives the job: credentials from the secret store, never stack config.
    const job = {
      dir,
      binDir,
      node: nodeDir,
      backend: `file://${backend}`,
      passphrase: "ci-secret",
      env: { ACCESSCTL_API_URL: emu.url, ACCESSCTL_API_KEY: emu.adminToken },
    };
    const runAll = async (name: string) => {
      let last: { code: number; stdout: string; stderr: string } | undefined;
      for (const args of commands(name)) last = await pulumi(job, args, { quiet: true });
      return last!;
    };
    const api = client(emu.url, emu.adminToken);
    const mine = async () =>
      (await api.get("/ip_policy_rules")).body.ip_policy_rules.filter((r: any) => r.ip_policy.id === policy);

    const deploy = await runAll("deploy");
    expect(deploy.code, deploy.stderr + deploy.stdout).toBe(0);
    expect((await mine()).map((r: any) => `${r.action} ${r.cidr}`).sort()).toEqual([
      "allow 2001:db8:1234::/48",
      "allow 203.0.113.0/24",
      "deny 198.51.100.0/24",
    ]);
    expect((await runAll("drift")).code).toBe(0); // nothing changed: the gate passes

    // Someone deletes the deny rule by hand: the scheduled gate fails, the next deploy puts it back.
    const deny = (await mine()).find((r: any) => r.action === "deny");
    await api.delete(`/ip_policy_rules/${deny.id}`);
    const gate = await runAll("drift");
    expect(gate.code).toBe(7); // the CLI's exit code for changes under --expect-no-changes, as the workflow says
    expect(workflow).toMatch(/--expect-no-changes`\n# exits 7 /);
    expect(gate.stdout).toMatch(/deny-198-51-100-0-24/);
    expect((await runAll("deploy")).code).toBe(0);
    expect((await mine()).filter((r: any) => r.action === "deny").map((r: any) => r.cidr)).toEqual(["198.51.100.0/24"]);
    expect((await runAll("drift")).code).toBe(0);

    expect(
      (await pulumi(job, ["destroy", "--stack", "prod", "--yes", "--non-interactive"], { quiet: true })).code,
    ).toBe(0);
    expect(await mine()).toEqual([]);
  });
});
