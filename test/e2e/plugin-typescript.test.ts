// @accessctl/pulumi/plugin: the same classes backed by the plugin pulumi-resource-accessctl, installed
// from the tarball the npm package carries, as users install plugins. A stack deployed with the
// dynamic classes moves to the plugin by its import line: nothing replaced, nothing written, every
// key's token kept, and the next preview --refresh clean.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { client, listAll, startEmulator } from "../helpers/emulator";
import { alive, descendants, interruptWhileWaiting, packedPlugin, Spec, testStack, writes } from "../helpers/stack";

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("@accessctl/pulumi/plugin", () => {
  it("a dynamic stack moves to the plugin by its import line: nothing replaced or written, tokens kept, preview --refresh clean; then drift, up --refresh, the list functions, destroy", async () => {
    const { project, home } = packedPlugin(cleanups);
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({ project, emulator: emu, name: "plugin-ts", env: home.env });
    cleanups.push(() => stack.cleanup());
    const [p, q] = emu.fixtures.ipPolicies;
    const spec: Spec = {
      keys: { ci: { description: "deploys", triggers: ["2026-11"] } },
      rules: { office: { ipPolicyId: p, cidr: "203.0.113.0/24", action: "allow", description: "HQ" } },
      sets: {
        allow: {
          ipPolicyId: q,
          rules: [
            { cidr: "10.0.0.0/8", action: "allow" },
            { cidr: "198.51.100.7", action: "deny", description: "one host" },
          ],
        },
      },
      modules: {
        edge: { edgeId: emu.fixtures.tlsEdges[0], certificateAuthorityIds: [emu.fixtures.certificateAuthorities[0]] },
      },
    };
    const dynamic = await stack.ok("up", spec);
    const token = dynamic.outputs!.token_ci;
    expect(token.secret).toBe(true);
    expect(stack.state().resources.map((r) => r.type)).toContain("pulumi-nodejs:dynamic/accessctl:IpPolicyRuleSet");

    // The import line changes: @accessctl/pulumi → @accessctl/pulumi/plugin.
    const before = await writes(emu);
    const moved = await stack.ok("up", { ...spec, plugin: true, listPolicy: p });
    expect(moved.summary!.resourceChanges).not.toHaveProperty("create");
    expect(moved.summary!.resourceChanges).not.toHaveProperty("delete");
    expect(moved.summary!.resourceChanges).not.toHaveProperty("replace");
    expect(await writes(emu)).toBe(before);
    expect(moved.outputs!.token_ci).toEqual(token);
    expect(moved.outputs!.listedRuleCidrs.value).toEqual(["203.0.113.0/24"]); // the plugin's function
    expect(moved.outputs!.listedKeyDescriptions.value).toContain("deploys");
    const types = stack.state().resources.map((r) => r.type);
    expect(types).toEqual(
      expect.arrayContaining([
        "accessctl:index:ApiKey",
        "accessctl:index:IpPolicyRule",
        "accessctl:index:IpPolicyRuleSet",
        "accessctl:index:TlsEdgeMutualTls",
      ]),
    );
    expect(types.filter((t) => t.startsWith("pulumi-nodejs:dynamic"))).toEqual([]);
    expect(stack.backendText()).not.toContain(token.value);
    expect(
      (await stack.ok("preview", { ...spec, plugin: true }, { refresh: true, expectNoChanges: true })).exitCode,
    ).toBe(0);

    // Drift by hand fails the gate; up --refresh puts it back.
    const api = client(emu.url, emu.adminToken);
    const office = moved.outputs!.rule_office.value.id;
    expect((await api.patch(`/ip_policy_rules/${office}`, { description: "by hand" })).status).toBe(200);
    expect((await api.post("/ip_policy_rules", { ip_policy_id: q, cidr: "0.0.0.0/0", action: "allow" })).status).toBe(
      201,
    );
    const gate = await stack.run("preview", { ...spec, plugin: true }, { refresh: true, expectNoChanges: true });
    expect(gate.ok).toBe(false);
    expect(gate.output).toMatch(/~ description: "by hand" => "HQ"/);
    expect(gate.output).toMatch(/plan for ipp_\w+: delete 1: 1 request\n\s+- 0\.0\.0\.0\/0 allow/);
    await stack.ok("up", { ...spec, plugin: true }, { refresh: true });
    expect((await api.get(`/ip_policy_rules/${office}`)).body.description).toBe("HQ");
    const live = (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).filter(
      (r) => r.ip_policy.id === q,
    );
    expect(live.map((r) => r.cidr).sort()).toEqual(["10.0.0.0/8", "198.51.100.7/32"]);

    await stack.ok("destroy", { ...spec, plugin: true });
    expect(await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).toEqual([]);
  });
});

describe("both hosts in one command (a stack half-way to the plugin)", () => {
  it("rule resources on the dynamic host handed over to a set on the plugin in one up: their deletes leave the rules; a set and a rule on one policy across hosts are refused", async () => {
    const { project, home } = packedPlugin(cleanups);
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({ project, emulator: emu, name: "plugin-handover", env: home.env });
    cleanups.push(() => stack.cleanup());
    const p = emu.fixtures.ipPolicies[0];
    const rules = [
      { cidr: "10.70.0.0/16", action: "deny" },
      { cidr: "10.71.0.0/16", action: "allow" },
    ];
    const before = await stack.ok("up", {
      rules: { r1: { ipPolicyId: p, ...rules[0] }, r2: { ipPolicyId: p, ...rules[1] } },
    });
    const ids = [before.outputs!.rule_r1.value.id, before.outputs!.rule_r2.value.id].sort();
    const live = async () =>
      (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules"))
        .filter((r) => r.ip_policy.id === p)
        .map((r) => r.id)
        .sort();

    const both = await stack.run("preview", {
      sets: { s: { ipPolicyId: p, rules, takeOver: true } },
      rules: { r3: { ipPolicyId: p, cidr: "10.72.0.0/16", action: "allow" } },
      pluginFor: ["s"],
    });
    expect(both.ok).toBe(false);
    expect(both.output).toMatch(/also manages a rule of IP policy ipp_\w+|is owned by the IpPolicyRuleSet s/);

    const handed = await stack.ok("up", {
      sets: { s: { ipPolicyId: p, rules, takeOver: true } },
      pluginFor: ["s"],
      idsOnly: true,
    });
    expect(handed.output).toContain("left in place: the IpPolicyRuleSet of");
    expect(await live()).toEqual(ids);
    const clean = await stack.run(
      "preview",
      { sets: { s: { ipPolicyId: p, rules, takeOver: true } }, pluginFor: ["s"], idsOnly: true },
      { refresh: true, expectNoChanges: true },
    );
    expect(clean.exitCode, clean.output).toBe(0);
    await stack.ok("destroy", { sets: { s: { ipPolicyId: p, rules } }, pluginFor: ["s"], idsOnly: true });
    expect(await live()).toEqual([]);
  });
});

describe("the plugin, cancelled or left without its engine", () => {
  it("Ctrl-C (SIGINT to pulumi) in the middle of a 300-rule set create: the plugin starts no more requests and the state records the rules that exist; the next up finishes", async () => {
    const { project, home } = packedPlugin(cleanups);
    const emu = await startEmulator(["--rate-limit", "off", "--latency", "200"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({
      project,
      emulator: emu,
      name: "plugin-cancel",
      env: home.env,
      extraConfig: { "accessctl:maxRequestsPerMinute": { value: "100000" } },
    });
    cleanups.push(() => stack.cleanup());
    const p = emu.fixtures.ipPolicies[0];
    const rules = Array.from({ length: 300 }, (_, i) => ({
      cidr: `10.${90 + Math.floor(i / 250)}.${i % 250}.0/24`,
      action: "allow",
    }));
    const spec: Spec = { sets: { s: { ipPolicyId: p, rules } }, plugin: true, idsOnly: true };
    const running = stack.start("up", spec);
    while ((await writes(emu)) < 40) await new Promise((r) => setTimeout(r, 50));
    const pulumiPid = descendants(running.child.pid!)[0];
    process.kill(pulumiPid, "SIGINT");
    const cancelled = await running.done;
    expect(cancelled.ok).toBe(false);
    const made = await writes(emu);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await writes(emu)).toBe(made); // nothing after the run ended
    expect(made).toBeLessThan(300);
    const recorded = stack.state().resources.find((r) => r.type === "accessctl:index:IpPolicyRuleSet");
    const live = (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).filter(
      (r) => r.ip_policy.id === p,
    );
    expect(
      Object.values(recorded.outputs.rules)
        .map((r: any) => r.id)
        .sort(),
    ).toEqual(live.map((r) => r.id).sort());
    await stack.ok("up", spec);
    expect(
      (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).filter(
        (r) => r.ip_policy.id === p,
      ).length,
    ).toBe(300);
    await stack.ok("destroy", spec);
  });

  it.each(["terminal", "ci"] as const)(
    "Ctrl-C (%s) while the set waits in the rate limiter (60 rules at 40 requests a minute): pulumi ends within 5 s, the state records what exists, preview --refresh shows the rest to create",
    async (how) => {
      const { project, home } = packedPlugin(cleanups);
      const emu = await startEmulator(["--rate-limit", "off"]);
      cleanups.push(() => emu.stop());
      const stack = testStack({
        project,
        emulator: emu,
        name: `plugin-cancel-wait-${how}`,
        env: home.env,
        extraConfig: { "accessctl:maxRequestsPerMinute": { value: "40" } },
      });
      cleanups.push(() => stack.cleanup());
      const p = emu.fixtures.ipPolicies[0];
      const rules = Array.from({ length: 60 }, (_, i) => ({ cidr: `10.80.${i}.0/24`, action: "allow" }));
      const spec: Spec = { sets: { s: { ipPolicyId: p, rules } }, plugin: true, idsOnly: true };
      const running = stack.start("up", spec);
      // 40 requests go in the first minute (a page of the list, creates); then every create waits.
      const { before, cancelled, tookMs } = await interruptWhileWaiting(emu, running, how);
      expect(cancelled.ok).toBe(false);
      expect(tookMs).toBeLessThan(5_000); // was 52 and 58 s: the wait for the next minute
      expect(cancelled.output).toMatch(/not sent: the operation was cancelled/);
      const made = await writes(emu);
      expect(made).toBe(before); // nothing after the Ctrl-C
      expect(made).toBeLessThan(60);
      const recorded = stack.state().resources.find((r) => r.type === "accessctl:index:IpPolicyRuleSet");
      const live = (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).filter(
        (r) => r.ip_policy.id === p,
      );
      expect(
        Object.values(recorded.outputs.rules)
          .map((r: any) => r.id)
          .sort(),
      ).toEqual(live.map((r) => r.id).sort());
      const preview = await stack.ok("preview", spec, { refresh: true });
      expect(preview.output).toContain(`create ${60 - made}: ${60 - made} requests`);
      await stack.ok("destroy", spec);
    },
    240_000,
  );

  it("pulumi killed alone (the plugin left running, in a process group of its own): the plugin sends nothing more and exits", async () => {
    const { project, home } = packedPlugin(cleanups);
    const emu = await startEmulator(["--rate-limit", "off", "--latency", "200"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({
      project,
      emulator: emu,
      name: "plugin-orphan",
      env: home.env,
      extraConfig: { "accessctl:maxRequestsPerMinute": { value: "100000" } },
    });
    cleanups.push(() => stack.cleanup());
    const p = emu.fixtures.ipPolicies[1];
    const rules = Array.from({ length: 300 }, (_, i) => ({
      cidr: `10.${100 + Math.floor(i / 250)}.${i % 250}.0/24`,
      action: "allow",
    }));
    const running = stack.start("up", { sets: { s: { ipPolicyId: p, rules } }, plugin: true, idsOnly: true });
    while ((await writes(emu)) < 40) await new Promise((r) => setTimeout(r, 50));
    const below = descendants(running.child.pid!);
    const cmdline = (pid: number) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
      } catch {
        return "";
      }
    };
    const plugin = below.find((pid) => cmdline(pid).includes("pulumi-resource-accessctl.js"))!;
    expect(plugin, below.map((pid) => cmdline(pid)).join("\n")).toBeDefined();
    cleanups.push(() => {
      for (const pid of below) if (alive(pid)) process.kill(pid, "SIGKILL");
    });
    const atKill = await writes(emu);
    process.kill(below[0], "SIGKILL"); // pulumi, the runner's one child
    const deadline = Date.now() + 15_000;
    while (alive(plugin) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(alive(plugin)).toBe(false);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await writes(emu)) - atKill).toBeLessThanOrEqual(16); // requests already sent may land; none started after
    await running.done;
  });

  it("an engine gone before it calls Configure (pulumi killed at start-up): the plugin exits all the same", async () => {
    const { home } = packedPlugin(cleanups);
    const bin = path.join(home.env.PULUMI_HOME, "plugins", "resource-accessctl-v0.1.0", "pulumi-resource-accessctl");
    // A stand-in for the engine: starts the plugin as Pulumi does (the engine's address as its argument),
    // reads the port it serves on, says the plugin's pid, and ends without a word more.
    const engine = spawn(
      process.execPath,
      [
        "-e",
        `
      const { spawn } = require("node:child_process");
      const plugin = spawn(${JSON.stringify(bin)}, ["127.0.0.1:9"], { detached: true, stdio: ["ignore", "pipe", "ignore"] });
      plugin.stdout.once("data", () => { console.log(plugin.pid); process.exit(0); });
    `,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const said = await new Promise<string>((resolve) => {
      let out = "";
      engine.stdout!.on("data", (d) => (out += d));
      engine.on("exit", () => resolve(out));
    });
    const plugin = Number(said.trim());
    expect(plugin).toBeGreaterThan(0);
    cleanups.push(() => {
      if (alive(plugin)) process.kill(plugin, "SIGKILL");
    });
    const deadline = Date.now() + 15_000;
    while (alive(plugin) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(alive(plugin)).toBe(false);
  });
});
