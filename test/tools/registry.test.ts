// The registry of resources and functions (provider/resources.ts) that the plugin, the classes of
// both hosts, the schema and the reference follow: each entry's module is the compiled provider
// module, the plugin serves exactly the registry's tokens, the classes name exactly its outputs,
// and importing it (or the plugin SDK, which uses it) loads no provider code. (The size of functions:
// test/tools/function-length.test.ts.)
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { compiled } from "../helpers/provider";

const REPO = path.resolve(__dirname, "../..");
const { RESOURCES, FUNCTIONS } = compiled("provider/resources.js");
const server = compiled("plugin/server.js");
const PROVIDER_MODULES = ["api-key", "ip-policy-rule", "ip-policy-rule-set", "tls-edge-mutual-tls"];

describe("the registry of resources", () => {
  it("gives each resource its type token, dynamic type and compiled provider module; each function its module", () => {
    expect(Object.keys(RESOURCES).sort()).toEqual(["ApiKey", "IpPolicyRule", "IpPolicyRuleSet", "TlsEdgeMutualTls"]);
    const modules = PROVIDER_MODULES.map((m) => compiled(`provider/${m}.js`));
    for (const [name, entry] of Object.entries<any>(RESOURCES)) {
      expect(entry.name).toBe(name);
      expect(entry.token).toBe(`accessctl:index:${name}`);
      expect(entry.dynamicType).toBe(`pulumi-nodejs:dynamic/accessctl:${name}`);
      expect(modules).toContain(entry.load());
      for (const fn of ["check", "diff", "create", "read", "update", "delete"])
        expect(typeof entry.load()[fn], `${name}.${fn}`).toBe("function");
      for (const key of Object.keys(entry.example.exports))
        expect([...entry.outputs, "id"], `${name}'s example exports ${key}`).toContain(entry.example.exports[key]);
    }
    for (const [name, entry] of Object.entries<any>(FUNCTIONS)) {
      expect(entry.token).toBe(`accessctl:index:${name}`);
      expect(typeof entry.load()[name], name).toBe("function");
    }
  });

  it("is what the plugin serves: one module per type token, one function per token", () => {
    expect(Object.keys(server.RESOURCES).sort()).toEqual(
      Object.values<any>(RESOURCES)
        .map((r) => r.token)
        .sort(),
    );
    expect(Object.keys(server.FUNCTIONS).sort()).toEqual(
      Object.values<any>(FUNCTIONS)
        .map((f) => f.token)
        .sort(),
    );
  });

  it("and the plugin SDK load no provider module when imported", () => {
    for (const entry of ["provider/resources.js", "sdk/plugin.js"]) {
      const loaded = execFileSync(process.execPath, [
        "-e",
        `require(${JSON.stringify(path.join(REPO, "dist", entry))}); console.log(JSON.stringify(Object.keys(require.cache)))`,
      ]).toString();
      const ours = (JSON.parse(loaded) as string[])
        .filter((f) => f.startsWith(path.join(REPO, "dist/provider/")))
        .map((f) => path.basename(f, ".js"));
      expect(
        ours.filter((m) => PROVIDER_MODULES.includes(m)),
        entry,
      ).toEqual([]);
    }
  });
});
