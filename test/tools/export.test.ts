// accessctl-export's program text: whatever the service holds (quotes, backslashes, line breaks,
// `${`, U+2028 in descriptions; one CIDR in two policies), the printed program declares exactly
// those values under valid, unique names. The round trip through `pulumi up` is test/e2e/export.test.ts (both forms).
import { execFile } from "node:child_process";
import * as path from "node:path";
import * as ts from "typescript";
import { describe, expect, it } from "vitest";
import { parseArgs, programText } from "../../tools/export";

const REPO = path.resolve(__dirname, "../..");
const nasty = ['say "hi"', "back\\slash\\", "line\nbreak\r\n", "${process.exit(1)}", "`tick`", "</script> \u2028 \u2029 é ✓", "\\u0041", "*/ /*"];

function rule(id: string, policy: string, cidr: string, action: string, description = "", metadata = "") {
  return { id, uri: `https://x/ip_policy_rules/${id}`, created_at: "2026-11-23T00:00:00Z", cidr, action, description, metadata, ip_policy: { id: policy, uri: "https://x" } } as any;
}

/** Runs the printed program against a stub of the package, returning what it declared. */
function declared(text: string) {
  const { outputText, diagnostics } = ts.transpileModule(text, { reportDiagnostics: true, compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
  expect(diagnostics ?? []).toEqual([]);
  const calls: { type: string; name: string; args: any }[] = [];
  const stub = {
    IpPolicyRule: class { constructor(name: string, args: any) { calls.push({ type: "IpPolicyRule", name, args }); } },
    IpPolicyRuleSet: class { constructor(name: string, args: any) { calls.push({ type: "IpPolicyRuleSet", name, args }); } },
    ApiKey: { get: (name: string, id: string) => calls.push({ type: "ApiKey.get", name, args: id }) },
  };
  new Function("require", "exports", outputText)((m: string) => (m === "@accessctl/pulumi" ? stub : require(m)), {});
  return calls;
}

describe("accessctl-export program text", () => {
  const rules = {
    ipp_a: nasty.map((d, i) => rule(`ipr_a${i}`, "ipp_a", `10.${i}.0.0/16`, i % 2 ? "deny" : "allow", d, nasty[nasty.length - 1 - i])).concat(rule("ipr_a9", "ipp_a", "2001:db8::/32", "allow")),
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
    const calls = declared(programText({ policies: ["ipp_a", "ipp_b", "ipp_empty"], keys: false, form: "set" }, rules, []));
    expect(calls.map((c) => c.type)).toEqual(["IpPolicyRuleSet", "IpPolicyRuleSet", "IpPolicyRuleSet"]);
    const a = calls[0].args;
    expect(a.ipPolicyId).toBe("ipp_a");
    expect(a.takeOver).toBe(true);
    expect(a.rules.map((r: any) => r.cidr)).toEqual([...rules.ipp_a.map((r) => r.cidr)].sort());
    expect(a.rules.find((r: any) => r.cidr === "10.2.0.0/16")).toEqual({ cidr: "10.2.0.0/16", action: "allow", description: nasty[2], metadata: nasty[5] });
    expect(a.rules.find((r: any) => r.cidr === "2001:db8::/32")).toEqual({ cidr: "2001:db8::/32", action: "allow" });
    expect(calls[2].args).toEqual({ ipPolicyId: "ipp_empty", takeOver: true, rules: [] });
  });

  it("refuses bad arguments, naming them", () => {
    expect(() => parseArgs(["--policy", "ipp_a/../x"])).toThrow(/--policy must contain only letters and digits/);
    expect(() => parseArgs(["--policy", "ak_1"])).toThrow(/--policy must be an id starting with ipp_/);
    expect(() => parseArgs(["--policy"])).toThrow(/--policy needs a value/);
    expect(() => parseArgs(["--bogus"])).toThrow(/unknown argument "--bogus"/);
    expect(() => parseArgs([])).toThrow(/nothing to export/);
    expect(parseArgs(["--policy=ipp_a", "--policy", "ipp_a", "--keys", "--rules"])).toEqual({ policies: ["ipp_a"], keys: true, form: "rules" });
  });

  it("the command refuses plain http to another host and a missing key, before any request", async () => {
    const run = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(process.execPath, [path.join(REPO, "dist/tools/export.js"), "--keys"], { env: { PATH: process.env.PATH!, ...env } }, (err, _out, stderr) => resolve({ code: err ? (err as any).code : 0, stderr }));
      });
    const http = await run({ ACCESSCTL_API_URL: "http://api.example.com", ACCESSCTL_API_KEY: "k" });
    expect(http.code).toBe(1);
    expect(http.stderr).toMatch(/ACCESSCTL_API_URL must use https:\/\//);
    const noKey = await run({ ACCESSCTL_API_URL: "https://api.example.com" });
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/set ACCESSCTL_API_KEY/);
  });
});
