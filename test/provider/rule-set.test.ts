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

const member = (id: string, cidr: string, action = "allow", description = "", metadata = "") => ({ id, cidr, action, description, metadata, uri: `u/${id}`, createdAt: "t" });

describe("IpPolicyRuleSet check", () => {
  it("canonicalizes, drops empty texts and sorts by CIDR", async () => {
    const { inputs, failures } = await set.check({}, {
      ipPolicyId: P,
      rules: [
        { cidr: "2001:DB8::/32", action: "deny", description: "" },
        { cidr: "10.0.0.0/8", action: "allow", metadata: "m" },
        { cidr: "9.0.0.0/8", action: "allow", description: "d" },
      ],
      takeOver: false,
    });
    expect(failures).toEqual([]);
    expect(inputs).toEqual({ ipPolicyId: P, rules: [{ cidr: "9.0.0.0/8", action: "allow", description: "d" }, { cidr: "10.0.0.0/8", action: "allow", metadata: "m" }, { cidr: "2001:db8::/32", action: "deny" }] });
  });

  it("names each bad rule by its place in the list, and refuses a CIDR declared twice in any spelling", async () => {
    const { failures } = await set.check({}, {
      ipPolicyId: P,
      rules: [
        { cidr: "2001:db8::/32", action: "allow" },
        { cidr: "10.0.0.5/8", action: "allow" },
        { cidr: "10.1.0.0/16", action: "permit", description: "x".repeat(300) },
        { cidr: "2001:DB8::/32", action: "allow" },
        { cidr: "10.2.0.0/16", action: "allow", colour: "red" },
        { action: "deny" },
      ],
    });
    const reasons = failures.map((f: { reason: string }) => f.reason);
    expect(reasons).toEqual([
      'rules[1].cidr "10.0.0.5/8" has host bits set; did you mean 10.0.0.0/8?',
      'rules[2].action must be "allow" or "deny", got "permit"',
      "rules[2].description is 300 bytes of UTF-8; the limit is 255 bytes",
      'rules[3].cidr "2001:DB8::/32" is declared twice: rules[0] is the same range (2001:db8::/32); a policy holds a CIDR once',
      "rules[4].colour is not a property of a rule; expected one of cidr, action, description, metadata",
      "rules[5].cidr is required, e.g. 203.0.113.0/24 or 2001:db8::/32",
    ]);
  });
});

describe("IpPolicyRuleSet values not known at preview", () => {
  const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
  it("checks what is known, and diff reports a change without a plan", async () => {
    const { inputs, failures } = await set.check({}, { ipPolicyId: P, rules: [{ cidr: UNKNOWN, action: "allow" }, { cidr: "10.0.0.5/8", action: "allow" }] });
    expect(failures.map((f: { reason: string }) => f.reason)).toEqual(['rules[1].cidr "10.0.0.5/8" has host bits set; did you mean 10.0.0.0/8?']);
    const known = (await set.check({}, { ipPolicyId: P, rules: [{ cidr: UNKNOWN, action: "allow" }] })).inputs;
    expect(await set.diff(P, { ipPolicyId: P, rules: [] }, known)).toMatchObject({ changes: true, replaces: [] });
    expect(inputs.rules[0].cidr).toBe(UNKNOWN);
  });

  it("hands on a rule that is wholly unknown as it is, beside known ones, and diff reports a change", async () => {
    const { inputs, failures } = await set.check({}, { ipPolicyId: P, rules: [UNKNOWN, { cidr: "10.0.0.0/8", action: "allow" }] });
    expect(failures).toEqual([]);
    expect(inputs.rules).toEqual([UNKNOWN, { cidr: "10.0.0.0/8", action: "allow" }]);
    expect(await set.diff(P, { ipPolicyId: P, rules: [] }, inputs)).toMatchObject({ changes: true, replaces: [] });
    expect((await set.check({}, { ipPolicyId: P, rules: [UNKNOWN] })).inputs.rules).toEqual([UNKNOWN]);
  });

  it("names __provider in a rule as any other unknown property", async () => {
    const { failures } = await set.check({}, { ipPolicyId: P, rules: [{ cidr: "10.0.0.0/8", action: "allow", __provider: "x" }] });
    expect(failures.map((f: { reason: string }) => f.reason)).toEqual(["rules[0].__provider is not a property of a rule; expected one of cidr, action, description, metadata"]);
  });
});

describe("IpPolicyRuleSet and IPv4-mapped IPv6", () => {
  it("refuses an IPv4 range and its IPv4-mapped IPv6 form in one set, and keeps the IPv4 form", async () => {
    const { failures } = await set.check({}, { ipPolicyId: P, rules: [{ cidr: "10.0.0.0/8", action: "allow" }, { cidr: "::ffff:10.0.0.0/104", action: "allow" }] });
    expect(failures.map((f: { reason: string }) => f.reason)).toEqual(['rules[1].cidr "::ffff:10.0.0.0/104" is declared twice: rules[0] is the same range (10.0.0.0/8); a policy holds a CIDR once']);
    expect((await set.check({}, { ipPolicyId: P, rules: [{ cidr: "::FFFF:10.0.0.0/104", action: "allow" }] })).inputs.rules).toEqual([{ cidr: "10.0.0.0/8", action: "allow" }]);
  });
});

describe("IpPolicyRuleSet diff", () => {
  const olds = { ipPolicyId: P, rules: [member("ipr_1", "10.0.0.0/8", "allow", "a"), member("ipr_2", "2001:db8::/32", "deny")] };

  it("no change for reordering, IPv6 spelling, unset vs empty text", async () => {
    const { inputs } = await set.check({}, { ipPolicyId: P, rules: [{ cidr: "2001:DB8:0::/32", action: "deny", metadata: "" }, { cidr: "10.0.0.0/8", action: "allow", description: "a" }] });
    expect((await set.diff(P, olds, inputs)).changes).toBe(false);
  });

  it("a changed policy or profile replaces; a changed rule updates", async () => {
    expect(await set.diff(P, olds, { ...olds, ipPolicyId: "ipp_other", rules: [] })).toMatchObject({ changes: true, replaces: ["ipPolicyId"] });
    expect(await set.diff(P, olds, { ipPolicyId: P, rules: [{ cidr: "10.0.0.0/8", action: "allow" }] })).toMatchObject({ changes: true, replaces: [] });
  });
});

describe("IpPolicyRuleSet plan", () => {
  const current = [member("ipr_1", "10.0.0.0/8", "allow", "a"), member("ipr_2", "10.1.0.0/16", "allow"), member("ipr_3", "10.2.0.0/16", "deny"), member("ipr_4", "10.3.0.0/16", "allow")];

  it("reuses removed rules of the same action for added CIDRs (one PATCH each), flips an action by delete then create, deletes the rest", async () => {
    const declared = [
      { cidr: "10.0.0.0/8", action: "allow", description: "a2" }, // description: PATCH
      { cidr: "10.2.0.0/16", action: "allow" }, // action flip
      { cidr: "172.16.0.0/12", action: "allow" }, // takes ipr_2 or ipr_4 by PATCH of cidr
      { cidr: "192.168.0.0/16", action: "deny" }, // no deny rule to reuse: create
    ];
    const p = await set.plan(current, declared, () => true);
    expect(p.patches.map((x: any) => `${x.rule.id} ${x.to.cidr}`)).toEqual(["ipr_1 10.0.0.0/8", "ipr_2 172.16.0.0/12"]);
    expect(p.flips.map((x: any) => `${x.rule.id} ${x.to.action}`)).toEqual(["ipr_3 allow"]);
    expect(p.creates.map((d: any) => d.cidr)).toEqual(["192.168.0.0/16"]);
    expect(p.deletes.map((r: any) => r.id)).toEqual(["ipr_4"]);
    expect(await set.describePlan(p)).toBe(
      "create 1: 192.168.0.0/16; move 1 (one PATCH of cidr each): 10.1.0.0/16 → 172.16.0.0/12; update 1: 10.0.0.0/8; replace 1 (action changed: delete, then create): 10.2.0.0/16 deny → allow; delete 1: 10.3.0.0/16 allow",
    );
  });

  it("keeps undeclared rules that may not be deleted (a create with takeOver, a rule the state does not know yet)", async () => {
    const p = await set.plan(current, [{ cidr: "10.9.0.0/16", action: "allow" }], (r: { id: string }) => r.id === "ipr_2");
    expect(p.patches.map((x: any) => `${x.rule.id} ${x.to.cidr}`)).toEqual(["ipr_2 10.9.0.0/16"]);
    expect(p.kept.map((r: any) => r.id)).toEqual(["ipr_1", "ipr_3", "ipr_4"]);
    expect(p.deletes).toEqual([]);
  });
});
