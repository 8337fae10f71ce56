// Walks of the account (every rule of it: the API has no filter by policy) per provider process
// (issue 40), through the provider modules against the emulator over HTTP, in an account of enough
// rules to need several pages. A walk is counted as a first page of GET /ip_policy_rules in the
// emulator's request log (its next pages log as "GET /ip_policy_rules?…"). One test process plays
// each provider process in turn: what a process keeps is forgotten between them, and what the
// engines of one command share (the run record) is kept, each engine with an address of its own.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, RunningEmulator, startEmulator } from "../helpers/emulator";
import { compiled, configureRequest, newRun, serializedProvider } from "../helpers/provider";

const config = compiled("provider/config.js");
const URN = "urn:pulumi:dev::shop::pulumi-nodejs:dynamic/accessctl:IpPolicyRuleSet::office";
const SEEDED = 450; // with the set's rules: 5 pages of 100
let emu: RunningEmulator;
let set: any;

beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off", "--seed-rules", String(SEEDED)]);
  set = (await serializedProvider("ip-policy-rule-set")).provider;
});
afterAll(async () => {
  await emu.stop();
});

const state = () => ((globalThis as any)[Symbol.for("@accessctl/pulumi/state/v1")] ??= {}) as Record<string, unknown>;

/** A new provider process of the engine at `engine` (the preview's or the update's of one command): it keeps the command's run record only. */
async function processOf(engine: string): Promise<void> {
  for (const what of ["list-reads", "http-trust", "http-hints", "ownership", "limiter"]) delete state()[what];
  await config.configure(
    configureRequest({
      "accessctl:apiUrl": emu.url,
      "accessctl:apiKey": emu.adminToken,
      "accessctl:maxRequestsPerMinute": "1000000",
    }),
  );
  // The engine's address, as its command line gives it (engine.ts engineAddress); no `pulumi` process: the record stays in this test process.
  state().engine = { address: engine, command: null };
}

/** Walks (first pages of the rule list) and list pages the emulator logged while `fn` ran. */
async function counted(fn: () => Promise<unknown>, label = ""): Promise<{ walks: number; pages: number }> {
  const from = emu.stderr().length;
  await fn().catch((e: Error) => {
    throw new Error(`${label}: ${e.message}`);
  });
  await new Promise((r) => setTimeout(r, 100)); // the emulator writes its log line after the answer
  const lines = emu.stderr().slice(from).split("\n");
  return {
    walks: lines.filter((l) => / GET \/ip_policy_rules 200 /.test(l)).length,
    pages: lines.filter((l) => / GET \/ip_policy_rules(\?…)? 200 /.test(l)).length,
  };
}

const PREVIEW = "127.0.0.1:1001";
const UPDATE = "127.0.0.1:1002";
const rules = (n: number, action = "allow") =>
  Array.from({ length: n }, (_, i) => ({ cidr: `192.0.${i}.0/24`, action }));

describe("at most one walk of the account per provider process per command", () => {
  it("a new set's up, an update, a refresh, an up --refresh and a destroy of a set in an account of several pages", async () => {
    const p = emu.fixtures.ipPolicies[0];
    const declared = { ipPolicyId: p, rules: [{ cidr: "10.9.0.0/16", action: "deny" }, ...rules(2)], __urn: URN };

    // pulumi up of a new set: the preview's engine checks it; the update's checks and creates it.
    newRun();
    await processOf(PREVIEW);
    const preview = await counted(() => set.check({}, declared));
    await processOf(UPDATE);
    let made: any;
    const update = await counted(async () => (made = await set.create((await set.check({}, declared)).inputs)));
    expect(Object.keys(made.outs.rules)).toHaveLength(3);
    expect({ preview: preview.walks, update: update.walks }).toEqual({ preview: 1, update: 1 });
    expect(preview.pages).toBe(5);

    // pulumi up of a change: the preview's diff walks nothing; the update walks once.
    const changed = { ...declared, rules: [{ cidr: "10.9.0.0/16", action: "deny" }, ...rules(3)] };
    newRun();
    await processOf(PREVIEW);
    const changePreview = await counted(async () =>
      set.diff(p, made.outs, (await set.check(made.outs, changed)).inputs),
    );
    await processOf(UPDATE);
    const changeUpdate = await counted(async () => {
      const checked = (await set.check(made.outs, changed)).inputs;
      await set.diff(p, made.outs, checked);
      made = await set.update(p, made.outs, checked);
    }, "change");
    expect({ preview: changePreview.walks, update: changeUpdate.walks }).toEqual({ preview: 0, update: 1 });

    // pulumi refresh.
    newRun();
    await processOf(UPDATE);
    const refresh = await counted(() => set.read(p, made.outs));
    expect(refresh.walks).toBe(1);

    // pulumi up --refresh with a change: the update engine's refresh walks, and the update walks again: what a
    // write is checked against was listed after its operation began (a change made before it is seen).
    const again = { ...declared, rules: rules(3) };
    newRun();
    await processOf(UPDATE);
    const upRefresh = await counted(async () => {
      const read = (await set.read(p, made.outs)).props;
      const checked = (await set.check(read, again)).inputs;
      await set.diff(p, read, checked);
      made = await set.update(p, read, checked);
    }, "up --refresh");
    expect(upRefresh.walks).toBe(2);
    expect(Object.keys(made.outs.rules)).toHaveLength(3);

    // pulumi destroy.
    newRun();
    await processOf(UPDATE);
    const destroy = await counted(() => set.delete(p, made.outs));
    expect(destroy.walks).toBe(1);

    // pulumi up --skip-preview of a new set: its one engine sees the policy before its first rule, and after.
    newRun();
    await processOf(UPDATE);
    const alone = await counted(async () => (made = await set.create((await set.check({}, declared)).inputs)));
    expect(alone.walks).toBe(2); // the view before the first rule, and the walk after it that checks it (create.ts)
    newRun();
    await processOf(UPDATE);
    await set.delete(p, made.outs);
  }, 120_000);

  it("a rule added by hand after the preview's walk, before the update's first rule: the walk after that rule finds it, and the set undoes what it made", async () => {
    const p = emu.fixtures.ipPolicies[0];
    const declared = { ipPolicyId: p, rules: rules(2), __urn: URN };
    newRun();
    await processOf(PREVIEW);
    expect((await set.check({}, declared)).failures).toEqual([]); // the policy is empty
    const hand = await client(emu.url, emu.adminToken).post("/ip_policy_rules", {
      ip_policy_id: p,
      cidr: "198.51.100.0/24",
      action: "deny",
    });
    await processOf(UPDATE);
    const err = await set.create((await set.check({}, declared)).inputs).catch((e: Error) => e);
    expect(err.message).toContain(
      `the policy already holds 1 rule: 198.51.100.0/24 deny (${hand.body.id}); they came since this command listed the policy, so this set deleted the 1 rule it had made`,
    );
    const left = ((await client(emu.url, emu.adminToken).get("/ip_policy_rules")).body.ip_policy_rules as any[]).filter(
      (r) => r.ip_policy.id === p,
    );
    expect(left.map((r) => r.id)).toEqual([hand.body.id]);
    await client(emu.url, emu.adminToken).delete(`/ip_policy_rules/${hand.body.id}`);
  }, 60_000);
});
