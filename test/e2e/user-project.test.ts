// The path users take: a TypeScript project (Pulumi.yaml, index.ts, tsconfig.json) with their own
// @pulumi/pulumi, the newest the registry has and the oldest our peer range claims, our package
// installed from `npm pack`, and the real `pulumi` CLI and language host: config with --secret,
// up, preview --diff, the pipeline drift gate (preview --refresh --expect-no-changes), refresh,
// stack outputs, destroy. Each project must end up with exactly one copy of @pulumi/pulumi.
// On the Node.js of the PATH (22 in CI), and the newest @pulumi/pulumi again on Node.js 24: the
// program, its TypeScript, the serialized providers and the dynamic-provider host all run on it
// (the `node` that stack.js puts first on the PATH of pulumi and its plugins).
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
const { nodeBinDir } = require("../../scripts/node-bin.js");

const peerRange: string = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")).peerDependencies[
  "@pulumi/pulumi"
];
const oldest = /^>=(\d+\.\d+\.\d+) <4$/.exec(peerRange)![1];
const newest = execFileSync("npm", ["view", "@pulumi/pulumi", "version"], { encoding: "utf8" }).trim();

let emu: RunningEmulator;
let root: string;
beforeAll(async () => {
  emu = await startEmulator();
  root = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-user-"));
});
afterAll(async () => {
  await emu?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

const pathNode = process.versions.node.split(".")[0];
describe.each([
  ["newest", newest, pathNode],
  ["oldest supported", oldest, pathNode],
  ["newest", newest, "24"],
])("a TypeScript project with the %s @pulumi/pulumi (%s) on Node.js %s", (_label, version, node) => {
  it("installs one copy of @pulumi/pulumi and runs the whole cycle", async () => {
    const e2e = inject("e2e");
    const nodeDir: string | undefined = node === pathNode ? e2e.nodeDir : nodeBinDir(node);
    const dir = makeProject(path.join(root, `v${version}-node${node}`), {
      name: "accessctl-user",
      tarball: e2e.tarball,
      files: { "index.ts": path.join(__dirname, "user-project/index.ts") },
      main: "index.ts",
      pulumiVersion: version,
    });
    const copies = execFileSync("npm", ["ls", "@pulumi/pulumi", "--all", "--parseable"], { cwd: dir, encoding: "utf8" })
      .trim()
      .split("\n");
    expect(copies).toEqual([path.join(fs.realpathSync(dir), "node_modules/@pulumi/pulumi")]);
    expect(
      JSON.parse(fs.readFileSync(path.join(dir, "node_modules/@pulumi/pulumi/package.json"), "utf8")).version,
    ).toBe(version);

    const settings = {
      ipPolicyId: { value: emu.fixtures.ipPolicies[0] },
      partnersPolicyId: { value: emu.fixtures.ipPolicies[1] },
      edgeId: { value: emu.fixtures.tlsEdges[0] },
      certificateAuthorityIds: { value: JSON.stringify([emu.fixtures.certificateAuthorities[0]]) },
      officeDescription: { value: "office" }, // config is kept between runs: every run sets it
    };
    const stack = testStack({
      project: { dir, binDir: e2e.binDir, nodeDir },
      emulator: emu,
      name: "dev",
      extraConfig: settings,
    });
    const api = client(emu.url, emu.adminToken);
    try {
      const up = await stack.ok("up", {});
      expect(up.summary!.resourceChanges).toEqual({ create: 5 });
      // `pulumi config set --secret`: the stack file holds the key encrypted, never in plain text.
      const stackFile = fs.readFileSync(path.join(dir, "Pulumi.dev.yaml"), "utf8");
      expect(stackFile).toMatch(/accessctl:apiKey:\s+secure: /);
      expect(stackFile).not.toContain(emu.adminToken);
      expect(up.outputs!.deployerToken.secret).toBe(true);
      expect(up.outputs!.officeCidr).toEqual({ value: "192.0.2.0/24", secret: false });
      expect(up.outputs!.authorities.value).toEqual([emu.fixtures.certificateAuthorities[0]]);
      expect(up.outputs!.partnerCidrs.value).toEqual(["198.51.100.0/24", "2001:db8:1::/48"]);
      const officeId = up.outputs!.officeId.value;
      expect(up.outputs!.nodeVersion.value.split(".")[0]).toBe(node);
      // Each provider is serialized as a small require of the installed package, not a copy of it.
      const ours = stack.state().resources.filter((r: any) => r.type.startsWith("pulumi-nodejs:dynamic/accessctl:"));
      expect(ours).toHaveLength(4);
      for (const r of ours) {
        expect(r.inputs.__provider).toMatch(/require\("@accessctl\/pulumi\/dist\/provider\/bounded\/[a-z-]+\.js"\)/);
        expect(r.inputs.__provider.length).toBeLessThan(2000);
      }

      // The drift gate of a pipeline passes when nothing changed.
      const clean = await stack.run("preview", {}, { refresh: true, expectNoChanges: true });
      expect(clean.exitCode, clean.output.slice(-3000)).toBe(0);

      // A change in the program shows as an update of that property in `preview --diff`.
      const diff = await stack.run(
        "preview",
        {},
        { moreConfig: { officeDescription: { value: "office, 2nd floor" } } },
      );
      expect(diff.changeSummary).toEqual({ same: 4, update: 1 });
      expect(diff.output).toContain("~ pulumi-nodejs:dynamic/accessctl:IpPolicyRule: (update)");
      expect(diff.output).toMatch(/~ description: "office" => "office, 2nd floor"/);

      // Changed by hand: the gate fails (exit code), `refresh` takes the change in, `up` puts it back.
      await api.patch(`/ip_policy_rules/${officeId}`, { description: "changed by hand" });
      const drifted = await stack.run("preview", {}, { refresh: true, expectNoChanges: true });
      expect(drifted.exitCode).not.toBe(0);
      expect(drifted.changeSummary).toMatchObject({ update: 1 });
      expect((await stack.ok("refresh", {})).summary!.resourceChanges).toMatchObject({ update: 1 });
      expect((await stack.ok("up", {})).summary!.resourceChanges).toMatchObject({ update: 1 });
      expect((await api.get(`/ip_policy_rules/${officeId}`)).body.description).toBe("office");
      expect((await stack.run("preview", {}, { refresh: true, expectNoChanges: true })).exitCode).toBe(0);

      expect((await stack.ok("outputs")).outputs!.officeId.value).toBe(officeId);
      await stack.ok("destroy");
      expect((await api.get(`/ip_policy_rules/${officeId}`)).status).toBe(404);
      expect((await api.get("/ip_policy_rules")).body.ip_policy_rules).toEqual([]);
    } finally {
      stack.cleanup();
    }
  });
});
