// What plans and drifts say of access (provider/access.ts, words in provider/messages.ts), through the
// serialized providers against the emulator: a set's preview (the plan's last line), its update, a
// refresh that finds rules changed by hand, and an IpPolicyRule's preview given the policy's other
// rules as last listed (or at most, when they were not). Messages go to stderr with no engine.
import * as structproto from "google-protobuf/google/protobuf/struct_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, RunningEmulator, startEmulator } from "../helpers/emulator";
import { compiled, configureRequest, newRun, serializedProvider } from "../helpers/provider";

const config = compiled("provider/config.js");
let emu: RunningEmulator;
let set: any;
let rule: any;
beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  set = (await serializedProvider("ip-policy-rule-set")).provider;
  rule = (await serializedProvider("ip-policy-rule")).provider;
  await config.configure(configureRequest({ "accessctl:apiUrl": emu.url, "accessctl:apiKey": emu.adminToken }));
});
afterAll(async () => {
  await emu.stop();
});

/** What `f` wrote to stderr (the providers' messages with no engine). */
async function said(f: () => Promise<unknown>): Promise<string> {
  const out: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  (process.stderr as unknown as { write: (s: unknown) => boolean }).write = (chunk: unknown) => (
    out.push(String(chunk)),
    true
  );
  try {
    await f();
  } finally {
    (process.stderr as unknown as { write: typeof write }).write = write;
  }
  return out.join("");
}

const urn = (name: string, type = "IpPolicyRuleSet") => `urn:pulumi:dev::p::accessctl:index:${type}::${name}`;

describe("a set: every plan and drift says what it opens and closes", () => {
  it("preview, up and a refresh after a hand-added 0.0.0.0/0 allow, IPv4 and IPv6 with exact counts", async () => {
    newRun();
    const P = emu.fixtures.ipPolicies[0];
    const u = urn("access");
    const v1 = [
      { cidr: "10.0.0.0/8", action: "allow" },
      { cidr: "10.5.0.0/16", action: "deny" },
      { cidr: "192.0.2.0/24", action: "allow" },
      { cidr: "2001:db8::/32", action: "allow" },
      { cidr: "2001:db8:1::/48", action: "deny" },
    ];
    let first: any;
    const created = await said(
      async () => (first = (await set.check({}, { ipPolicyId: P, rules: v1, __urn: u })).inputs),
    );
    expect(created).toContain(
      `plan for ${P}: create 5 rules: 5 requests\naccess of ${P}: opens 10.0.0.0/8 except (10.5.0.0/16), 192.0.2.0/24 (16,711,936 addresses) ` +
        "and 2001:db8::/32 except 2001:db8:1::/48 (79,226,953,588,444,722,964,369,244,160 addresses)",
    );
    const made = await set.create(first);
    newRun(); // the next run
    // v2: the IPv6 deny and the 192.0.2.0/24 allow go, 10.7.0.0/16 is denied; a text changes.
    const v2 = [v1[0], v1[1], { cidr: "10.7.0.0/16", action: "deny" }, { ...v1[3], description: "lab" }];
    const next = (await set.check(made.outs, { ipPolicyId: P, rules: v2, __urn: u })).inputs;
    const preview = await said(() => set.diff(P, made.outs, next));
    expect(preview).toMatch(/plan for ipp_\w+: create 1, update 1, delete 2: 4 requests\n/);
    expect(preview).toContain(
      `\naccess of ${P}: opens 2001:db8:1::/48 (1,208,925,819,614,629,174,706,176 addresses); closes 10.7.0.0/16, 192.0.2.0/24 (65,792 addresses)`,
    );

    const up = await said(async () => (made.outs = (await set.update(P, made.outs, next)).outs));
    expect(up).toContain(
      `access of ${P}: opened 2001:db8:1::/48 (1,208,925,819,614,629,174,706,176 addresses); closed`,
    );

    newRun();
    // A text alone: access unchanged.
    const texts = (
      await set.check(made.outs, { ipPolicyId: P, rules: v2.map((r) => ({ ...r, description: "x" })), __urn: u })
    ).inputs;
    expect(await said(() => set.diff(P, made.outs, texts))).toContain(`\naccess of ${P}: unchanged`);

    // By hand: 0.0.0.0/0 allow. The refresh names what it opened.
    expect(
      (
        await client(emu.url, emu.adminToken).post("/ip_policy_rules", {
          ip_policy_id: P,
          cidr: "0.0.0.0/0",
          action: "allow",
        })
      ).status,
    ).toBe(201);
    newRun();
    const refresh = await said(() => set.read(P, { ...made.outs, __urn: u }));
    expect(refresh).toContain(
      `access of ${P}, changed since the state last recorded it: opens 0.0.0.0/0 except 10.0.0.0/8 (4,278,190,080 addresses)`,
    );
    newRun();
    const rest = await set.read(P, { ...made.outs, __urn: u });
    await set.delete(P, rest.props);
  });
});

describe("an IpPolicyRule: its preview says what it opens or closes beside the policy's other rules", () => {
  it("as last listed in this run, or at most when they were not listed", async () => {
    newRun();
    const P = emu.fixtures.ipPolicies[1];
    const wide = await rule.create(
      (await rule.check({}, { ipPolicyId: P, cidr: "10.0.0.0/8", action: "allow" })).inputs,
    );
    // Nothing listed in this run: at most.
    newRun();
    const blind = await said(() =>
      rule.check({}, { ipPolicyId: P, cidr: "10.7.0.0/16", action: "allow", __urn: urn("a", "IpPolicyRule") }),
    );
    expect(blind).toContain(
      `access of ${P}: this rule opens at most 10.7.0.0/16 (65,536 addresses) (the policy's other rules were not listed in this run`,
    );
    // A refresh of the rule lists the account: its allow of 10.0.0.0/8 already holds 10.7.0.0/16.
    await rule.read(wide.id, wide.outs);
    const known = await said(() =>
      rule.check({}, { ipPolicyId: P, cidr: "10.7.0.0/16", action: "allow", __urn: urn("a", "IpPolicyRule") }),
    );
    expect(known).toContain(
      `access of ${P}: this rule changes no access, given the policy's 1 other rule as last listed`,
    );
    const deny = await said(() =>
      rule.check({}, { ipPolicyId: P, cidr: "10.7.0.0/16", action: "deny", __urn: urn("b", "IpPolicyRule") }),
    );
    expect(deny).toContain(
      `access of ${P}: this rule closes 10.7.0.0/16 (65,536 addresses), given the policy's 1 other rule as last listed`,
    );
    // A change of the listed rule's CIDR (its diff after a check): judged without itself.
    const moved = (
      await rule.check(wide.outs, {
        ipPolicyId: P,
        cidr: "10.0.0.0/9",
        action: "allow",
        __urn: urn("w", "IpPolicyRule"),
      })
    ).inputs;
    const diff = await said(() => rule.diff(wide.id, wide.outs, moved));
    expect(diff).toContain(
      `access of ${P}: this rule closes 10.128.0.0/9 (8,388,608 addresses), given the policy's 0 other rules as last listed`,
    );
    await rule.delete(wide.id, wide.outs);
  });
});

it("the plugin's Check of a new IpPolicyRule says it too (the same module behind both hosts)", async () => {
  newRun();
  const P = emu.fixtures.ipPolicies[1];
  const service = compiled("plugin/server.js").providerService({ version: "0.1.0", schema: "{}" });
  const news = { ipPolicyId: P, cidr: "192.0.2.0/24", action: "allow" };
  const req = new provproto.CheckRequest()
    .setUrn(urn("plugin", "IpPolicyRule"))
    .setOlds(structproto.Struct.fromJavaScript({}))
    .setNews(structproto.Struct.fromJavaScript(news));
  const checked = (call: unknown) =>
    new Promise((resolve, reject) => service.check(call, (e: unknown, r: unknown) => (e ? reject(e) : resolve(r))));
  const out = await said(() => checked({ request: req }));
  expect(out).toContain(
    `access of ${P}: this rule opens at most 192.0.2.0/24 (256 addresses) (the policy's other rules`,
  );
});
