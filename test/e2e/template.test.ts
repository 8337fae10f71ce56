// templates/accessctl-typescript as a user starts from it, offline: `pulumi new <dir> --generate-only`
// with the real CLI, the packed package installed over the template's dependency (it is not on a
// registry yet), stack config for each of the template's config prompts, then `pulumi up` against
// the emulator, a clean `preview --refresh --expect-no-changes`, and `destroy`.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { client, REPO, RunningEmulator, startEmulator } from "../helpers/emulator";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { makeProject } = require("../../scripts/pack-project.js");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pulumi } = require("../../scripts/stack.js");

const TEMPLATE = path.join(REPO, "templates/accessctl-typescript");
let emu: RunningEmulator;
const root = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-template-"));
beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
});
afterAll(async () => {
  await emu?.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

it("prompts for every config key its program requires, and the package ships it", () => {
  const yaml = fs.readFileSync(path.join(TEMPLATE, "Pulumi.yaml"), "utf8");
  const prompts = [...yaml.split(/^template:$/m)[1].matchAll(/^ {4}([\w:]+):$/gm)].map((m) => m[1]);
  const required = [
    ...fs
      .readFileSync(path.join(TEMPLATE, "index.ts"), "utf8")
      .matchAll(/config\.require(?:Object<[^>]+>)?\("(\w+)"\)/g),
  ].map((m) => m[1]);
  expect(required.length).toBeGreaterThan(0);
  expect(prompts).toEqual(expect.arrayContaining([...required, "accessctl:apiUrl", "accessctl:apiKey"]));
  expect(yaml).toMatch(/accessctl:apiKey:\n\s+description: .*\n\s+secret: true/);
  expect(JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")).files).toContain("templates");
});

it("pulumi new <template dir> --generate-only, install the tarball, up against the emulator, preview clean, destroy", async () => {
  const { binDir, nodeDir, tarball } = inject("e2e");
  const dir = path.join(root, "my-access");
  const job = {
    dir: root,
    binDir,
    node: nodeDir,
    backend: `file://${path.join(root, "backend")}`,
    passphrase: "template",
  };
  fs.mkdirSync(path.join(root, "backend"));
  const must = async (args: string[], cwd = dir) => {
    const r = await pulumi({ ...job, dir: cwd }, args, { quiet: true });
    expect(r.code, `pulumi ${args.join(" ")}\n${r.stdout}\n${r.stderr}`).toBe(0);
    return r;
  };
  await must(
    ["new", TEMPLATE, "--generate-only", "--yes", "--non-interactive", "--name", "my-access", "--dir", dir],
    root,
  );
  expect(fs.readdirSync(dir).sort()).toEqual(["Pulumi.yaml", "index.ts", "package.json", "tsconfig.json"]);
  const project = fs.readFileSync(path.join(dir, "Pulumi.yaml"), "utf8");
  expect(project).toMatch(/^name: my-access$/m);
  expect(project).not.toMatch(/^template:/m);
  expect(JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).name).toBe("my-access");

  makeProject(dir, { name: "my-access", tarball }); // `npm install <tarball>`, as docs/guides/getting-started.md says
  const f = emu.fixtures;
  await must(["stack", "init", "dev", "--non-interactive"]);
  await must(["config", "set", "ipPolicyId", f.ipPolicies[0]]);
  await must(["config", "set", "edgeId", f.tlsEdges[0]]);
  await must(["config", "set", "certificateAuthorityIds", JSON.stringify(f.certificateAuthorities.slice(0, 1))]);
  await must(["config", "set", "accessctl:apiUrl", emu.url]);
  expect(
    (
      await pulumi({ ...job, dir }, ["config", "set", "--secret", "accessctl:apiKey"], {
        input: emu.adminToken,
        quiet: true,
      })
    ).code,
  ).toBe(0);

  await must(["up", "--yes", "--non-interactive"]);
  const api = client(emu.url, emu.adminToken);
  const rules = (await api.get("/ip_policy_rules")).body.ip_policy_rules;
  expect(rules.map((r: any) => `${r.action} ${r.cidr}`).sort()).toEqual([
    "allow 203.0.113.0/24",
    "deny 198.51.100.0/24",
  ]);
  expect((await api.get(`/edges/tls/${f.tlsEdges[0]}/mutual_tls`)).body).toMatchObject({
    enabled: true,
    certificate_authorities: [{ id: f.certificateAuthorities[0] }],
  });
  await must(["preview", "--refresh", "--diff", "--expect-no-changes", "--non-interactive"]);
  await must(["destroy", "--yes", "--non-interactive"]);
  expect((await api.get("/ip_policy_rules")).body.ip_policy_rules).toEqual([]);
});
