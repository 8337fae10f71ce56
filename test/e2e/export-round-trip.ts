// The round trip of accessctl-export, shared by its tests: rules and keys made through the API
// (descriptions with quotes, backslashes, line breaks, `${`), the package's `accessctl-export` bin
// run from a user's project made from the tarball, its stdout written as that project's index.ts,
// `pulumi up` with the real CLI, and then: the service unchanged (same objects, same fields, no
// write request at the emulator) and `preview --refresh --expect-no-changes` clean. `project` is a
// user's project (exportProject), made once for the forms: each form writes its own index.ts and
// runs a stack of its own.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { expect, inject } from "vitest";
import { client, listAll, RunningEmulator } from "../helpers/emulator";
import { testStack } from "../helpers/stack";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { makeProject } = require("../../scripts/pack-project.js");

const DESCRIPTIONS = ['office "HQ"', "C:\\net\\", "two\nlines", "${HOME} `x`", "café ✓ \u2028"];

/** A user's TypeScript project with the packed package installed (index.ts is written by each round trip). */
export function exportProject(root: string): string {
  return makeProject(path.join(root, "project"), {
    name: "accessctl-export",
    tarball: inject("e2e").tarball,
    main: "index.ts",
  });
}

export async function exportRoundTrip(emu: RunningEmulator, form: "set" | "rules", dir: string) {
  const api = client(emu.url, emu.adminToken);
  const [policy, other] = emu.fixtures.ipPolicies;
  for (const [i, description] of DESCRIPTIONS.entries()) {
    const made = await api.post("/ip_policy_rules", {
      ip_policy_id: policy,
      cidr: `10.${i}.0.0/16`,
      action: i % 2 ? "deny" : "allow",
      description,
      metadata: i === 0 ? '{"team":"net"}' : undefined,
    });
    expect(made.status, made.text).toBe(201);
    expect((await api.post("/api_keys", { description })).status).toBe(201);
  }
  expect(
    (await api.post("/ip_policy_rules", { ip_policy_id: policy, cidr: "2001:db8:1234::/48", action: "allow" })).status,
  ).toBe(201);
  expect(
    (
      await api.post("/ip_policy_rules", {
        ip_policy_id: other,
        cidr: "10.0.0.0/16",
        action: "allow",
        description: "not exported",
      })
    ).status,
  ).toBe(201);

  const e2e = inject("e2e");
  const env = { ACCESSCTL_API_URL: emu.url, ACCESSCTL_API_KEY: emu.adminToken };
  const args = ["--policy", policy, "--keys", ...(form === "rules" ? ["--rules"] : [])];
  const program = await new Promise<string>((resolve, reject) =>
    execFile(
      path.join(dir, "node_modules/.bin/accessctl-export"),
      args,
      { env: { ...process.env, ...env }, timeout: 120_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
    ),
  );
  expect(program).toContain(form === "set" ? "new accessctl.IpPolicyRuleSet(" : "adoptId:");
  if (form === "set") {
    // --access --json: the policy's effective access (its denies lie outside every allow: they keep out nothing).
    const bin = path.join(dir, "node_modules/.bin/accessctl-export");
    const access = await new Promise<string>((resolve, reject) =>
      execFile(
        bin,
        ["--access", "--json", "--policy", policy],
        { env: { ...process.env, ...env }, timeout: 120_000 },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
      ),
    );
    const [shown] = JSON.parse(access).policies;
    expect(shown).toMatchObject({ ipPolicyId: policy, ipv4Addresses: "196608", ipv6Addresses: String(2n ** 80n) });
    expect(shown.cidrs.map((c: any) => c.cidr)).toEqual([
      "10.0.0.0/16",
      "10.2.0.0/16",
      "10.4.0.0/16",
      "2001:db8:1234::/48",
    ]);
    expect(shown.rules.filter((r: any) => r.action === "deny").map((r: any) => r.addresses)).toEqual(["0", "0"]);
  }
  expect(program).not.toContain(emu.adminToken);
  fs.writeFileSync(path.join(dir, "index.ts"), program);

  const rulesBefore = await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules");
  const keysBefore = await listAll(emu.url, emu.adminToken, "/api_keys", "keys");
  const logFrom = emu.stderr().length;
  const stack = testStack({
    project: { dir, binDir: e2e.binDir, nodeDir: e2e.nodeDir },
    emulator: emu,
    credentials: "env",
    name: `adopted-${form}`,
  });
  try {
    await stack.ok("up");
    // Nothing changed on the service: no write request at all, and every object as it was.
    const writes = emu
      .stderr()
      .slice(logFrom)
      .split("\n")
      .filter((line) => /^(POST|PATCH|PUT|DELETE) /.test(line));
    expect(writes).toEqual([]);
    expect(await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).toEqual(rulesBefore);
    expect(await listAll(emu.url, emu.adminToken, "/api_keys", "keys")).toEqual(keysBefore);
    // The stack manages the policy's rules (not the other policy's) and looks the keys up.
    const types = stack.state().resources.map((r: any) => r.type);
    expect(types.filter((t: string) => t.endsWith("accessctl:ApiKey"))).toHaveLength(keysBefore.length);
    if (form === "rules") {
      const ids = stack
        .state()
        .resources.filter((r: any) => r.type.endsWith("accessctl:IpPolicyRule"))
        .map((r: any) => r.id)
        .sort();
      expect(ids).toEqual(
        rulesBefore
          .filter((r: any) => r.ip_policy.id === policy)
          .map((r: any) => r.id)
          .sort(),
      );
    }
    const gate = await stack.run("preview", undefined, { refresh: true, expectNoChanges: true });
    expect(gate.exitCode, gate.output.slice(-3000)).toBe(0);
    expect(Object.keys(gate.changeSummary ?? {})).toEqual(["same"]);
    expect(gate.output).not.toMatch(/\[diff: /);
  } finally {
    stack.cleanup();
  }
}
