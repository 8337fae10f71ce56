// IpPolicyRuleSet's check, diff and planner, through the serialized provider. No network: the API
// URL points where nothing listens, which also proves check and diff make no calls.
import { beforeAll, describe, expect, it } from "vitest";
import { LoadedProvider, serializedProvider } from "../helpers/provider";

let set: LoadedProvider["provider"];
const P = "ipp_abc123";

beforeAll(async () => {
  process.env.ACCESSCTL_API_URL = "http://127.0.0.1:9"; // nothing listens there
  process.env.ACCESSCTL_API_KEY = "rule-set-key-0123456789";
  set = (await serializedProvider("ip-policy-rule-set")).provider;
});

const member = (id: string, cidr: string, action = "allow", description = "", metadata = "") => ({
  id,
  cidr,
  action,
  description,
  metadata,
  uri: `u/${id}`,
  createdAt: "t",
});

describe("IpPolicyRuleSet check", () => {
  it("hands the rules on keyed by canonical CIDR, in CIDR order, without empty texts", async () => {
    const { inputs, failures } = await set.check(
      {},
      {
        ipPolicyId: P,
        rules: [
          { cidr: "2001:DB8::/32", action: "deny", description: "" },
          { cidr: "10.0.0.0/8", action: "allow", metadata: "m" },
          { cidr: "9.0.0.0/8", action: "allow", description: "d" },
          { cidr: "198.51.100.7", action: "deny" },
        ],
        takeOver: false,
      },
    );
    expect(failures).toEqual([]);
    const { __plan, ...rest } = inputs;
    // The rule-level plan, for Pulumi's update plans (`up --plan` holds it): by CIDR and action, no text.
    expect(__plan).toEqual({
      steps: [
        { op: "create", cidr: "9.0.0.0/8", to: "allow" },
        { op: "create", cidr: "10.0.0.0/8", to: "allow" },
        { op: "create", cidr: "198.51.100.7/32", to: "deny" },
        { op: "create", cidr: "2001:db8::/32", to: "deny" },
      ],
    });
    expect(rest).toEqual({
      ipPolicyId: P,
      rules: {
        "9.0.0.0/8": { cidr: "9.0.0.0/8", action: "allow", description: "d" },
        "10.0.0.0/8": { cidr: "10.0.0.0/8", action: "allow", metadata: "m" },
        "198.51.100.7/32": { cidr: "198.51.100.7/32", action: "deny" },
        "2001:db8::/32": { cidr: "2001:db8::/32", action: "deny" },
      },
    });
    expect(Object.keys(inputs.rules)).toEqual(["9.0.0.0/8", "10.0.0.0/8", "198.51.100.7/32", "2001:db8::/32"]);
    // The keyed form is accepted as it is (a state's inputs, an import's), and handed on unchanged; nothing to do.
    expect((await set.check(inputs, inputs)).inputs).toEqual({ ...inputs, __plan: { steps: [] } });
    const { "9.0.0.0/8": _gone, ...others } = inputs.rules;
    const moved = (
      await set.check(inputs, {
        ipPolicyId: P,
        rules: { ...others, "172.16.0.0/12": { action: "allow", description: "d2" } },
      })
    ).inputs;
    expect(moved.__plan).toEqual({
      steps: [{ op: "move", cidr: "9.0.0.0/8", to: "172.16.0.0/12", texts: ["description"] }],
    });
  });

  it("names each bad rule by its place in the list and its CIDR, and refuses a range declared twice in any spelling", async () => {
    const { failures } = await set.check(
      {},
      {
        ipPolicyId: P,
        rules: [
          { cidr: "2001:db8::/32", action: "allow" },
          { cidr: "10.0.0.5/8", action: "allow" },
          { cidr: "10.1.0.0/16", action: "permit", description: "x".repeat(300) },
          { cidr: "2001:DB8::/32", action: "allow" },
          { cidr: "10.2.0.0/16", action: "allow", colour: "red" },
          { action: "deny" },
          { cidr: "198.51.100.7/32", action: "allow" },
          { cidr: "198.51.100.7", action: "allow" },
        ],
      },
    );
    const reasons = failures.map((f: { reason: string }) => f.reason);
    expect(reasons).toEqual([
      'rules[1].cidr "10.0.0.5/8" has host bits set; did you mean 10.0.0.0/8?',
      'rules[2].action must be "allow" or "deny", got "permit" (rule 10.1.0.0/16)',
      "rules[2].description is 300 bytes of UTF-8; the limit is 255 bytes (rule 10.1.0.0/16)",
      'rules[3].cidr "2001:DB8::/32" is declared twice: rules[0] is the same range (2001:db8::/32); a policy holds a CIDR once',
      "rules[4].colour is not a property of a rule; expected one of cidr, action, description, metadata (rule 10.2.0.0/16)",
      "rules[5].cidr is required, e.g. 203.0.113.0/24 or 2001:db8::/32",
      'rules[7].cidr "198.51.100.7" is declared twice: rules[6] is the same range (198.51.100.7/32); a policy holds a CIDR once',
    ]);
  });
});

describe("IpPolicyRuleSet values not known at preview", () => {
  const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
  it("checks what is known; the keys wait for every CIDR; diff reports a change without a plan", async () => {
    const { inputs, failures } = await set.check(
      {},
      {
        ipPolicyId: P,
        rules: [
          { cidr: UNKNOWN, action: "allow" },
          { cidr: "10.0.0.5/8", action: "allow" },
        ],
      },
    );
    expect(failures.map((f: { reason: string }) => f.reason)).toEqual([
      'rules[1].cidr "10.0.0.5/8" has host bits set; did you mean 10.0.0.0/8?',
    ]);
    const known = (await set.check({}, { ipPolicyId: P, rules: [{ cidr: UNKNOWN, action: "allow" }] })).inputs;
    expect(known.rules).toBe(UNKNOWN);
    expect(await set.diff(P, { ipPolicyId: P, rules: {} }, known)).toMatchObject({ changes: true, replaces: [] });
    expect(inputs.ipPolicyId).toBe(P);
  });

  it("a rule that is wholly unknown makes the rules unknown; a known CIDR with an unknown description is keyed, and diff reports a change", async () => {
    const { inputs, failures } = await set.check(
      {},
      { ipPolicyId: P, rules: [UNKNOWN, { cidr: "10.0.0.0/8", action: "allow" }] },
    );
    expect(failures).toEqual([]);
    expect(inputs.rules).toBe(UNKNOWN);
    const partly = (
      await set.check({}, { ipPolicyId: P, rules: [{ cidr: "10.0.0.0/8", action: "allow", description: UNKNOWN }] })
    ).inputs;
    expect(partly.rules).toEqual({ "10.0.0.0/8": { cidr: "10.0.0.0/8", action: "allow", description: UNKNOWN } });
    expect(
      await set.diff(P, { ipPolicyId: P, rules: { "10.0.0.0/8": member("ipr_1", "10.0.0.0/8") } }, partly),
    ).toMatchObject({ changes: true, replaces: [] });
  });

  it("names __provider in a rule as any other unknown property", async () => {
    const { failures } = await set.check(
      {},
      { ipPolicyId: P, rules: [{ cidr: "10.0.0.0/8", action: "allow", __provider: "x" }] },
    );
    expect(failures.map((f: { reason: string }) => f.reason)).toEqual([
      "rules[0].__provider is not a property of a rule; expected one of cidr, action, description, metadata (rule 10.0.0.0/8)",
    ]);
  });
});

describe("IpPolicyRuleSet and IPv4-mapped IPv6", () => {
  it("refuses an IPv4 range and its IPv4-mapped IPv6 form in one set, and keeps the IPv4 form", async () => {
    const { failures } = await set.check(
      {},
      {
        ipPolicyId: P,
        rules: [
          { cidr: "10.0.0.0/8", action: "allow" },
          { cidr: "::ffff:10.0.0.0/104", action: "allow" },
        ],
      },
    );
    expect(failures.map((f: { reason: string }) => f.reason)).toEqual([
      'rules[1].cidr "::ffff:10.0.0.0/104" is declared twice: rules[0] is the same range (10.0.0.0/8); a policy holds a CIDR once',
    ]);
    expect(
      (await set.check({}, { ipPolicyId: P, rules: [{ cidr: "::FFFF:10.0.0.0/104", action: "allow" }] })).inputs.rules,
    ).toEqual({ "10.0.0.0/8": { cidr: "10.0.0.0/8", action: "allow" } });
  });
});

describe("IpPolicyRuleSet diff", () => {
  const olds = {
    ipPolicyId: P,
    rules: {
      "10.0.0.0/8": member("ipr_1", "10.0.0.0/8", "allow", "a"),
      "2001:db8::/32": member("ipr_2", "2001:db8::/32", "deny"),
    },
  };

  it("no change for reordering, IPv6 spelling, unset vs empty text; nor from a state that holds the rules as a list", async () => {
    const { inputs } = await set.check(
      {},
      {
        ipPolicyId: P,
        rules: [
          { cidr: "2001:DB8:0::/32", action: "deny", metadata: "" },
          { cidr: "10.0.0.0/8", action: "allow", description: "a" },
        ],
      },
    );
    expect((await set.diff(P, olds, inputs)).changes).toBe(false);
    const listed = { ipPolicyId: P, rules: Object.values(olds.rules) }; // as versions before 0.2 recorded them
    expect((await set.diff(P, listed, inputs)).changes).toBe(false);
    expect(
      (
        await set.diff(P, olds, {
          ipPolicyId: P,
          rules: [
            { cidr: "10.0.0.0/8", action: "allow", description: "a" },
            { cidr: "2001:db8::/32", action: "deny" },
          ],
        })
      ).changes,
    ).toBe(false);
  });

  it("a changed policy or profile replaces; a changed rule updates, each rule a path of its own", async () => {
    expect(await set.diff(P, olds, { ...olds, ipPolicyId: "ipp_other", rules: {} })).toMatchObject({
      changes: true,
      replaces: ["ipPolicyId"],
    });
    const { inputs } = await set.check(
      {},
      {
        ipPolicyId: P,
        rules: [
          { cidr: "10.0.0.0/8", action: "allow" },
          { cidr: "0.0.0.0/0", action: "deny" },
        ],
      },
    );
    expect(await set.diff(P, olds, inputs)).toEqual({
      changes: true,
      replaces: [],
      detailedDiff: {
        'rules["0.0.0.0/0"]': "add",
        'rules["10.0.0.0/8"].description': "update",
        'rules["2001:db8::/32"]': "delete",
      },
    });
  });
});

describe("a policy has one owner: a set, or rule resources (check, every host)", () => {
  it("a rule on a set's policy, a set on a policy with a rule, and a second set fail, naming the other; rules alone may share a policy", async () => {
    const rule = (await serializedProvider("ip-policy-rule")).provider;
    const urn = (type: string, name: string) => `urn:pulumi:dev::proj::accessctl:index:${type}::${name}`;
    const reasons = (r: { failures: { property: string; reason: string }[] }) =>
      r.failures.map((f) => `${f.property}: ${f.reason}`);
    expect(
      (await set.check({}, { ipPolicyId: "ipp_owners1", rules: [], __urn: urn("IpPolicyRuleSet", "office") })).failures,
    ).toEqual([]);
    expect(
      reasons(
        await rule.check(
          {},
          { ipPolicyId: "ipp_owners1", cidr: "10.1.0.0/16", action: "allow", __urn: urn("IpPolicyRule", "stray") },
        ),
      ),
    ).toEqual([
      "ipPolicyId: IP policy ipp_owners1 is owned by the IpPolicyRuleSet office, which would delete this rule at every up; declare it in the set's rules instead, or use another policy",
    ]);
    expect(
      reasons(
        await set.check({}, { ipPolicyId: "ipp_owners1", rules: [], __urn: urn("IpPolicyRuleSet", "second") }),
      )[0],
    ).toMatch(
      /^ipPolicyId: the IpPolicyRuleSet office also manages the rules of IP policy ipp_owners1; .* the two sets would delete each other's rules/,
    );
    // The set checked again in the same run is no clash with itself.
    expect(
      (
        await set.check({}, { ipPolicyId: "ipp_owners1", rules: [], __urn: urn("IpPolicyRuleSet", "office") })
      ).failures.filter((f: { property: string }) => f.property === "ipPolicyId"),
    ).toEqual([]);
    // Without a URN (a dynamic IpPolicyRule is not told its own), a rule is named by its CIDR.
    expect(
      (await rule.check({}, { ipPolicyId: "ipp_owners2", cidr: "10.2.0.0/16", action: "allow" })).failures,
    ).toEqual([]);
    expect(
      (
        await rule.check(
          {},
          { ipPolicyId: "ipp_owners2", cidr: "10.3.0.0/16", action: "allow", __urn: urn("IpPolicyRule", "b") },
        )
      ).failures,
    ).toEqual([]);
    expect(
      reasons(await set.check({}, { ipPolicyId: "ipp_owners2", rules: [], __urn: urn("IpPolicyRuleSet", "late") }))[0],
    ).toMatch(/^ipPolicyId: the IpPolicyRule for 10\.2\.0\.0\/16 also manages a rule of IP policy ipp_owners2/);
  });
});
