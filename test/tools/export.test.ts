// accessctl-export's program text: whatever the service holds (quotes, backslashes, line breaks,
// `${`, U+2028 in descriptions; one CIDR in two policies), the printed program declares exactly
// those values under valid, unique names. The round trip through `pulumi up` is test/e2e/export.test.ts (both forms).
import { execFile } from "node:child_process";
import * as path from "node:path";
import * as ts from "typescript";
import { describe, expect, it } from "vitest";
import { accessOfPolicy, accessText, parseArgs, programText } from "../../tools/export";

const REPO = path.resolve(__dirname, "../..");
const nasty = [
  'say "hi"',
  "back\\slash\\",
  "line\nbreak\r\n",
  "${process.exit(1)}",
  "`tick`",
  "</script> \u2028 \u2029 é ✓",
  "\\u0041",
  "*/ /*",
];

function rule(id: string, policy: string, cidr: string, action: string, description = "", metadata = "") {
  return {
    id,
    uri: `https://x/ip_policy_rules/${id}`,
    created_at: "2026-11-23T00:00:00Z",
    cidr,
    action,
    description,
    metadata,
    ip_policy: { id: policy, uri: "https://x" },
  } as any;
}

/** Runs the printed program against a stub of the package, returning what it declared. */
function declared(text: string) {
  const { outputText, diagnostics } = ts.transpileModule(text, {
    reportDiagnostics: true,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
  });
  expect(diagnostics ?? []).toEqual([]);
  const calls: { type: string; name: string; args: any }[] = [];
  const stub = {
    IpPolicyRule: class {
      constructor(name: string, args: any) {
        calls.push({ type: "IpPolicyRule", name, args });
      }
    },
    IpPolicyRuleSet: class {
      constructor(name: string, args: any) {
        calls.push({ type: "IpPolicyRuleSet", name, args });
      }
    },
    ApiKey: { get: (name: string, id: string) => calls.push({ type: "ApiKey.get", name, args: id }) },
  };
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the compiled example's require, stubbed
  new Function("require", "exports", outputText)((m: string) => (m === "@accessctl/pulumi" ? stub : require(m)), {});
  return calls;
}

describe("accessctl-export program text", () => {
  const rules = {
    ipp_a: nasty
      .map((d, i) =>
        rule(`ipr_a${i}`, "ipp_a", `10.${i}.0.0/16`, i % 2 ? "deny" : "allow", d, nasty[nasty.length - 1 - i]),
      )
      .concat(rule("ipr_a9", "ipp_a", "2001:db8::/32", "allow")),
    ipp_b: [rule("ipr_b1", "ipp_b", "10.0.0.0/16", "allow", "same CIDR as in ipp_a")],
  };
  const keys = nasty.map((d, i) => ({ id: `ak_${i}`, description: d }) as any);

  it("--rules: one IpPolicyRule per rule with adoptId, every string exactly as stored", () => {
    const calls = declared(programText({ policies: ["ipp_a", "ipp_b"], keys: true, form: "rules" }, rules, keys));
    const ruleCalls = calls.filter((c) => c.type === "IpPolicyRule");
    expect(ruleCalls).toHaveLength(10);
    for (const r of [...rules.ipp_a, ...rules.ipp_b]) {
      const call = ruleCalls.find((c) => c.args.adoptId === r.id)!;
      const want: any = { ipPolicyId: r.ip_policy.id, cidr: r.cidr, action: r.action, adoptId: r.id };
      if (r.description) want.description = r.description;
      if (r.metadata) want.metadata = r.metadata;
      expect(call.args).toEqual(want);
    }
    const names = calls.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(calls.filter((c) => c.type === "ApiKey.get").map((c) => c.args)).toEqual(keys.map((k) => k.id));
  });

  it("default: one IpPolicyRuleSet per policy with takeOver, rules sorted by CIDR", () => {
    const calls = declared(
      programText({ policies: ["ipp_a", "ipp_b", "ipp_empty"], keys: false, form: "set" }, rules, []),
    );
    expect(calls.map((c) => c.type)).toEqual(["IpPolicyRuleSet", "IpPolicyRuleSet", "IpPolicyRuleSet"]);
    const a = calls[0].args;
    expect(a.ipPolicyId).toBe("ipp_a");
    expect(a.takeOver).toBe(true);
    expect(a.rules.map((r: any) => r.cidr)).toEqual([...rules.ipp_a.map((r) => r.cidr)].sort());
    expect(a.rules.find((r: any) => r.cidr === "10.2.0.0/16")).toEqual({
      cidr: "10.2.0.0/16",
      action: "allow",
      description: nasty[2],
      metadata: nasty[5],
    });
    expect(a.rules.find((r: any) => r.cidr === "2001:db8::/32")).toEqual({ cidr: "2001:db8::/32", action: "allow" });
    expect(calls[2].args).toEqual({ ipPolicyId: "ipp_empty", takeOver: true, rules: [] });
  });

  it("refuses bad arguments, naming them", () => {
    expect(() => parseArgs(["--policy", "ipp_a/../x"])).toThrow(/--policy must contain only letters and digits/);
    expect(() => parseArgs(["--policy", "ak_1"])).toThrow(/--policy must be an id starting with ipp_/);
    expect(() => parseArgs(["--policy"])).toThrow(/--policy needs a value/);
    expect(() => parseArgs(["--bogus"])).toThrow(/unknown argument "--bogus"/);
    expect(() => parseArgs([])).toThrow(/nothing to export/);
    expect(parseArgs(["--policy=ipp_a", "--policy", "ipp_a", "--keys", "--rules"])).toEqual({
      policies: ["ipp_a"],
      keys: true,
      form: "rules",
    });
  });

  it("--access [--json]: needs a policy; no program options beside it", () => {
    expect(parseArgs(["--access", "--policy", "ipp_a"])).toEqual({
      policies: ["ipp_a"],
      keys: false,
      form: "set",
      access: "text",
    });
    expect(parseArgs(["--json", "--access", "--policy", "ipp_a"])).toEqual({
      policies: ["ipp_a"],
      keys: false,
      form: "set",
      access: "json",
    });
    expect(() => parseArgs(["--json", "--policy", "ipp_a"])).toThrow(/--json goes with --access/);
    expect(() => parseArgs(["--access"])).toThrow(/--access needs --policy/);
    expect(() => parseArgs(["--access", "--keys", "--policy", "ipp_a"])).toThrow(
      /--keys and --rules do not go with it/,
    );
  });

  it("--access: a policy's effective access as CIDRs with counts, the allows behind each, what each rule lets in or keeps out", () => {
    const policy = accessOfPolicy("ipp_a", [
      rule("ipr_1", "ipp_a", "10.0.0.0/8", "allow"),
      rule("ipr_2", "ipp_a", "10.5.0.0/16", "deny"),
      rule("ipr_3", "ipp_a", "192.0.2.0/24", "deny"),
      rule("ipr_4", "ipp_a", "2001:db8::/32", "allow"),
      rule("ipr_5", "ipp_a", "10.5.1.0/24", "allow"),
      rule("ipr_6", "ipp_a", "10.0.0.0/9", "allow"),
    ]);
    expect(policy.ipv4Addresses).toBe("16711680");
    expect(policy.ipv6Addresses).toBe(String(2n ** 96n));
    expect(policy.cidrs[0]).toEqual({ cidr: "10.0.0.0/14", addresses: "262144", allowedBy: ["ipr_1", "ipr_6"] });
    expect(policy.cidrs.at(-1)).toEqual({ cidr: "2001:db8::/32", addresses: String(2n ** 96n), allowedBy: ["ipr_4"] });
    expect(policy.rules.map((r) => `${r.cidr} ${r.addresses}`)).toEqual([
      "10.0.0.0/8 16711680",
      "10.0.0.0/9 8323072",
      "10.5.0.0/16 65536",
      "10.5.1.0/24 0",
      "192.0.2.0/24 0",
      "2001:db8::/32 79228162514264337593543950336",
    ]);
    const text = accessText([policy]);
    expect(text).toContain(
      "IP policy ipp_a: 6 rules (4 allow, 2 deny)\n  lets in 10.0.0.0/8 except 10.5.0.0/16 (16,711,680 addresses) and 2001:db8::/32 (79,228,162,514,264,337,593,543,950,336 addresses)\n",
    );
    expect(text).toContain("  10.128.0.0/9: 8,388,608 addresses, allowed by ipr_1\n");
    expect(text).toContain("    10.5.0.0/16 deny (ipr_2): keeps out 65,536 addresses\n");
    expect(text).toContain("    10.5.1.0/24 allow (ipr_5): lets in nothing: deny rules cover its whole range\n");
    expect(text).toContain("    192.0.2.0/24 deny (ipr_3): keeps out nothing: no allow rule holds its range\n");
  });

  it("the command refuses plain http to another host and a missing key, before any request", async () => {
    const run = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [path.join(REPO, "dist/tools/export.js"), "--keys"],
          { env: { PATH: process.env.PATH!, ...env } },
          (err, _out, stderr) => resolve({ code: err ? (err as any).code : 0, stderr }),
        );
      });
    const http = await run({ ACCESSCTL_API_URL: "http://api.example.com", ACCESSCTL_API_KEY: "k" });
    expect(http.code).toBe(1);
    expect(http.stderr).toMatch(/ACCESSCTL_API_URL must use https:\/\//);
    const noKey = await run({ ACCESSCTL_API_URL: "https://api.example.com" });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/set ACCESSCTL_API_KEY/);
  });
});
