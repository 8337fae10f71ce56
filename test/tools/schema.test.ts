// schema/schema.json is what `npm run schema` generates from the provider modules (their input and
// output interfaces, doc comments and FIELDS): regenerated here in memory and compared, so a changed
// input, doc comment or table entry that was not regenerated fails. Also checks what the plugin and
// its users rely on, and that the committed SDKs (sdks/, `npm run sdks`) were made from this schema.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

const REPO = path.resolve(__dirname, "../..");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { text, SCHEMA } = require("../../scripts/schema.js");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { schemaHash } = require("../../scripts/sdks.js");

const generated: string = text();
const schema = JSON.parse(generated);
const T = (name: string) => `accessctl:index:${name}`;
const ref = (name: string) => ({ $ref: `#/types/${T(name)}` });
const RESOURCES = ["ApiKey", "IpPolicyRule", "IpPolicyRuleSet", "TlsEdgeMutualTls"];

describe("Pulumi package schema", () => {
  it("is up to date: `npm run schema` regenerates it", () => {
    expect(fs.readFileSync(SCHEMA, "utf8"), "schema/schema.json: run npm run schema").toBe(generated);
  });

  it("is the package accessctl at the version of package.json", () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8"));
    expect(schema.name).toBe("accessctl");
    expect(schema.version).toBe(pkg.version);
    expect(schema.language.nodejs.dependencies["@pulumi/pulumi"]).toBe(`^${pkg.devDependencies["@pulumi/pulumi"]}`);
    expect(schema.language.python).toMatchObject({ packageName: "pulumi_accessctl", respectSchemaVersion: true });
    expect(schema.language.go).toMatchObject({ respectSchemaVersion: true });
    expect(pkg.scripts.docs).toContain("scripts/schema.js"); // `npm run docs` regenerates the schema too
  });

  it("has the four resources, each with an alias to its dynamic-provider type", () => {
    expect(Object.keys(schema.resources).sort()).toEqual(RESOURCES.map(T).sort());
    for (const name of RESOURCES) {
      expect(schema.resources[T(name)].aliases).toEqual([{ type: `pulumi-nodejs:dynamic/accessctl:${name}` }]);
      expect(schema.resources[T(name)].description, name).toBeTruthy();
    }
  });

  it("marks as secret exactly the key's token and the provider's apiKey, planKey, teamKey and profiles", () => {
    const secrets: string[] = [];
    const walk = (where: string, properties: Record<string, { secret?: boolean }> = {}) => {
      for (const [name, p] of Object.entries(properties)) if (p.secret) secrets.push(`${where}.${name}`);
    };
    walk("config", schema.config.variables);
    walk("provider", schema.provider.inputProperties);
    for (const [token, r] of Object.entries<any>(schema.resources)) {
      walk(`${token}.in`, r.inputProperties);
      walk(`${token}.out`, r.properties);
    }
    for (const [token, t] of Object.entries<any>(schema.types)) walk(token, t.properties);
    expect(secrets.sort()).toEqual(
      [
        "config.apiKey",
        "config.planKey",
        "config.profiles",
        "config.teamKey",
        "provider.apiKey",
        "provider.planKey",
        "provider.profiles",
        "provider.teamKey",
        `${T("ApiKey")}.out.token`,
        `${T("AccountProfile")}.apiKey`, // a profile's key, inside the secret profiles
      ].sort(),
    );
  });

  it("says willReplaceOnChanges on exactly the inputs whose change replaces the object", () => {
    const replacing = Object.entries<any>(schema.resources).flatMap(([token, r]) =>
      Object.entries<any>(r.inputProperties)
        .filter(([, p]) => p.willReplaceOnChanges)
        .map(([name]) => `${token.split(":")[2]}.${name}`),
    );
    expect(replacing.sort()).toEqual(
      [
        "ApiKey.ownerId",
        "ApiKey.triggers",
        "ApiKey.profile",
        "IpPolicyRule.action",
        "IpPolicyRule.ipPolicyId",
        "IpPolicyRule.profile",
        "IpPolicyRuleSet.ipPolicyId",
        "IpPolicyRuleSet.profile",
        "TlsEdgeMutualTls.edgeId",
        "TlsEdgeMutualTls.profile",
      ].sort(),
    );
    // No property of a nested type replaces the resource (a rule's action replaces that rule only).
    for (const t of Object.values<any>(schema.types))
      for (const p of Object.values<any>(t.properties)) expect(p.willReplaceOnChanges).toBeUndefined();
  });

  it("takes the rule set's rules as a list and gives them back as a map keyed by CIDR", () => {
    const set = schema.resources[T("IpPolicyRuleSet")];
    expect(set.inputProperties.rules).toMatchObject({ type: "array", items: ref("IpPolicyRuleSetRule") });
    expect(set.properties.rules).toMatchObject({ type: "object", additionalProperties: ref("IpPolicyRuleSetMember") });
    expect(set.requiredInputs).toEqual(["ipPolicyId", "rules"]);
    expect(set.inputProperties.rules.language.accessctl).toEqual({
      onChange: "update",
      note: "one request per changed rule",
    });
    const rule = schema.types[T("IpPolicyRuleSetRule")];
    expect(Object.keys(rule.properties)).toEqual(["cidr", "action", "description", "metadata"]);
    expect(rule.required).toEqual(["cidr", "action"]);
    // A preview's map holds the declared rules ({cidr, action, description?, metadata?}): only those two are always there.
    const member = schema.types[T("IpPolicyRuleSetMember")];
    expect(Object.keys(member.properties).sort()).toEqual([
      "action",
      "cidr",
      "createdAt",
      "description",
      "id",
      "metadata",
      "uri",
    ]);
    expect(member.required).toEqual(["cidr", "action"]);
  });

  it("has the inputs and outputs of each resource, camelCase as in the TypeScript SDK", () => {
    const key = schema.resources[T("ApiKey")];
    expect(Object.keys(key.inputProperties).sort()).toEqual([
      "adoptId",
      "description",
      "metadata",
      "ownerId",
      "profile",
      "triggers",
    ]);
    expect(key.inputProperties.triggers).toMatchObject({ type: "array", items: { $ref: "pulumi.json#/Any" } });
    expect(key.required.sort()).toEqual(["createdAt", "description", "metadata", "ownerId", "uri"]);
    expect(Object.keys(key.properties)).toEqual(expect.arrayContaining(["token", "adoptId", "profile", "triggers"]));
    const rule = schema.resources[T("IpPolicyRule")];
    expect(rule.requiredInputs).toEqual(["ipPolicyId", "cidr", "action"]);
    expect(rule.properties.ipPolicy).toMatchObject(ref("Reference"));
    const mtls = schema.resources[T("TlsEdgeMutualTls")];
    expect(mtls.properties.certificateAuthorities).toMatchObject({ type: "array", items: ref("Reference") });
    expect(mtls.requiredInputs).toEqual(["edgeId", "certificateAuthorityIds"]);
    expect(schema.types[T("Reference")]).toMatchObject({
      properties: { id: { type: "string" }, uri: { type: "string" } },
      required: ["id", "uri"],
    });
    expect(schema.resources[T("IpPolicyRuleSet")].inputProperties.takeOver).toMatchObject({
      type: "boolean",
      language: { accessctl: { onChange: "none" } },
    });
  });

  it("has the list functions: a result of one property, a list of info objects", () => {
    expect(Object.keys(schema.functions).sort()).toEqual([T("listApiKeys"), T("listIpPolicyRules")]);
    const rules = schema.functions[T("listIpPolicyRules")];
    expect(rules.inputs.properties).toEqual({ ipPolicyId: expect.objectContaining({ type: "string" }) });
    expect(rules.inputs.required).toBeUndefined();
    expect(rules.outputs).toEqual({
      properties: { rules: { type: "array", items: ref("IpPolicyRuleInfo") } },
      required: ["rules"],
    });
    const keys = schema.functions[T("listApiKeys")];
    expect(keys.inputs).toBeUndefined();
    expect(keys.outputs).toEqual({
      properties: { keys: { type: "array", items: ref("ApiKeyInfo") } },
      required: ["keys"],
    });
    expect(Object.keys(schema.types[T("IpPolicyRuleInfo")].properties).sort()).toEqual([
      "action",
      "cidr",
      "createdAt",
      "description",
      "id",
      "ipPolicy",
      "ipPolicyId",
      "metadata",
      "uri",
    ]);
    expect(schema.types[T("ApiKeyInfo")].properties.token).toBeUndefined();
  });

  it("configures the provider from ProviderConfig", () => {
    expect(Object.keys(schema.config.variables).sort()).toEqual([
      "apiKey",
      "apiUrl",
      "maxRequestsPerMinute",
      "maxRetries",
      "planKey",
      "profiles",
      "teamKey",
    ]);
    expect(schema.provider.inputProperties).toEqual(schema.config.variables);
    expect(schema.config.variables.maxRetries.type).toBe("integer");
    expect(schema.config.variables.profiles).toMatchObject({
      type: "object",
      additionalProperties: ref("AccountProfile"),
      secret: true,
    });
  });

  it("is what the committed SDKs were generated from (`npm run sdks`)", () => {
    const readme = fs.readFileSync(path.join(REPO, "sdks/README.md"), "utf8");
    expect(readme, "sdks/: run npm run sdks").toContain(
      `Schema sha256: \`${schemaHash(fs.readFileSync(SCHEMA, "utf8"))}\``,
    );
    for (const f of [
      "nodejs/package.json",
      "python/pyproject.toml",
      "go/go.mod",
      "go/go.sum",
      "go/accessctl/apiKey.go",
    ])
      expect(fs.existsSync(path.join(REPO, "sdks", f)), f).toBe(true);
  });
});
