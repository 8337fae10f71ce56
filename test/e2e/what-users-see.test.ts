// What a user reads, through the real CLI on a project directory: a 300-rule set's drift as the
// rules that changed, the plan under the set's own resource (once, every change with its old and
// new values), progress of a long operation at the service's pace, errors that name the setting
// the user set, and a provider that sends nothing once its engine is gone. (An API key rotated by
// its triggers and one address as the rule of one host: lifecycle.test.ts; a takeover's preview and
// up: rule-set.test.ts's takeOver test.)
import * as fs from "node:fs";
import { afterEach, describe, expect, inject, it } from "vitest";
import { client, listAll, RunningEmulator, startEmulator } from "../helpers/emulator";
import { alive, descendants, packedPlugin, Spec, testStack } from "../helpers/stack";

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const fast = { "accessctl:maxRequestsPerMinute": { value: "100000" } };
type Rule = { cidr: string; action: string; description?: string };

/** `count` rules 10.{second+⌊i/250⌋}.{i%250}.0/24, allow, described "rule i". */
function many(count: number, second: number): Rule[] {
  return Array.from({ length: count }, (_, i) => ({
    cidr: `10.${second + Math.floor(i / 250)}.${i % 250}.0/24`,
    action: "allow",
    description: `rule ${i}`,
  }));
}

const setSpec = (ipPolicyId: string, rules: Rule[], more: Record<string, unknown> = {}): Spec => ({
  sets: { s: { ipPolicyId, rules, ...more } },
  idsOnly: true,
});

async function policyRules(emu: RunningEmulator, ipPolicyId: string) {
  return (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).filter(
    (r) => r.ip_policy.id === ipPolicyId,
  );
}

async function writes(emu: RunningEmulator) {
  const m = (await emu.stats()).byMethod;
  return (m["POST 2xx"] ?? 0) + (m["PATCH 2xx"] ?? 0) + (m["DELETE 2xx"] ?? 0);
}

async function until(condition: () => Promise<boolean> | boolean, what: string, seconds = 120) {
  const deadline = Date.now() + seconds * 1000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The lines of a Diagnostics section under one resource's header (`…IpPolicyRuleSet (s):`). */
function diagnosticsOf(output: string, header: RegExp): string[] {
  const lines = output.split("\n");
  const start = lines.findIndex((l) => header.test(l));
  if (start < 0) return [];
  const out: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith("    ")) break;
    out.push(line.trim());
  }
  return out;
}

describe("a set's drift and plans read as the rules that changed", () => {
  it("300 rules, one added and one description changed by hand: a handful of lines in preview --refresh --diff, the plan once under the set; reordering and respelling make no diff; the same drift through the plugin prints no more", async () => {
    const { home } = packedPlugin(cleanups);
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({
      project: inject("e2e"),
      emulator: emu,
      name: "see-drift",
      extraConfig: fast,
      env: home.env,
    });
    cleanups.push(() => stack.cleanup());
    const p = emu.fixtures.ipPolicies[0];
    const rules: Rule[] = [
      ...many(297, 20),
      { cidr: "2001:DB8:AB::/48", action: "deny" },
      { cidr: "198.51.100.7", action: "deny", description: "one host" },
      { cidr: "::ffff:192.0.2.0/120", action: "allow" },
    ];
    await stack.ok("up", setSpec(p, rules));
    const respelled = [...rules].reverse().map((r) => ({
      ...r,
      cidr:
        r.cidr === "2001:DB8:AB::/48"
          ? "2001:db8:ab:0::/48"
          : r.cidr === "198.51.100.7"
            ? "198.51.100.7/32"
            : r.cidr === "::ffff:192.0.2.0/120"
              ? "192.0.2.0/24"
              : r.cidr,
    }));
    expect(
      (await stack.ok("preview", setSpec(p, respelled), { refresh: true, expectNoChanges: true })).changeSummary,
    ).toEqual({ same: 2 });

    const api = client(emu.url, emu.adminToken);
    expect(
      (
        await api.post("/ip_policy_rules", {
          ip_policy_id: p,
          cidr: "0.0.0.0/0",
          action: "allow",
          description: "in a hurry",
        })
      ).status,
    ).toBe(201);
    const edited = (await policyRules(emu, p)).find((r) => r.cidr === "10.20.5.0/24");
    expect((await api.patch(`/ip_policy_rules/${edited.id}`, { description: "by hand" })).status).toBe(200);

    const gate = await stack.run("preview", setSpec(p, rules), { refresh: true, expectNoChanges: true });
    expect(gate.ok).toBe(false);
    const shown = gate.output.trim().split("\n");
    expect(shown.length, gate.output).toBeLessThan(45); // 3,953 lines when the rules were a sorted list
    expect(gate.output).toMatch(/plan for ipp_\w+: update 1, delete 1: 2 requests/);
    expect(gate.output).toContain('~ 10.20.5.0/24: description "by hand" → "rule 5"');
    expect(gate.output).toMatch(/- 0\.0\.0\.0\/0 allow \(ipr_\w+\), description "in a hurry"/);
    expect(gate.output.match(/plan for /g)).toHaveLength(1); // not again for the refresh's own diff
    // What the hand change opened, and what the plan closes again: all of IPv4 but the set's allows and its deny, exactly.
    const exposure = `0\\.0\\.0\\.0/0 except 10\\.20\\.0\\.0/17, .* and 5 more CIDRs \\(4,294,891,007 addresses\\)`;
    expect(gate.output).toMatch(
      new RegExp(`access of ipp_\\w+, changed since the state last recorded it: opens ${exposure}`),
    );
    expect(gate.output).toMatch(
      new RegExp(
        `plan for ipp_\\w+: update 1, delete 1: 2 requests\n(.*\n){2}\\s*access of ipp_\\w+: closes ${exposure}`,
      ),
    );

    // Without --diff: the plan in Diagnostics under the set's own resource, once.
    const summary = await stack.run("preview", setSpec(p, rules), { refresh: true, diff: false });
    const underSet = diagnosticsOf(summary.output, /^ {2}pulumi-nodejs:dynamic\/accessctl:IpPolicyRuleSet \(s\):$/);
    // First what the refresh found (a short first line, which the rows repeat, then a line per rule); then the plan.
    expect(underSet.slice(0, 4), summary.output).toEqual([
      expect.stringMatching(
        /^refresh of the IpPolicyRuleSet of ipp_\w+: rules changed since the state last recorded the policy: 1 added, 1 changed$/,
      ),
      expect.stringMatching(/^added 0\.0\.0\.0\/0 allow \(ipr_\w+\), description "in a hurry"$/),
      expect.stringMatching(/^changed 10\.20\.5\.0\/24 allow \(ipr_\w+\): description "rule 5" → "by hand"$/),
      expect.stringMatching(
        /^access of ipp_\w+, changed since the state last recorded it: opens 0\.0\.0\.0\/0 except .*\(4,294,891,007 addresses\)$/,
      ),
    ]);
    expect(underSet[4], summary.output).toMatch(/^plan for ipp_\w+: update 1, delete 1: 2 requests$/);
    expect(underSet.filter((l) => l.startsWith("plan for"))).toHaveLength(1);
    expect(summary.output).toMatch(
      /IpPolicyRuleSet s update \[diff: ~rules\]; plan for ipp_\w+: update 1, delete 1: 2 requests/,
    ); // its row says it too
    expect(underSet).toContain('~ 10.20.5.0/24: description "by hand" → "rule 5"');
    expect(diagnosticsOf(summary.output, /^ {2}pulumi:pulumi:Stack/).join("\n")).not.toContain("plan for");

    // The same drift through the plugin: the stack moves to it by its import line (nothing read or
    // written: the state still records the policy as before the drift).
    const onPlugin = { ...setSpec(p, rules), plugin: true };
    await stack.ok("up", onPlugin);
    const pluginGate = await stack.run("preview", onPlugin, { refresh: true, expectNoChanges: true });
    expect(pluginGate.ok).toBe(false);
    // Pulumi names a provider of a given version (`[provider=…default_0_1_0…]`) under each resource; the dynamic one's is elided.
    const lines = (output: string) =>
      output
        .trim()
        .split("\n")
        .filter((l) => !/^\s+\[provider=/.test(l));
    expect(lines(pluginGate.output).length, pluginGate.output).toBeLessThanOrEqual(shown.length); // every rule, as it was, when the plugin sent a detailed diff Pulumi hid whole
    expect(pluginGate.output).toMatch(
      /plan for ipp_\w+: update 1, delete 1: 2 requests\n\s+~ 10\.20\.5\.0\/24: description "by hand" → "rule 5"\n\s+- 0\.0\.0\.0\/0 allow \(ipr_\w+\), description "in a hurry"/,
    );
    expect(pluginGate.output.match(/^\s+~ rules \(hidden\)$/gm)).toHaveLength(2); // the refresh, and the update
    expect(pluginGate.output).not.toMatch(/^\s+(cidr|action)\s*:/m);
    expect(pluginGate.output).toMatch(
      new RegExp(`access of ipp_\\w+, changed since the state last recorded it: opens ${exposure}`),
    );
    // Without --diff: the plan once, on the update's row (not on the refresh's); the rows repeat only the refresh's first line.
    const pluginSummary = await stack.run("preview", onPlugin, { refresh: true, diff: false });
    const rows = pluginSummary.output.slice(0, pluginSummary.output.indexOf("Diagnostics:")).split("\n");
    expect(
      rows.filter((l) => l.includes("plan for")),
      pluginSummary.output,
    ).toEqual([
      expect.stringMatching(
        /IpPolicyRuleSet s update \[diff: ~rules\]; plan for ipp_\w+: update 1, delete 1: 2 requests$/,
      ),
    ]);
    expect(
      rows
        .filter((l) => l.includes("refresh of the"))
        .every((l) => l.endsWith("rules changed since the state last recorded the policy: 1 added, 1 changed")),
      pluginSummary.output,
    ).toBe(true);

    await stack.ok("up", onPlugin, { refresh: true });
    expect((await policyRules(emu, p)).length).toBe(300);
    // A change's preview: an IPv6 allow around the set's IPv6 deny opens, an allow turned deny closes, exactly.
    const changed = [{ ...rules[0], action: "deny" }, ...rules.slice(1), { cidr: "2001:db8::/32", action: "allow" }];
    const change = await stack.ok("preview", { ...setSpec(p, changed), plugin: true });
    expect(change.output).toMatch(
      /access of ipp_\w+: opens 2001:db8::\/32 except 2001:db8:ab::\/48 \(79,226,953,588,444,722,964,369,244,160 addresses\); closes 10\.20\.0\.0\/24 \(256 addresses\)/,
    );
    await stack.ok("destroy", onPlugin);
  });

  it("a long set operation at the service's pace says how far it has got while it runs", async () => {
    // The service allows 20 requests in any 4 s: the first creates go at once, then its 429s cut our pace
    // (counted in the service's minute) and the rest wait: progress lines every 2 s, some of them waiting.
    // 30 rules show all of it (60 took 1.4 times as long: 154 s against 108 s on a loaded machine).
    const emu = await startEmulator(["--rate-limit", "20/4"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "see-progress", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const p = emu.fixtures.ipPolicies[0];
    const up = await stack.ok("up", setSpec(p, many(30, 60)));
    const progress = up.output
      .split("\n")
      .filter((l) => /IpPolicyRuleSet s creating \(\d+s\) created \d+ of 30/.test(l));
    expect(progress.length, up.output).toBeGreaterThan(1);
    expect(up.output).toMatch(/created \d+ of 30; waiting for the service's rate limit/);
    expect(up.output).toMatch(/IpPolicyRuleSet s created \(\d+s\) created 30 of 30/);
    // No destroy: 30 deletes at this pace take as long again, and the emulator goes with the test.
  });
});

describe("errors name what the user set", () => {
  it("ACCESSCTL_API_URL when the URL came from the environment, accessctl:apiUrl from config; a wrong path names the full path sent", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    cleanups.push(() => emu.stop());
    const p = emu.fixtures.ipPolicies[0];
    const spec: Spec = { rules: { r: { ipPolicyId: p, cidr: "10.1.0.0/16", action: "allow" } } };
    const env = testStack({ project: inject("e2e"), emulator: emu, name: "see-env-url", credentials: "env" });
    cleanups.push(() => env.cleanup());
    const plain = await env.run("preview", spec, { env: { ACCESSCTL_API_URL: "http://192.0.2.10:8787" } });
    expect(plain.ok).toBe(false);
    expect(plain.output).toContain(
      "ACCESSCTL_API_URL must use https:// (plain http:// is allowed only to loopback addresses), got http://192.0.2.10:8787",
    );
    expect(plain.output).not.toContain("accessctl:apiUrl");
    const refused = await env.run("up", spec, { env: { ACCESSCTL_API_URL: "http://127.0.0.1:9" } });
    expect(refused.ok).toBe(false);
    expect(refused.output).toMatch(
      /ECONNREFUSED: cannot connect \(http:\/\/127\.0\.0\.1:9\).*; is the service up, and is ACCESSCTL_API_URL right\?/,
    );
    const wrongPath = await env.run("up", spec, { env: { ACCESSCTL_API_URL: `${emu.url}/v2` } });
    expect(wrongPath.ok).toBe(false);
    expect(wrongPath.output).toContain("POST /v2/ip_policy_rules was not found");
    expect(wrongPath.output).toContain(
      `the API URL looks wrong: is ACCESSCTL_API_URL (${emu.url}/v2) the API's base URL?`,
    );

    const config = testStack({
      project: inject("e2e"),
      emulator: emu,
      name: "see-config-url",
      extraConfig: { "accessctl:apiUrl": { value: "http://192.0.2.10:8787" } },
    });
    cleanups.push(() => config.cleanup());
    const fromConfig = await config.run("preview", spec);
    expect(fromConfig.output).toContain("accessctl:apiUrl must use https://");
    expect(fromConfig.output).not.toContain("ACCESSCTL_API_URL must");
  });
});

describe("no write reaches the service once the engine is gone", () => {
  it("pulumi killed alone (its plugins left running) in the middle of a 300-rule create: the provider sends nothing more and exits", async () => {
    const emu = await startEmulator(["--rate-limit", "off", "--latency", "200"]);
    cleanups.push(() => emu.stop());
    const stack = testStack({ project: inject("e2e"), emulator: emu, name: "see-engine-gone", extraConfig: fast });
    cleanups.push(() => stack.cleanup());
    const p = emu.fixtures.ipPolicies[0];
    const running = stack.start("up", setSpec(p, many(300, 80)));
    await until(async () => (await writes(emu)) > 40, "40 writes");
    const below = descendants(running.child.pid!);
    const cmdline = (pid: number) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      } catch {
        return "";
      }
    };
    const pulumi = below[0]; // the runner's one child
    const provider = below.find((pid) => cmdline(pid).includes("dynamic-provider"))!;
    expect(cmdline(pulumi).split(" ")[0], below.map((pid) => `${pid} ${cmdline(pid)}`).join("\n")).toMatch(/\/pulumi$/);
    expect(provider).toBeDefined();
    cleanups.push(() => {
      for (const pid of below) if (alive(pid)) process.kill(pid, "SIGKILL"); // whatever is left of the run (the language host, the program)
    });
    const atKill = await writes(emu);
    process.kill(pulumi, "SIGKILL");
    await until(() => !alive(provider), "the provider process to notice and exit", 15);
    await new Promise((r) => setTimeout(r, 1000));
    const after = await writes(emu);
    // Requests already sent (16 at a time) may land; none is started after.
    expect(after - atKill).toBeLessThanOrEqual(16);
    expect(after).toBeLessThan(300);
    await running.done;
  });
});

describe("secrets stay secret in what the set shows", () => {
  for (const plugin of [false, true]) {
    it(`a rule's description made secret by the program: the plan and the state never show it (${plugin ? "the plugin" : "the dynamic provider"})`, async () => {
      const { project, home } = packedPlugin(cleanups);
      const emu = await startEmulator(["--rate-limit", "off"]);
      cleanups.push(() => emu.stop());
      const stack = testStack({
        project,
        emulator: emu,
        name: `see-secret-${plugin}`,
        extraConfig: fast,
        env: home.env,
      });
      cleanups.push(() => stack.cleanup());
      const p = emu.fixtures.ipPolicies[0];
      const spec = (description: string) => ({
        ...setSpec(p, [{ cidr: "10.0.0.0/8", action: "allow", description }]),
        plugin,
        secretTexts: true,
      });
      await stack.ok("up", spec("s3cr3t-first-value"));
      const preview = await stack.ok("preview", spec("s3cr3t-second-value"));
      expect(preview.output).toMatch(
        /plan for ipp_\w+: update 1: 1 request\n\s+~ 10\.0\.0\.0\/8: description \[secret\] → \[secret\]/,
      );
      const up = await stack.ok("up", spec("s3cr3t-second-value"));
      for (const text of [preview.output, up.output, stack.backendText()]) expect(text).not.toMatch(/s3cr3t/);
      const live = await policyRules(emu, p);
      expect(live.map((r) => r.description)).toEqual(["s3cr3t-second-value"]);
      await stack.ok("destroy", spec("s3cr3t-second-value"));
    });
  }
});
