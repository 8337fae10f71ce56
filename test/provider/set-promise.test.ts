// A preview is a promise, within one `pulumi` command: `pulumi up` previews in one engine and updates
// in another, each with its own provider processes, sharing the command's record (run-record.ts).
// Here both engines run in this process, one after the other, as `up --refresh` runs them: the
// preview's refresh, check and diff; then something changes (a hand, or a value of the program);
// then the update's refresh, check, diff and update. What a second attack found, each fixed.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { client, RunningEmulator, startEmulator } from "../helpers/emulator";
import { compiled, configureRequest, newRun, serializedProvider } from "../helpers/provider";

const config = compiled("provider/config.js");
const { UNKNOWN } = compiled("provider/validate.js");
const state = (): Record<string, any> => ((globalThis as any)[Symbol.for("@accessctl/pulumi/state/v1")] ??= {});
const URN = "urn:pulumi:dev::promise::accessctl:index:IpPolicyRuleSet::s";
let emu: RunningEmulator;
let set: any;
let home: string;
const savedHome = process.env.PULUMI_HOME;
// The `pulumi` process: this one (alive, as the engine watch asks), with its start time from /proc.
const startOf = (pid: number | "self") =>
  fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(")").pop()!.trim().split(" ")[19];
const started = startOf("self");
// A `pulumi preview` command before it: another process (this one's parent, alive too), with its start time.
const previewCommand = { pid: process.ppid, started: startOf(process.ppid) };

const TEAM_KEY = "team-key-of-promise-0123456789"; // stacks promise/* share it: their markers verify
beforeAll(async () => {
  process.env.ACCESSCTL_TEAM_KEY = TEAM_KEY;
  emu = await startEmulator(["--rate-limit", "off"]);
  set = (await serializedProvider("ip-policy-rule-set")).provider;
  const staging = { apiUrl: emu.url, apiKey: emu.adminToken }; // another profile of the same account
  // The emulator runs with --rate-limit off: lift the client's pace too (the tests' requests would wait on its 120 a minute).
  await config.configure(
    configureRequest({
      "accessctl:apiUrl": emu.url,
      "accessctl:apiKey": emu.adminToken,
      "accessctl:maxRequestsPerMinute": "100000",
      "accessctl:profiles": JSON.stringify({ staging }),
    }),
  );
});
afterAll(async () => {
  delete process.env.ACCESSCTL_TEAM_KEY;
  if (savedHome === undefined) delete process.env.PULUMI_HOME;
  else process.env.PULUMI_HOME = savedHome;
  delete state().engine;
  newRun();
  await emu.stop();
  fs.rmSync(home, { recursive: true, force: true });
});
beforeEach(() => {
  // Each test is a `pulumi` command of its own: its record in a Pulumi home of its own.
  if (home) fs.rmSync(home, { recursive: true, force: true });
  home = fs.mkdtempSync(path.join(os.tmpdir(), "set-promise-"));
  process.env.PULUMI_HOME = home;
});

/**
 * A new provider process of this test's `pulumi` command, started by its engine `engine` (a port that
 * takes no calls); `command`: the pulumi command (`pulumi preview` is a command of its own: another start time).
 */
function processOf(engine: "preview" | "update" | "setup", command: "up" | "preview" = "up"): void {
  newRun();
  for (const what of ["list-reads", "rule-set-checks"]) delete state()[what];
  const ports = { setup: 9, preview: 10, update: 11 };
  state().engine = {
    address: `127.0.0.1:${ports[engine]}`,
    process: command === "up" ? { pid: process.pid, started } : previewCommand,
  };
}

type Rule = { cidr: string; action: string; description?: string };
const api = () => client(emu.url, emu.adminToken);
const live = async (p: string) =>
  ((await api().get("/ip_policy_rules")).body.ip_policy_rules as any[])
    .filter((r) => r.ip_policy.id === p)
    .map((r) => `${r.cidr} ${r.action}`)
    .sort();

/** A set on `p` holding `rules`, made by an earlier command: its outputs (the state). */
async function existing(p: string, rules: Rule[]) {
  processOf("setup");
  const inputs = (await set.check({}, { ipPolicyId: p, rules, __urn: URN })).inputs;
  return (await set.create(inputs)).outs;
}

/** The preview's engine: refresh, check, diff (of `pulumi up`, or of a `pulumi preview` command). Returns the refreshed state. */
async function preview(
  p: string,
  state: any,
  rules: Rule[] | string,
  more: object = {},
  command: "up" | "preview" = "up",
) {
  processOf("preview", command);
  const refreshed = state ? (await set.read(p, state)).props : undefined;
  const news = (await set.check(refreshed ?? {}, { ipPolicyId: p, rules, __urn: URN, ...more })).inputs;
  if (refreshed) await set.diff(p, refreshed, news);
  return refreshed;
}

/** The update's engine: refresh (unless `refresh` is false: a plain `up`), check, diff, then update (or create). */
async function update(p: string, state: any, rules: Rule[], refresh = true) {
  processOf("update");
  const refreshed = state && refresh ? (await set.read(p, state)).props : state;
  const news = (await set.check(refreshed ?? {}, { ipPolicyId: p, rules, __urn: URN })).inputs;
  if (!refreshed) return (await set.create(news)).outs;
  await set.diff(p, refreshed, news);
  return (await set.update(p, refreshed, news)).outs;
}

async function cleanUp(p: string) {
  for (const r of (await api().get("/ip_policy_rules")).body.ip_policy_rules as any[])
    if (r.ip_policy.id === p) await api().delete(`/ip_policy_rules/${r.id}`);
}

it("a rule changed by hand after the preview showed its delete is not deleted (the preview saw another rule)", async () => {
  const p = emu.fixtures.ipPolicies[0];
  const state0 = await existing(p, [
    { cidr: "10.0.0.0/8", action: "allow" },
    { cidr: "10.5.0.0/16", action: "deny" },
  ]);
  const keep = [{ cidr: "10.0.0.0/8", action: "allow" }];
  await preview(p, state0, keep); // shows: - 10.5.0.0/16 deny
  await api().patch(`/ip_policy_rules/${state0.rules["10.5.0.0/16"].id}`, {
    cidr: "10.7.0.0/16",
    description: "block attacker",
  });
  const after = await update(p, state0, keep);
  expect(await live(p)).toEqual(["10.0.0.0/8 allow", "10.7.0.0/16 deny"]);
  expect(Object.keys(after.rules).sort()).toEqual(["10.0.0.0/8", "10.7.0.0/16"]); // recorded as it is: the next preview shows its delete
  await cleanUp(p);
});

it.each([false, true])(
  "a range closed by hand after the preview stays closed: the move onto a range around it is held back " +
    "(seed 519162520; refresh: %s)",
  async (refresh) => {
    const p = emu.fixtures.ipPolicies[0];
    await cleanUp(p); // a run before that failed leaves nothing in the way
    const recorded = [
      { cidr: "10.0.0.0/8", action: "allow" },
      { cidr: "192.0.2.128/25", action: "allow" },
    ];
    const state0 = await existing(p, recorded);
    const declared = [{ cidr: "192.0.2.0/24", action: "allow" }];
    // The preview shows ~ 10.0.0.0/8 → 192.0.2.0/24, - 192.0.2.128/25: it opens 192.0.2.0/25 only.
    await preview(p, state0, declared);
    await api().delete(`/ip_policy_rules/${state0.rules["192.0.2.128/25"].id}`); // a responder closes that range
    await update(p, state0, declared, refresh);
    expect(await live(p)).toEqual(["10.0.0.0/8 allow"]); // not 192.0.2.0/24: that would open 192.0.2.128/25 again
    await cleanUp(p);
  },
);

describe("another stack's allow on the policy", () => {
  const ownership = compiled("provider/ownership.js");
  /**
   * Stack promise/b's allow, its marker signed onto the rule's id with the team key (as its provider
   * writes it: the create, then the marker bound to the id it got); `forged`: the same claim, unsigned.
   */
  const theirs = async (p: string, cidr: string, forged = false) => {
    const m = { stack: "promise/b", resource: "IpPolicyRule::partner", attempt: "0" };
    const body = { ip_policy_id: p, cidr, action: "allow", metadata: ownership.markerText(m) };
    const made = await api().post("/ip_policy_rules", body);
    if (forged) return made;
    const bound = ownership.idBoundMarker(m, ownership.ruleIdentity(p, cidr, "allow"), made.body.id);
    return api().patch(`/ip_policy_rules/${made.body.id}`, { metadata: ownership.markerText(bound) });
  };
  const rules = [
    { cidr: "10.0.0.0/8", action: "allow" },
    { cidr: "10.5.0.0/16", action: "deny" },
  ];
  const keep = [{ cidr: "10.0.0.0/8", action: "allow" }];

  it("a deny delete the preview showed goes ahead once that preview's refresh saw the allow", async () => {
    const p = emu.fixtures.ipPolicies[0];
    const state0 = await existing(p, rules);
    await theirs(p, "192.0.2.0/24");
    await preview(p, state0, keep); // its refresh names 192.0.2.0/24 allow, left to stack promise/b
    await update(p, state0, keep);
    expect(await live(p)).toEqual(["10.0.0.0/8 allow", "192.0.2.0/24 allow"]);
    await cleanUp(p);
  });

  it("an allow whose marker claims their stack but does not verify is this set's drift: the refresh records it, up --refresh deletes it with the deny", async () => {
    const p = emu.fixtures.ipPolicies[0];
    const state0 = await existing(p, rules);
    await theirs(p, "0.0.0.0/0", true);
    const refreshed = await preview(p, state0, keep); // its refresh records 0.0.0.0/0 allow; its diff shows the delete
    expect(Object.keys(refreshed.rules)).toContain("0.0.0.0/0");
    await update(p, state0, keep);
    expect(await live(p)).toEqual(["10.0.0.0/8 allow"]);
    await cleanUp(p);
  });

  it("an allow of theirs added after the preview holds the deny delete back", async () => {
    const p = emu.fixtures.ipPolicies[0];
    const state0 = await existing(p, rules);
    await preview(p, state0, keep);
    await theirs(p, "192.0.2.0/24"); // after the preview: it cannot have counted on it
    await update(p, state0, keep);
    expect(await live(p)).toEqual(["10.0.0.0/8 allow", "10.5.0.0/16 deny", "192.0.2.0/24 allow"]);
    await cleanUp(p);
  });
});

it("the preview showed a deny created, the program's value changed to allow by the update: nothing is created", async () => {
  const p = emu.fixtures.ipPolicies[0];
  const state0 = await existing(p, [{ cidr: "10.0.0.0/8", action: "deny" }]);
  await preview(p, state0, [
    { cidr: "10.0.0.0/8", action: "deny" },
    { cidr: "192.0.2.0/24", action: "deny" },
  ]);
  await update(p, state0, [
    { cidr: "10.0.0.0/8", action: "deny" },
    { cidr: "192.0.2.0/24", action: "allow" },
  ]);
  expect(await live(p)).toEqual(["10.0.0.0/8 deny"]);
  await cleanUp(p);
});

it("a new set whose deny changed between preview and update: the allow it would carve is not created either", async () => {
  const p = emu.fixtures.ipPolicies[1];
  await preview(p, undefined, [
    { cidr: "10.0.0.0/8", action: "allow" },
    { cidr: "10.5.0.0/16", action: "deny" },
  ]);
  const made = await update(p, undefined, [
    { cidr: "10.0.0.0/8", action: "allow" },
    { cidr: "10.5.0.0/17", action: "deny" },
  ]);
  expect(await live(p)).toEqual([]);
  expect(made.rules).toEqual({});
  await cleanUp(p);
});

it("rules not known at preview: up may change the rules the preview listed, and no other (a deny added by hand after it is kept)", async () => {
  const p = emu.fixtures.ipPolicies[1];
  const state0 = await existing(p, [
    { cidr: "10.0.0.0/8", action: "allow" },
    { cidr: "10.9.0.0/16", action: "allow" },
  ]);
  await preview(p, state0, UNKNOWN); // lists: ? 10.0.0.0/8 allow, ? 10.9.0.0/16 allow
  await api().post("/ip_policy_rules", {
    ip_policy_id: p,
    cidr: "10.66.0.0/16",
    action: "deny",
    description: "incident 42",
  });
  await update(p, state0, [{ cidr: "10.0.0.0/8", action: "allow" }]);
  expect(await live(p)).toEqual(["10.0.0.0/8 allow", "10.66.0.0/16 deny"]); // 10.9 deleted (listed), 10.66 kept
  await cleanUp(p);
});

it("what the preview showed is done: a create, a delete and a change of text", async () => {
  const p = emu.fixtures.ipPolicies[0];
  const state0 = await existing(p, [
    { cidr: "10.0.0.0/8", action: "allow" },
    { cidr: "10.9.0.0/16", action: "deny" },
  ]);
  const next = [
    { cidr: "10.0.0.0/8", action: "allow", description: "office" },
    { cidr: "192.0.2.0/24", action: "deny" },
  ];
  await preview(p, state0, next);
  await update(p, state0, next);
  expect(await live(p)).toEqual(["10.0.0.0/8 allow", "192.0.2.0/24 deny"]);
  await cleanUp(p);
});

it("an allow changed by hand after the preview showed its delete and a deny's: the allow is left, and so is the deny (it would open the allow's range)", async () => {
  const p = emu.fixtures.ipPolicies[0];
  const state0 = await existing(p, [
    { cidr: "10.0.0.0/8", action: "allow" },
    { cidr: "10.5.0.0/16", action: "deny" },
  ]);
  await preview(p, state0, []);
  await api().patch(`/ip_policy_rules/${state0.rules["10.0.0.0/8"].id}`, { description: "still needed" });
  await update(p, state0, []);
  expect(await live(p)).toEqual(["10.0.0.0/8 allow", "10.5.0.0/16 deny"]);
  await cleanUp(p);
});

it("plain up: a deny deleted by hand before the up that adds an allow around it: the allow is held back", async () => {
  const p = emu.fixtures.ipPolicies[0];
  const state0 = await existing(p, [{ cidr: "11.5.0.0/16", action: "deny" }]);
  const next = [
    { cidr: "11.0.0.0/8", action: "allow" },
    { cidr: "11.5.0.0/16", action: "deny" },
  ];
  await api().delete(`/ip_policy_rules/${state0.rules["11.5.0.0/16"].id}`);
  processOf("preview"); // a plain up's preview: no refresh
  await set.diff(p, state0, (await set.check(state0, { ipPolicyId: p, rules: next, __urn: URN })).inputs);
  const after = await update(p, state0, next, false);
  expect(await live(p)).toEqual([]);
  expect(after.rules).toEqual({}); // recorded as it is: the next preview shows the deny created, then the allow
  await cleanUp(p);
});

it("plain up: an allow added by hand (not recorded) stays, so the deny the plan deletes stays too", async () => {
  const p = emu.fixtures.ipPolicies[1];
  const state0 = await existing(p, [
    { cidr: "10.5.0.0/16", action: "deny" },
    { cidr: "192.0.2.0/24", action: "allow" },
  ]);
  const next = [{ cidr: "192.0.2.0/24", action: "allow" }];
  await api().post("/ip_policy_rules", { ip_policy_id: p, cidr: "10.0.0.0/8", action: "allow" });
  processOf("preview");
  await set.diff(p, state0, (await set.check(state0, { ipPolicyId: p, rules: next, __urn: URN })).inputs);
  await update(p, state0, next, false);
  expect(await live(p)).toEqual(["10.0.0.0/8 allow", "10.5.0.0/16 deny", "192.0.2.0/24 allow"]);
  await cleanUp(p);
});

it("a set replaced on its policy (another profile) with takeOver: a rule added after the preview listed the policy is not taken", async () => {
  const p = emu.fixtures.ipPolicies[1];
  const rules = [{ cidr: "10.0.0.0/8", action: "allow" }];
  const state0 = await existing(p, rules);
  await preview(p, state0, rules, { profile: "staging", takeOver: true });
  const later = (
    await api().post("/ip_policy_rules", {
      ip_policy_id: p,
      cidr: "203.0.113.0/24",
      action: "allow",
      description: "other stack",
    })
  ).body;
  processOf("update");
  const news = (await set.check(state0, { ipPolicyId: p, rules, profile: "staging", takeOver: true, __urn: URN }))
    .inputs;
  const made = await set.create(news);
  expect(Object.keys(made.outs.rules)).toEqual(["10.0.0.0/8"]);
  expect((await api().get(`/ip_policy_rules/${later.id}`)).status).toBe(200);
  await cleanUp(p);
});

it("plain up: a deny the plan keeps was deleted by hand: the deny inside it that the plan deletes stays too", async () => {
  const p = emu.fixtures.ipPolicies[0];
  const state0 = await existing(p, [
    { cidr: "10.0.0.0/8", action: "allow" },
    { cidr: "10.5.0.0/16", action: "deny" },
    { cidr: "10.5.1.0/24", action: "deny" },
  ]);
  const next = [
    { cidr: "10.0.0.0/8", action: "allow" },
    { cidr: "10.5.0.0/16", action: "deny" },
  ];
  await api().delete(`/ip_policy_rules/${state0.rules["10.5.0.0/16"].id}`);
  processOf("preview"); // a plain up's preview: no refresh
  await set.diff(p, state0, (await set.check(state0, { ipPolicyId: p, rules: next, __urn: URN })).inputs);
  await update(p, state0, next, false);
  expect(await live(p)).toEqual(["10.0.0.0/8 allow", "10.5.1.0/24 deny"]);
  await cleanUp(p);
});

it("plain up: a deny whose description alone changed by hand opens nothing: the plan goes ahead", async () => {
  const p = emu.fixtures.ipPolicies[0];
  const state0 = await existing(p, [
    { cidr: "10.0.0.0/8", action: "allow" },
    { cidr: "10.5.0.0/16", action: "deny" },
    { cidr: "192.168.5.0/24", action: "deny" },
  ]);
  const next = [
    { cidr: "172.16.0.0/12", action: "allow" },
    { cidr: "192.168.5.0/24", action: "deny" },
  ];
  await api().patch(`/ip_policy_rules/${state0.rules["192.168.5.0/24"].id}`, { description: "noted by hand" });
  processOf("preview");
  await set.diff(p, state0, (await set.check(state0, { ipPolicyId: p, rules: next, __urn: URN })).inputs);
  await update(p, state0, next, false);
  expect(await live(p)).toEqual(["172.16.0.0/12 allow", "192.168.5.0/24 deny"]);
  await cleanUp(p);
});

describe("a signed plan file: the review job saves (ACCESSCTL_PLAN_SAVE), the deploy job holds to it (ACCESSCTL_PLAN_HOLD)", () => {
  let file: string;
  const env = process.env;
  /** The review job's commands from now on (the set was made by an up with no role). */
  const saving = () => {
    delete env.ACCESSCTL_PLAN_HOLD;
    env.ACCESSCTL_PLAN_SAVE = file = path.join(home, "plan.json");
  };
  /** The deploy job's. */
  const holding = () => {
    delete env.ACCESSCTL_PLAN_SAVE;
    env.ACCESSCTL_PLAN_HOLD = file;
  };
  afterEach(() => {
    for (const k of ["ACCESSCTL_PLAN_SAVE", "ACCESSCTL_PLAN_HOLD", "ACCESSCTL_PLAN_KEY", "ACCESSCTL_PLAN_FILE"])
      delete env[k];
  });

  it("the preview writes what it showed (the file private, one signed line, no text in it); the up does it and leaves the file as it was", async () => {
    const p = emu.fixtures.ipPolicies[0];
    const state0 = await existing(p, [
      { cidr: "10.0.0.0/8", action: "allow" },
      { cidr: "10.9.0.0/16", action: "deny" },
    ]);
    const next = [
      { cidr: "10.0.0.0/8", action: "allow", description: "door code 4711" },
      { cidr: "192.0.2.0/24", action: "deny" },
    ];
    saving();
    await preview(p, state0, next, {}, "preview");
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const written = fs.readFileSync(file, "utf8");
    expect(written).not.toContain("4711");
    const signature = expect.stringMatching(/^[0-9a-f]{64}$/);
    expect(JSON.parse(written)).toMatchObject({ format: "accessctl-plan/3", mac: signature });
    holding();
    await update(p, state0, next, false);
    expect(await live(p)).toEqual(["10.0.0.0/8 allow", "192.0.2.0/24 deny"]);
    expect(fs.readFileSync(file, "utf8")).toBe(written);
    await cleanUp(p);
  });

  it("a rule added by hand after the reviewed preview: a plain up leaves it, named; up --refresh refuses before any write (an older state)", async () => {
    const p = emu.fixtures.ipPolicies[1];
    const state0 = await existing(p, [{ cidr: "192.0.2.0/24", action: "allow" }]);
    const next = [{ cidr: "172.16.0.0/12", action: "allow" }];
    saving();
    await preview(p, state0, next, {}, "preview"); // shows ~ 192.0.2.0/24 → 172.16.0.0/12
    await api().post("/ip_policy_rules", { ip_policy_id: p, cidr: "10.7.0.0/16", action: "allow" });
    holding();
    const err = await update(p, state0, next, true).catch((e: Error) => e);
    expect(String(err)).toMatch(
      /ACCESSCTL_PLAN_HOLD \(.*plan\.json\) was made for an older state: the rules this stack records changed since its preview \(\+ 10\.7\.0\.0\/16 allow \(ipr_\w+\)\); nothing was changed/,
    );
    expect(await live(p)).toEqual(["10.7.0.0/16 allow", "192.0.2.0/24 allow"]);
    await update(p, state0, next, false); // no refresh: the rule is no one's this stack knows, and is left
    expect(await live(p)).toEqual(["10.7.0.0/16 allow", "172.16.0.0/12 allow"]);
    await cleanUp(p);
  });

  it("refuses a file made for another program or another stack, before any write", async () => {
    const p = emu.fixtures.ipPolicies[0];
    const state0 = await existing(p, [{ cidr: "10.0.0.0/8", action: "allow" }]);
    const reviewed = [
      { cidr: "10.0.0.0/8", action: "allow" },
      { cidr: "10.5.0.0/16", action: "deny" },
    ];
    saving();
    await preview(p, state0, reviewed, {}, "preview");
    holding();
    const program = await update(
      p,
      state0,
      [
        { cidr: "10.0.0.0/8", action: "allow" },
        { cidr: "10.6.0.0/16", action: "deny" },
      ],
      false,
    ).catch((e: Error) => e);
    expect(String(program)).toMatch(
      /was made for another program: the rules declared now differ from those of its preview \(\+ 10\.6\.0\.0\/16 deny, - 10\.5\.0\.0\/16 deny\)/,
    );
    saving();
    fs.rmSync(file); // a review of stack prod (one preview command writes one file; its sets, each by URN)
    await preview(p, state0, reviewed, { __urn: URN.replace(":dev::", ":prod::") }, "preview");
    holding();
    const stack = await update(p, state0, reviewed, false).catch((e: Error) => e);
    expect(String(stack)).toMatch(/was made for stack promise\/prod, not promise\/dev/);
    expect(await live(p)).toEqual(["10.0.0.0/8 allow"]);
    await cleanUp(p);
  });

  it("refuses an edited file (a wildcard for what it showed, a forged step), another pipeline secret, and a file made with no role", async () => {
    const p = emu.fixtures.ipPolicies[0];
    const state0 = await existing(p, [{ cidr: "10.0.0.0/8", action: "allow" }]);
    const reviewed = [
      { cidr: "10.0.0.0/8", action: "allow" },
      { cidr: "10.20.0.0/16", action: "allow" },
    ];
    const unreviewed = [...reviewed, { cidr: "0.0.0.0/0", action: "allow" }];
    env.ACCESSCTL_PLAN_KEY = "the pipeline's secret, held by both jobs";
    saving();
    await preview(p, state0, reviewed, {}, "preview");
    const good = fs.readFileSync(file, "utf8");
    holding();
    const attempts: [string, (plan: any) => void][] = [
      [
        "declared deleted, shown as anyOf",
        (plan) => {
          delete plan.sets[URN].declared;
          plan.sets[URN].anyOf = [];
        },
      ],
      [
        "a forged create with a digest copied from another entry",
        (plan) => {
          const s = plan.sets[URN];
          s.declared.push({ cidr: "0.0.0.0/0", action: "allow", texts: s.declared[0].texts });
          s.steps.push({ op: "create", to: { cidr: "0.0.0.0/0", action: "allow", texts: s.steps[0].to.texts } });
        },
      ],
    ];
    for (const [what, edit] of attempts) {
      const plan = JSON.parse(good);
      edit(plan);
      fs.writeFileSync(file, JSON.stringify(plan));
      const err = await update(p, state0, unreviewed, false).catch((e: Error) => e);
      expect(String(err), what).toMatch(
        /ACCESSCTL_PLAN_HOLD \(.*plan\.json\) was changed after its preview wrote it: its signature does not verify; nothing was changed/,
      );
    }
    fs.writeFileSync(file, good);
    env.ACCESSCTL_PLAN_KEY = "another pipeline secret";
    const key = await update(p, state0, reviewed, false).catch((e: Error) => e);
    expect(String(key)).toMatch(
      /was signed with another key than this job's \(ACCESSCTL_PLAN_KEY\); nothing was changed\. Set ACCESSCTL_PLAN_KEY/,
    );
    // From an insider's attack: a short plan key's MACs could be guessed from the file (its keyId): refused.
    env.ACCESSCTL_PLAN_KEY = "abc";
    const short = await update(p, state0, reviewed, false).catch((e: Error) => e);
    expect(String(short)).toContain("ACCESSCTL_PLAN_KEY must be at least 16 characters long (it has 3)");
    env.ACCESSCTL_PLAN_KEY = "another pipeline secret";
    fs.rmSync(file);
    const none = await update(p, state0, reviewed, false).catch((e: Error) => e);
    expect(String(none)).toMatch(/holds no plan \(no `pulumi preview` with ACCESSCTL_PLAN_SAVE wrote it\)/);
    expect(await live(p)).toEqual(["10.0.0.0/8 allow"]);
    await cleanUp(p);
  });

  it("the roles are declared: a save role writes nothing (any resource), both roles at once and the retired ACCESSCTL_PLAN_FILE are refused", async () => {
    const p = emu.fixtures.ipPolicies[0];
    const state0 = await existing(p, [{ cidr: "10.0.0.0/8", action: "allow" }]);
    const before = (await emu.stats()).byMethod;
    saving();
    // As both hosts run the set (provider/bounded/: each write through operation.ts inWriteOperation).
    processOf("update");
    const news = (
      await set.check(state0, { ipPolicyId: p, rules: [{ cidr: "10.1.0.0/16", action: "allow" }], __urn: URN })
    ).inputs;
    const saved = await compiled("provider/bounded/ip-policy-rule-set.js")
      .update(p, state0, news)
      .catch((e: Error) => e);
    expect(String(saved)).toBe(
      "Error: accessctl: ACCESSCTL_PLAN_SAVE is set: this job saves a plan for review and writes nothing; nothing was changed. " +
        "Run `pulumi preview` in it, and deploy in a job with ACCESSCTL_PLAN_HOLD=<the reviewed file> (`pulumi up`)",
    );
    const rule = compiled("provider/bounded/ip-policy-rule.js");
    const created = await rule.create({ ipPolicyId: p, cidr: "10.2.0.0/16", action: "allow" }).catch((e: Error) => e);
    expect(String(created)).toContain(
      "ACCESSCTL_PLAN_SAVE is set: this job saves a plan for review and writes nothing",
    );
    env.ACCESSCTL_PLAN_HOLD = file;
    expect(String(await update(p, state0, [], false).catch((e: Error) => e))).toContain(
      "ACCESSCTL_PLAN_SAVE and ACCESSCTL_PLAN_HOLD are both set",
    );
    delete env.ACCESSCTL_PLAN_SAVE;
    delete env.ACCESSCTL_PLAN_HOLD;
    env.ACCESSCTL_PLAN_FILE = file;
    expect(String(await update(p, state0, [], false).catch((e: Error) => e))).toContain(
      "ACCESSCTL_PLAN_FILE is no longer read: each job of a reviewed pipeline says its role",
    );
    delete env.ACCESSCTL_PLAN_FILE;
    // From an insider's attack: a role variable that expanded to nothing would hold a deploy to no plan.
    env.ACCESSCTL_PLAN_HOLD = "";
    expect(String(await update(p, state0, [], false).catch((e: Error) => e))).toContain(
      "ACCESSCTL_PLAN_HOLD is set but empty; nothing was changed",
    );
    delete env.ACCESSCTL_PLAN_HOLD;
    const after = (await emu.stats()).byMethod;
    expect(["POST 2xx", "PATCH 2xx", "DELETE 2xx"].map((k) => (after[k] ?? 0) - (before[k] ?? 0))).toEqual([0, 0, 0]);
    expect(await live(p)).toEqual(["10.0.0.0/8 allow"]);
    await cleanUp(p);
  });
});
