// What an attack on the rule set found, each fixed (provider/ip-policy-rule-set.ts):
// - a set that takes a policy over in the same run that deletes what held its rules before (the rule
//   resources it replaces in the program, or the set it replaces on the same policy, e.g. a profile of
//   the same account): the deletes leave the rules the new set recorded (the policy ended empty);
// - a half-failed run that splits a deny in two: no moment with half the range open;
// - a value not known at preview: the plan still names every rule up may delete.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, RunningEmulator, startEmulator } from "../helpers/emulator";
import { startFaultProxy } from "../helpers/fault-proxy";
import { compiled, configureRequest, newRun, serializedProvider } from "../helpers/provider";

const config = compiled("provider/config.js");
let emu: RunningEmulator;
let set: any;
let rule: any;
beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  set = (await serializedProvider("ip-policy-rule-set")).provider;
  rule = (await serializedProvider("ip-policy-rule")).provider;
  await config.configure(
    configureRequest({
      "accessctl:apiUrl": emu.url,
      "accessctl:apiKey": emu.adminToken,
      "accessctl:profiles": JSON.stringify({ main: { apiUrl: emu.url, apiKey: emu.adminToken } }),
    }),
  );
});
afterAll(async () => {
  await emu.stop();
});

const freshRun = newRun; // a new provider process: what one run remembers (claims, owners) is forgotten

const live = async (ipPolicyId: string) =>
  (
    (await client(emu.url, emu.adminToken).get("/ip_policy_rules")).body.ip_policy_rules as {
      ip_policy: { id: string };
      cidr: string;
    }[]
  )
    .filter((r) => r.ip_policy.id === ipPolicyId)
    .map((r) => r.cidr)
    .sort();

describe("a set that takes over a policy in the run that deletes its former owners", () => {
  it("the rule resources it replaces: their deletes leave the rules", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[0];
    const declared = [
      { cidr: "10.0.0.0/8", action: "allow" },
      { cidr: "10.1.0.0/16", action: "deny" },
    ];
    const made = [];
    for (const r of declared) made.push(await rule.create((await rule.check({}, { ipPolicyId: P, ...r })).inputs));
    freshRun(); // the next run: the program now declares the set instead of the rules
    const inputs = (await set.check({}, { ipPolicyId: P, rules: declared, takeOver: true })).inputs;
    const taken = await set.create(inputs);
    expect(Object.keys(taken.outs.rules)).toEqual(["10.0.0.0/8", "10.1.0.0/16"]);
    for (const m of made) await rule.delete(m.id, m.outs); // the rule resources removed from the program
    expect(await live(P)).toEqual(["10.0.0.0/8", "10.1.0.0/16"]);
    freshRun();
    await set.delete(P, taken.outs);
  });

  it("the set it replaces on the same policy: its delete leaves the rules", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[1];
    const rules = [
      { cidr: "10.0.0.0/8", action: "allow" },
      { cidr: "10.1.0.0/16", action: "deny" },
    ];
    const v1 = (await set.check({}, { ipPolicyId: P, rules, takeOver: true })).inputs;
    const old = await set.create(v1);
    freshRun();
    const v2 = (await set.check(v1, { ipPolicyId: P, rules, takeOver: true, profile: "main" })).inputs;
    expect((await set.diff(P, old.outs, v2)).replaces).toEqual(["profile"]);
    const made = await set.create(v2); // the engine creates the replacement, then deletes the old
    await set.delete(P, old.outs);
    expect(Object.keys(made.outs.rules)).toEqual(["10.0.0.0/8", "10.1.0.0/16"]);
    expect(await live(P)).toEqual(["10.0.0.0/8", "10.1.0.0/16"]);
    freshRun();
    await set.delete(P, made.outs);
    expect(await live(P)).toEqual([]);
  });
});

describe("a resource whose delete comes after its object moved to another resource", () => {
  it("a rule resource removed from the program whose rule an unchanged set holds (its delete did not happen in the run of the takeover): left to the set", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[1];
    const declared = [{ cidr: "10.7.0.0/16", action: "deny" }];
    const made = await rule.create((await rule.check({}, { ipPolicyId: P, ...declared[0] })).inputs);
    freshRun(); // the takeover's run: the rule resource's delete never ran (another resource failed, say)
    const inputs = (await set.check({}, { ipPolicyId: P, rules: declared, takeOver: true })).inputs;
    const taken = await set.create(inputs);
    freshRun(); // the next run: the set is unchanged, the rule resource is still to delete
    const again = (await set.check(inputs, { ipPolicyId: P, rules: declared, takeOver: true })).inputs;
    expect((await set.diff(P, taken.outs, again)).changes).toBe(false);
    await rule.delete(made.id, made.outs);
    expect(await live(P)).toEqual(["10.7.0.0/16"]);
    freshRun();
    await set.delete(P, taken.outs);
    expect(await live(P)).toEqual([]);
  });

  it("mutual TLS replaced on the same edge (a profile of the same account): the old module's delete leaves what the new one set", async () => {
    freshRun();
    const mtls = (await serializedProvider("tls-edge-mutual-tls")).provider;
    const edgeId = emu.fixtures.tlsEdges[1];
    const v1 = (await mtls.check({}, { edgeId, certificateAuthorityIds: [emu.fixtures.certificateAuthorities[0]] }))
      .inputs;
    const old = await mtls.create(v1);
    freshRun();
    const v2 = (await mtls.check(v1, { ...v1, profile: "main" })).inputs;
    expect((await mtls.diff(edgeId, old.outs, v2)).replaces).toEqual(["profile"]);
    await mtls.create(v2); // the engine creates the replacement, then deletes the old
    await mtls.delete(edgeId, old.outs);
    const module = await client(emu.url, emu.adminToken).get(`/edges/tls/${edgeId}/mutual_tls`);
    expect(module.body.certificate_authorities.map((ca: { id: string }) => ca.id)).toEqual([
      emu.fixtures.certificateAuthorities[0],
    ]);
    freshRun();
    await mtls.delete(edgeId, old.outs);
  });
});

describe("ACCESSCTL_ADOPT_EXISTING=1 after an interrupted run", () => {
  it("a rule the preview moved onto a CIDR a rule exactly as declared now holds: that rule is taken, the moved one still leaves its old CIDR", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[1];
    const v1 = (await set.check({}, { ipPolicyId: P, rules: [{ cidr: "10.0.0.0/8", action: "allow" }] })).inputs;
    const made = await set.create(v1);
    freshRun();
    const v2 = (await set.check(v1, { ipPolicyId: P, rules: [{ cidr: "12.0.0.0/8", action: "allow" }] })).inputs;
    expect((await set.diff(P, made.outs, v2)).changes).toBe(true); // the preview: ~ 10.0.0.0/8 → 12.0.0.0/8
    // An interrupted up made the rule for the new CIDR before its answer was lost.
    const left = await client(emu.url, emu.adminToken).post("/ip_policy_rules", {
      ip_policy_id: P,
      cidr: "12.0.0.0/8",
      action: "allow",
    });
    process.env.ACCESSCTL_ADOPT_EXISTING = "1";
    try {
      const done = await set.update(P, made.outs, v2);
      expect(Object.values(done.outs.rules).map((r: any) => `${r.cidr} ${r.id}`)).toEqual([
        `12.0.0.0/8 ${left.body.id}`,
      ]);
    } finally {
      delete process.env.ACCESSCTL_ADOPT_EXISTING;
    }
    expect(await live(P)).toEqual(["12.0.0.0/8"]);
    freshRun();
    await set.delete(P, (await set.read(P, made.outs)).props);
    expect(await live(P)).toEqual([]);
  });
});

describe("what up does when not all goes to plan", () => {
  const configureTo = (url: string) =>
    config.configure(configureRequest({ "accessctl:apiUrl": url, "accessctl:apiKey": emu.adminToken }));
  const withActions = async (ipPolicyId: string) =>
    (
      (await client(emu.url, emu.adminToken).get("/ip_policy_rules")).body.ip_policy_rules as {
        ip_policy: { id: string };
        cidr: string;
        action: string;
      }[]
    )
      .filter((r) => r.ip_policy.id === ipPolicyId)
      .map((r) => `${r.cidr} ${r.action}`)
      .sort();

  it("a deny split in two whose second half fails to be created: the old deny still covers the whole range", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[0];
    const proxy = await startFaultProxy(emu.url);
    try {
      await configureTo(proxy.url);
      const v1 = (
        await set.check(
          {},
          {
            ipPolicyId: P,
            rules: [
              { cidr: "10.0.0.0/8", action: "allow" },
              { cidr: "10.1.0.0/16", action: "deny" },
            ],
          },
        )
      ).inputs;
      const made = await set.create(v1);
      const v2 = (
        await set.check(v1, {
          ipPolicyId: P,
          rules: [
            { cidr: "10.0.0.0/8", action: "allow" },
            { cidr: "10.1.0.0/17", action: "deny" },
            { cidr: "10.1.128.0/17", action: "deny" },
          ],
        })
      ).inputs;
      freshRun();
      proxy.fail({
        method: "POST",
        path: /^\/ip_policy_rules$/,
        body: /10\.1\.128\.0\/17/,
        when: "before",
        status: 500,
      });
      const err = await set.update(P, made.outs, v2).catch((e: Error & { properties?: any }) => e);
      expect(err.message).toMatch(/1 call failed, first: create IP policy rule 10\.1\.128\.0\/17: HTTP 500/);
      // A deny never moves: both /17 are created first, and the /16 is deleted only after; the second failed.
      expect(await withActions(P)).toEqual(["10.0.0.0/8 allow", "10.1.0.0/16 deny", "10.1.0.0/17 deny"]);
      freshRun();
      await set.delete(P, (err as Error & { properties: any }).properties);
      expect(await withActions(P)).toEqual([]);
    } finally {
      await configureTo(emu.url);
      await proxy.close();
    }
  });

  it("a create whose answer is lost: the rule it made is recorded; a rule someone else added meanwhile is named, not recorded", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[0];
    const proxy = await startFaultProxy(emu.url);
    try {
      await configureTo(proxy.url);
      const v1 = (await set.check({}, { ipPolicyId: P, rules: [{ cidr: "10.0.0.0/8", action: "allow" }] })).inputs;
      const made = await set.create(v1);
      const v2 = (
        await set.check(v1, {
          ipPolicyId: P,
          rules: [
            { cidr: "10.0.0.0/8", action: "allow" },
            { cidr: "10.2.0.0/16", action: "deny" },
          ],
        })
      ).inputs;
      freshRun();
      proxy.fail({
        method: "POST",
        path: /^\/ip_policy_rules$/,
        body: /10\.2\.0\.0\/16/,
        when: "after",
        status: 502,
        delayMs: 1100,
        answerDelayMs: 1100,
      });
      const running = set.update(P, made.outs, v2).catch((e: Error & { properties?: any }) => e);
      await new Promise((r) => setTimeout(r, 300));
      const theirs = await client(emu.url, emu.adminToken).post("/ip_policy_rules", {
        ip_policy_id: P,
        cidr: "10.9.0.0/16",
        action: "allow",
      });
      const err = (await running) as Error & { properties?: any };
      expect(err.message).toMatch(/create IP policy rule 10\.2\.0\.0\/16: HTTP 502/);
      expect(err.message).toContain(
        `not recorded, as nothing proves a create of this run made them: 10.9.0.0/16 allow (${theirs.body.id})`,
      );
      expect(Object.keys(err.properties.rules).sort()).toEqual(["10.0.0.0/8", "10.2.0.0/16"]);
      await client(emu.url, emu.adminToken).delete(`/ip_policy_rules/${theirs.body.id}`);
      freshRun();
      await set.delete(P, err.properties);
      expect(await withActions(P)).toEqual([]);
    } finally {
      await configureTo(emu.url);
      await proxy.close();
    }
  });

  it("a delete of an allow that fails leaves the deny carve-out inside it: allow deletes go first, deny deletes last (destroy too)", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[1];
    const proxy = await startFaultProxy(emu.url);
    try {
      await configureTo(proxy.url);
      const all = [
        { cidr: "10.1.0.0/16", action: "allow", description: "office" },
        { cidr: "10.1.5.0/24", action: "deny", description: "guest wifi" },
        { cidr: "192.0.2.0/24", action: "allow" },
      ];
      const v1 = (await set.check({}, { ipPolicyId: P, rules: all })).inputs;
      const made = await set.create(v1);
      const v2 = (await set.check(v1, { ipPolicyId: P, rules: [all[2]] })).inputs;
      freshRun();
      proxy.fail({
        method: "DELETE",
        path: new RegExp(`^/ip_policy_rules/${made.outs.rules["10.1.0.0/16"].id}$`),
        when: "before",
        status: 500,
      });
      const err = await set.update(P, made.outs, v2).catch((e: Error & { properties?: any }) => e);
      expect(err.message).toMatch(/1 call failed, first: delete IP policy rule ipr_\w+ \(10\.1\.0\.0\/16\): HTTP 500/);
      expect(await withActions(P)).toEqual(["10.1.0.0/16 allow", "10.1.5.0/24 deny", "192.0.2.0/24 allow"]); // the carve-out still holds
      freshRun();
      const recorded = (err as Error & { properties: any }).properties;
      proxy.fail({
        method: "DELETE",
        path: new RegExp(`^/ip_policy_rules/${made.outs.rules["10.1.0.0/16"].id}$`),
        when: "before",
        status: 500,
      });
      await expect(set.delete(P, recorded)).rejects.toThrow(/1 call failed/);
      expect(await withActions(P)).toEqual(["10.1.0.0/16 allow", "10.1.5.0/24 deny"]);
      freshRun();
      await set.delete(P, recorded);
      expect(await withActions(P)).toEqual([]);
    } finally {
      await configureTo(emu.url);
      await proxy.close();
    }
  });

  it("destroy of a set one of whose rules was changed by hand since it was recorded: refuses before any delete, naming it", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[1];
    const v1 = (
      await set.check(
        {},
        {
          ipPolicyId: P,
          rules: [
            { cidr: "10.2.0.0/16", action: "deny" },
            { cidr: "10.3.0.0/16", action: "allow" },
          ],
        },
      )
    ).inputs;
    const made = await set.create(v1);
    const deny = made.outs.rules["10.2.0.0/16"].id;
    await client(emu.url, emu.adminToken).patch(`/ip_policy_rules/${deny}`, {
      cidr: "10.200.0.0/16",
      description: "repurposed",
    });
    freshRun();
    const err = await set.delete(P, made.outs).catch((e: Error) => e);
    // It says what changed, field by field.
    expect(err.message).toContain(
      `1 rule changed since this stack last recorded it: 10.2.0.0/16 deny (${deny}): cidr 10.2.0.0/16 → 10.200.0.0/16, description "" → "repurposed"; nothing was deleted. Run \`pulumi refresh\` first`,
    );
    expect(await live(P)).toEqual(["10.200.0.0/16", "10.3.0.0/16"]);
    freshRun();
    await set.delete(P, (await set.read(P, made.outs)).props); // after a refresh: deleted
    expect(await live(P)).toEqual([]);
  });

  it("a deny moved to another range while an allow covers the old one: the old range is never open (the deny is created, then the old one deleted last)", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[0];
    const proxy = await startFaultProxy(emu.url);
    try {
      await configureTo(proxy.url);
      const v1 = (
        await set.check(
          {},
          {
            ipPolicyId: P,
            rules: [
              { cidr: "10.0.0.0/8", action: "allow" },
              { cidr: "10.5.0.0/16", action: "deny" },
            ],
          },
        )
      ).inputs;
      const made = await set.create(v1);
      const v2 = (
        await set.check(v1, {
          ipPolicyId: P,
          rules: [
            { cidr: "172.16.0.0/12", action: "allow" },
            { cidr: "192.0.2.0/24", action: "deny" },
          ],
        })
      ).inputs;
      freshRun();
      // The allow's move fails: before the fix the deny had already moved off 10.5/16, inside the allow still on 10/8.
      proxy.fail({
        method: "PATCH",
        path: new RegExp(`^/ip_policy_rules/${made.outs.rules["10.0.0.0/8"].id}$`),
        when: "before",
        status: 500,
      });
      const err = await set.update(P, made.outs, v2).catch((e: Error & { properties?: any }) => e);
      expect(err.message).toMatch(
        /1 call failed, first: update IP policy rule ipr_\w+ \(10\.0\.0\.0\/8 → 172\.16\.0\.0\/12\): HTTP 500/,
      );
      expect(await withActions(P)).toEqual(["10.0.0.0/8 allow", "10.5.0.0/16 deny", "192.0.2.0/24 deny"]);
      freshRun();
      await set.update(P, (err as Error & { properties: any }).properties, v2);
      expect(await withActions(P)).toEqual(["172.16.0.0/12 allow", "192.0.2.0/24 deny"]);
      freshRun();
      await set.delete(P, (await set.read(P, { ipPolicyId: P })).props);
    } finally {
      await configureTo(emu.url);
      await proxy.close();
    }
  });

  it("destroy of a set whose policy holds an allow rule the state has not recorded: refuses before any delete, naming it; a deny is left, named", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[1];
    const api = client(emu.url, emu.adminToken);
    const v1 = (await set.check({}, { ipPolicyId: P, rules: [{ cidr: "10.2.0.0/16", action: "deny" }] })).inputs;
    const made = await set.create(v1);
    const stray = (await api.post("/ip_policy_rules", { ip_policy_id: P, cidr: "10.0.0.0/8", action: "allow" })).body;
    freshRun();
    const err = await set.delete(P, made.outs).catch((e: Error) => e);
    expect(err.message).toContain(
      `the policy holds 1 allow rule no preview of this stack showed (added since its last refresh, by hand, another stack or an interrupted up): 10.0.0.0/8 allow (${stray.id}); nothing was deleted`,
    );
    expect(await live(P)).toEqual(["10.0.0.0/8", "10.2.0.0/16"]);
    await api.delete(`/ip_policy_rules/${stray.id}`);
    const deny = (await api.post("/ip_policy_rules", { ip_policy_id: P, cidr: "10.3.0.0/16", action: "deny" })).body;
    freshRun();
    await set.delete(P, made.outs);
    expect(await live(P)).toEqual(["10.3.0.0/16"]);
    await api.delete(`/ip_policy_rules/${deny.id}`);
  });

  it("a policy the account does not have: the error says to check ipPolicyId, not to run up again", async () => {
    freshRun();
    const inputs = (
      await set.check({}, { ipPolicyId: "ipp_nosuchpolicy", rules: [{ cidr: "10.0.0.0/8", action: "allow" }] })
    ).inputs;
    const err = await set.create(inputs).catch((e: Error) => e);
    expect(err.message).toMatch(
      /create IP policy rule 10\.0\.0\.0\/8: HTTP 404 .*; the account has no IP policy ipp_nosuchpolicy: check ipPolicyId \(and the account the API key is of\), then run `pulumi up` again$/,
    );
  });

  it("a description not known at preview: the plan still names the deny rule up deletes", async () => {
    freshRun();
    const P = emu.fixtures.ipPolicies[1];
    const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
    const urn = "urn:pulumi:dev::p::accessctl:index:IpPolicyRuleSet::s";
    const said: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    (process.stderr as unknown as { write: (s: unknown) => boolean }).write = (chunk: unknown) => (
      said.push(String(chunk)),
      true
    );
    try {
      const first = (
        await set.check({}, { ipPolicyId: P, rules: [{ cidr: "10.0.0.0/8", action: "allow", description: "office" }] })
      ).inputs;
      const made = await set.create(first);
      const recorded = {
        ...made.outs,
        rules: {
          ...made.outs.rules,
          "10.66.0.0/16": {
            id: "ipr_byhand",
            cidr: "10.66.0.0/16",
            action: "deny",
            description: "block scanner",
            metadata: "",
            uri: "u",
            createdAt: "t",
          },
        },
      };
      said.length = 0;
      const preview = (
        await set.check(first, {
          ipPolicyId: P,
          rules: [{ cidr: "10.0.0.0/8", action: "allow", description: UNKNOWN }],
          __urn: urn,
        })
      ).inputs;
      await set.diff(P, recorded, preview);
      const plan = said.join("");
      expect(plan).toContain('- 10.66.0.0/16 deny (ipr_byhand), description "block scanner"');
      expect(plan).toContain('~ 10.0.0.0/8: description "office" → (known at update)');
      // And with the CIDRs themselves unknown: every rule it holds, each of which up may change or delete.
      said.length = 0;
      const unknownCidrs = (
        await set.check(first, { ipPolicyId: P, rules: [{ cidr: UNKNOWN, action: "allow" }], __urn: urn })
      ).inputs;
      await set.diff(P, recorded, unknownCidrs);
      expect(said.join("")).toMatch(
        /the rules are not known yet .* may change or delete any of the 2 it holds now\n\s+\? 10\.0\.0\.0\/8 allow \(ipr_\w+\), description "office"\n\s+\? 10\.66\.0\.0\/16 deny \(ipr_byhand\)/,
      );
      freshRun();
      await set.delete(P, made.outs);
    } finally {
      (process.stderr as unknown as { write: typeof write }).write = write;
    }
  });
});
