// check and diff of the three providers, through their serialized form. No network: these run
// against an API URL where nothing listens, which also proves check and diff make no calls.
import { beforeAll, describe, expect, it } from "vitest";
import { LoadedProvider, serializedProvider } from "../helpers/provider";

const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
let apiKey: LoadedProvider["provider"];
let rule: LoadedProvider["provider"];
let mtls: LoadedProvider["provider"];

beforeAll(async () => {
  process.env.ACCESSCTL_API_URL = "http://127.0.0.1:9"; // nothing listens there
  process.env.ACCESSCTL_API_KEY = "check-diff-key-0123456789";
  apiKey = (await serializedProvider("api-key")).provider;
  rule = (await serializedProvider("ip-policy-rule")).provider;
  mtls = (await serializedProvider("tls-edge-mutual-tls")).provider;
});

const failures = async (p: LoadedProvider["provider"], news: Record<string, unknown>) =>
  (await p.check({}, news)).failures as { property: string; reason: string }[];

describe("ApiKey check", () => {
  it("accepts a valid key, with byte limits counted in UTF-8", async () => {
    expect(
      await failures(apiKey, {
        description: "é".repeat(127) + "a",
        metadata: "€".repeat(1365) + "a",
        ownerId: "usr_abc",
      }),
    ).toEqual([]);
    expect(await failures(apiKey, {})).toEqual([]);
  });

  it("names the property and the limit", async () => {
    expect(await failures(apiKey, { description: "é".repeat(128) })).toEqual([
      { property: "description", reason: "description is 256 bytes of UTF-8; the limit is 255 bytes" },
    ]);
    expect(await failures(apiKey, { metadata: "x".repeat(4097) })).toEqual([
      { property: "metadata", reason: "metadata is 4097 bytes of UTF-8; the limit is 4096 bytes" },
    ]);
    expect(await failures(apiKey, { description: 5 })).toEqual([
      { property: "description", reason: "description must be a string" },
    ]);
  });

  it("checks id prefixes and shapes", async () => {
    expect((await failures(apiKey, { ownerId: "ipp_abc" }))[0]).toMatchObject({
      property: "ownerId",
      reason: expect.stringContaining("usr_… or bot_…"),
    });
    expect(await failures(apiKey, { ownerId: "bot_abc" })).toEqual([]);
    expect((await failures(apiKey, { adoptId: "ipr_abc" }))[0].property).toBe("adoptId");
    for (const hostile of ["ak_../x", "ak_a/b", "ak_a?b", "ak_a#b", "ak_a%2F", "ak_a b", "..", "ak_"]) {
      expect((await failures(apiKey, { adoptId: hostile }))[0]?.property).toBe("adoptId");
    }
  });

  it("flags unknown properties (typos)", async () => {
    expect(await failures(apiKey, { descripton: "x" })).toEqual([
      { property: "descripton", reason: expect.stringContaining("unknown property descripton") },
    ]);
  });

  it("lets values that are not known yet through", async () => {
    expect(await failures(apiKey, { description: UNKNOWN, ownerId: UNKNOWN })).toEqual([]);
  });
});

describe("IpPolicyRule check", () => {
  const base = { ipPolicyId: "ipp_abc", cidr: "10.0.0.0/8", action: "allow" };

  it("accepts valid rules and returns the canonical CIDR", async () => {
    expect(await failures(rule, base)).toEqual([]);
    const checked = await rule.check({}, { ...base, cidr: "2001:0DB8:0000::/32" });
    expect(checked.failures).toEqual([]);
    expect(checked.inputs.cidr).toBe("2001:db8::/32");
  });

  it("suggests the network address for a CIDR with host bits", async () => {
    expect(await failures(rule, { ...base, cidr: "10.0.0.5/8" })).toEqual([
      { property: "cidr", reason: 'cidr "10.0.0.5/8" has host bits set; did you mean 10.0.0.0/8?' },
    ]);
    expect((await failures(rule, { ...base, cidr: "2001:db8::1/32" }))[0].reason).toContain(
      "did you mean 2001:db8::/32?",
    );
  });

  it("takes one address as the range of that host, /32 or /128, with no diff between the two spellings", async () => {
    for (const [written, canonical] of [
      ["198.51.100.7", "198.51.100.7/32"],
      ["2001:DB8::1", "2001:db8::1/128"],
      ["::ffff:198.51.100.7", "198.51.100.7/32"],
    ]) {
      const checked = await rule.check({}, { ...base, cidr: written });
      expect(checked.failures).toEqual([]);
      expect(checked.inputs.cidr).toBe(canonical);
      expect((await rule.diff("ipr_1", { ...checked.inputs, cidr: canonical }, checked.inputs)).changes).toBe(false);
      expect(
        (await rule.diff("ipr_1", { ...checked.inputs, cidr: canonical }, { ...base, cidr: written })).changes,
      ).toBe(false);
    }
    expect((await failures(rule, { ...base, cidr: "198.51.100.256" }))[0].reason).toBe(
      'cidr "198.51.100.256" is not an IPv4 or IPv6 address range',
    );
  });

  it("rejects CIDRs the service rejects", async () => {
    for (const cidr of [
      "10.0.0.0.1",
      "10.0.0.0/33",
      "10.0.0/8",
      "300.1.1.0/24",
      "::/129",
      "fe80::%eth0/64",
      "010.0.0.0/8",
      "10.0.0.0/08",
      "x/8",
      "",
    ]) {
      expect((await failures(rule, { ...base, cidr }))[0], cidr).toMatchObject({ property: "cidr" });
    }
  });

  it("requires ipPolicyId, cidr and action, and action is allow or deny", async () => {
    const missing = await failures(rule, {});
    expect(missing.map((f) => f.property).sort()).toEqual(["action", "cidr", "ipPolicyId"]);
    expect(await failures(rule, { ...base, action: "block" })).toEqual([
      { property: "action", reason: 'action must be "allow" or "deny", got "block"' },
    ]);
    expect((await failures(rule, { ...base, ipPolicyId: "ca_abc" }))[0]).toMatchObject({
      property: "ipPolicyId",
      reason: expect.stringContaining("ipp_"),
    });
    expect((await failures(rule, { ...base, description: "x".repeat(256) }))[0]).toMatchObject({
      property: "description",
    });
  });

  it("lets unknown values through", async () => {
    expect(await failures(rule, { ipPolicyId: UNKNOWN, cidr: UNKNOWN, action: UNKNOWN })).toEqual([]);
  });
});

describe("TlsEdgeMutualTls check", () => {
  it("checks edge and CA ids, repeats and enabled", async () => {
    expect(
      await failures(mtls, { edgeId: "edgtls_a", certificateAuthorityIds: ["ca_a", "ca_b"], enabled: false }),
    ).toEqual([]);
    expect((await failures(mtls, { certificateAuthorityIds: [] })).map((f) => f.property)).toEqual(["edgeId"]);
    expect((await failures(mtls, { edgeId: "edgtls_a" })).map((f) => f.property)).toEqual(["certificateAuthorityIds"]);
    expect(await failures(mtls, { edgeId: "edgtls_a", certificateAuthorityIds: ["ca_a", "ipp_b", "ca_a"] })).toEqual([
      { property: "certificateAuthorityIds[1]", reason: expect.stringContaining("ca_") },
      { property: "certificateAuthorityIds[2]", reason: "certificateAuthorityIds lists ca_a twice" },
    ]);
    expect((await failures(mtls, { edgeId: "edgtls_a", certificateAuthorityIds: "ca_a" }))[0].property).toBe(
      "certificateAuthorityIds",
    );
    expect(
      (await failures(mtls, { edgeId: "edgtls_a", certificateAuthorityIds: [], enabled: "yes" }))[0].property,
    ).toBe("enabled");
    expect(await failures(mtls, { edgeId: "edgtls_a", certificateAuthorityIds: [UNKNOWN] })).toEqual([]);
  });
});

describe("credentials at preview", () => {
  it("check fails, naming what to set, when there is no API URL or key", async () => {
    const saved = { ...process.env };
    try {
      delete process.env.ACCESSCTL_API_KEY;
      for (const p of [apiKey, rule, mtls]) {
        expect(await failures(p, {})).toContainEqual({
          property: "",
          reason: expect.stringMatching(
            /^accessctl: no API key: set the stack config `pulumi config set --secret accessctl:apiKey …` or the environment variable ACCESSCTL_API_KEY$/,
          ),
        });
      }
      delete process.env.ACCESSCTL_API_URL;
      expect(await failures(apiKey, {})).toEqual([
        { property: "", reason: expect.stringMatching(/^accessctl: no API URL/) },
      ]);
      process.env.ACCESSCTL_API_URL = "http://api.example.com";
      process.env.ACCESSCTL_API_KEY = "k".repeat(20);
      expect(await failures(apiKey, {})).toEqual([
        { property: "", reason: expect.stringMatching(/must use https:\/\//) },
      ]);
    } finally {
      process.env.ACCESSCTL_API_URL = saved.ACCESSCTL_API_URL;
      process.env.ACCESSCTL_API_KEY = saved.ACCESSCTL_API_KEY;
    }
  });
});

describe("an empty ownerId is unset, in check and in diff alike", () => {
  it("no replacement (and no new token) on every up", async () => {
    const checked = await apiKey.check({}, { description: "d", ownerId: "" });
    expect(checked.failures).toEqual([]);
    expect(checked.inputs.ownerId).toBeUndefined();
    const outs = { description: "d", metadata: "", ownerId: "usr_a", token: "t" };
    expect(await apiKey.diff("ak_1", outs, checked.inputs)).toMatchObject({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
    expect(await apiKey.diff("ak_1", outs, { description: "d", ownerId: "" })).toMatchObject({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
  });
});

describe("diff", () => {
  const keyOuts = { description: "d", metadata: "", ownerId: "usr_a", token: "t" };
  it("ApiKey: description/metadata update in place, ownerId replaces, an omitted ownerId is no change", async () => {
    expect(await apiKey.diff("ak_1", keyOuts, { description: "d" })).toMatchObject({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
    expect(await apiKey.diff("ak_1", keyOuts, { description: "d", ownerId: "usr_a" })).toMatchObject({
      changes: false,
    });
    expect(await apiKey.diff("ak_1", keyOuts, { description: "e" })).toMatchObject({ changes: true, replaces: [] });
    expect(await apiKey.diff("ak_1", keyOuts, {})).toMatchObject({ changes: true, replaces: [] }); // removing clears
    expect(await apiKey.diff("ak_1", keyOuts, { description: "d", ownerId: "usr_b" })).toMatchObject({
      changes: true,
      replaces: ["ownerId"],
    });
    expect(await apiKey.diff("ak_1", keyOuts, { description: UNKNOWN })).toMatchObject({ changes: true });
  });

  const ruleOuts = { ipPolicyId: "ipp_a", cidr: "2001:db8::/32", action: "allow", description: "", metadata: "m" };
  it("IpPolicyRule: equivalent CIDRs are no change; action and policy replace", async () => {
    const same = { ipPolicyId: "ipp_a", cidr: "2001:DB8:0::/32", action: "allow", metadata: "m" };
    expect(await rule.diff("ipr_1", ruleOuts, same)).toMatchObject({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
    expect(await rule.diff("ipr_1", ruleOuts, { ...same, cidr: "2001:db9::/32" })).toMatchObject({
      changes: true,
      replaces: [],
    });
    expect(await rule.diff("ipr_1", ruleOuts, { ...same, description: "new" })).toMatchObject({
      changes: true,
      replaces: [],
    });
    // Same CIDR, same policy, other action: the new rule would clash with the old one, so delete first.
    expect(await rule.diff("ipr_1", ruleOuts, { ...same, action: "deny" })).toEqual({
      changes: true,
      replaces: ["action"],
      deleteBeforeReplace: true,
      detailedDiff: { action: "update-replace" },
    });
    expect(await rule.diff("ipr_1", ruleOuts, { ...same, ipPolicyId: "ipp_b" })).toEqual({
      changes: true,
      replaces: ["ipPolicyId"],
      deleteBeforeReplace: false,
      detailedDiff: { ipPolicyId: "update-replace" },
    });
    expect(await rule.diff("ipr_1", ruleOuts, { ...same, action: "deny", cidr: "10.0.0.0/8" })).toMatchObject({
      replaces: ["action"],
      deleteBeforeReplace: false,
    });
    expect(await rule.diff("ipr_1", ruleOuts, { ...same, action: UNKNOWN })).toMatchObject({ replaces: ["action"] });
  });

  const mtlsOuts = { edgeId: "edgtls_a", enabled: true, certificateAuthorityIds: ["ca_a", "ca_b"] };
  it("TlsEdgeMutualTls: edgeId replaces, enabled defaults to true, CA list order counts", async () => {
    expect(
      await mtls.diff("edgtls_a", mtlsOuts, { edgeId: "edgtls_a", certificateAuthorityIds: ["ca_a", "ca_b"] }),
    ).toMatchObject({ changes: false });
    expect(
      await mtls.diff("edgtls_a", mtlsOuts, { edgeId: "edgtls_a", certificateAuthorityIds: ["ca_b", "ca_a"] }),
    ).toMatchObject({ changes: true, replaces: [] });
    expect(
      await mtls.diff("edgtls_a", mtlsOuts, {
        edgeId: "edgtls_a",
        certificateAuthorityIds: ["ca_a", "ca_b"],
        enabled: false,
      }),
    ).toMatchObject({ changes: true, replaces: [] });
    expect(
      await mtls.diff("edgtls_a", mtlsOuts, { edgeId: "edgtls_b", certificateAuthorityIds: ["ca_a", "ca_b"] }),
    ).toMatchObject({ changes: true, replaces: ["edgeId"] });
  });
});
