// Issue 17: recovery proves ownership. The real CLI on a project directory, against the emulator
// behind a fault proxy that loses chosen answers: a create that the service never acted on, or
// one whose answer was lost after it did. Recovery takes over or deletes only what this attempt
// can have made; an adopted object that must be replaced is replaced by a new one; a create that
// fails after its object exists leaves a resource that refresh and destroy can still run on.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { FaultProxy, startFaultProxy } from "../helpers/fault-proxy";
import { client, listAll, RunningEmulator, startEmulator } from "../helpers/emulator";
import { testStack } from "../helpers/stack";

let emu: RunningEmulator;
let proxy: FaultProxy;

beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  proxy = await startFaultProxy(emu.url);
});
afterAll(async () => {
  await proxy?.close();
  await emu?.stop();
});

/** A stack whose provider reaches the emulator through the fault proxy. */
function proxiedStack(name: string, extraConfig?: Record<string, { value: string }>) {
  return testStack({ project: inject("e2e"), emulator: { ...emu, url: proxy.url }, name, extraConfig });
}

const rules = () => listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules");
const keys = () => listAll(emu.url, emu.adminToken, "/api_keys", "keys");
const ADOPT_ADVICE =
  /rule (ipr_\w+) already holds this CIDR and (was made by [^\n]*its metadata says so|was not made by this resource)[^\n]*adoptId: "\1"[^\n]*ACCESSCTL_ADOPT_EXISTING=1/;

describe("a lost answer to a rule create (defect 1)", () => {
  it("never acted on: another stack's rule for the CIDR is not taken over; the 409 path's message; destroy leaves it", async () => {
    const policy = emu.fixtures.ipPolicies[0];
    const theirs = testStack({ project: inject("e2e"), emulator: emu, name: "other-team" });
    const ours = proxiedStack("lost-rule-create");
    try {
      const theirSpec = {
        rules: {
          block: { ipPolicyId: policy, cidr: "192.0.2.0/24", action: "deny", description: "other team's block" },
        },
      };
      const theirId = (await theirs.ok("up", theirSpec)).outputs!.rule_block.value.id;

      proxy.fail({ method: "POST", path: /^\/ip_policy_rules$/, when: "before" });
      const spec = {
        rules: { block: { ipPolicyId: policy, cidr: "192.0.2.0/24", action: "deny", description: "ours" } },
      };
      const up = await ours.run("up", spec);
      expect(proxy.failed).toContain("POST /ip_policy_rules 502");
      expect(up.ok).toBe(false);
      expect(up.output).toMatch(ADOPT_ADVICE);
      expect(up.output).toContain(theirId);
      const held = (await client(emu.url, emu.adminToken).get(`/ip_policy_rules/${theirId}`)).body;
      expect(held.description).toBe("other team's block");

      await ours.ok("destroy", spec);
      expect((await client(emu.url, emu.adminToken).get(`/ip_policy_rules/${theirId}`)).status).toBe(200);
      expect((await theirs.ok("preview", theirSpec)).changeSummary).toEqual({ same: 2 });
      await theirs.ok("destroy", theirSpec);
    } finally {
      proxy.failed.splice(0);
      theirs.cleanup();
      ours.cleanup();
    }
  });

  it("acted on: the rule this attempt made is taken over, with no duplicate", async () => {
    const policy = emu.fixtures.ipPolicies[1];
    const stack = proxiedStack("lost-rule-answer");
    try {
      // The gateway holds our create 1.5 s, the service makes the rule, the answer is lost. Another
      // create of the run, answered, tells the service's clock to the millisecond: the rule is
      // provably made after our create was sent.
      proxy.fail({
        method: "POST",
        path: /^\/ip_policy_rules$/,
        body: /198\.51\.100\.0/,
        when: "after",
        delayMs: 1500,
        answerDelayMs: 1100,
      });
      const spec = {
        rules: {
          block: { ipPolicyId: policy, cidr: "198.51.100.0/24", action: "deny", description: "ours" },
          warm: { ipPolicyId: policy, cidr: "198.51.101.0/24", action: "allow" },
        },
      };
      const up = await stack.ok("up", spec);
      expect(proxy.failed).toContain("POST /ip_policy_rules 502");
      const held = (await rules()).filter((r) => r.ip_policy.id === policy && r.cidr === "198.51.100.0/24");
      expect(held.map((r) => r.id)).toEqual([up.outputs!.rule_block.value.id]);
      expect((await stack.ok("preview", spec)).changeSummary).toEqual({ same: 3 });
      await stack.ok("destroy", spec);
      expect((await rules()).filter((r) => r.cidr === "198.51.100.0/24")).toEqual([]);
    } finally {
      proxy.failed.splice(0);
      stack.cleanup();
    }
  });
});

describe("a lost answer to a key create (defect 2)", () => {
  it("deletes only its own key (its marker), useless without its token; with the program's metadata, names the keys it may have made and deletes none; never another principal's", async () => {
    const member = client(emu.url, emu.memberToken);
    const theirs = (await member.post("/api_keys", { description: "ci deploy" })).body;
    expect(theirs.token).toEqual(expect.any(String));
    const probe = (await client(emu.url, emu.adminToken).post("/api_keys", { description: "probe" })).body;
    await client(emu.url, emu.adminToken).delete(`/api_keys/${probe.id}`);
    const admin: string = probe.owner_id;
    const theirsStillWorks = async () => {
      expect((await client(emu.url, emu.adminToken).get(`/api_keys/${theirs.id}`)).status).toBe(200);
      expect((await client(emu.url, theirs.token).get("/api_keys")).status).toBe(200);
    };
    const ours = () => keys().then((all) => all.filter((k) => k.description === "ci deploy" && k.id !== theirs.id));
    const stack = proxiedStack("lost-key-create");
    try {
      // Each run also creates a fresh key, answered: it tells that run's provider the service's clock
      // to the millisecond (declared with ownerId, so it does not tell who the caller is).
      const withWarmUp = (run: number, keys: Record<string, Record<string, unknown>>) => ({
        keys: { ...keys, [`warm${run}`]: { description: `warm-up ${run}`, ownerId: admin } },
      });
      const deploy = /"ci deploy"/;
      const spec = withWarmUp(1, { deploy: { description: "ci deploy" } });
      // Never acted on: nothing was made, and the other user's key is not named.
      proxy.fail({ method: "POST", path: /^\/api_keys$/, body: deploy, when: "before" });
      const lost = await stack.run("up", spec);
      expect(lost.ok).toBe(false);
      expect(lost.output).toMatch(
        /the answer to the create was lost, so its token is unknown: no key names this create \(its metadata would\), so it made none/,
      );
      expect(lost.output).not.toContain(theirs.id);
      await theirsStillWorks();

      // Acted on: the key whose marker names this create is its own, useless without its token: deleted;
      // the other user's identical key is neither named nor touched.
      proxy.fail({ method: "POST", path: /^\/api_keys$/, body: deploy, when: "after", delayMs: 1500 });
      const own = await stack.run("up", withWarmUp(2, { deploy: { description: "ci deploy" } }));
      expect(own.ok).toBe(false);
      expect(own.output).toMatch(
        /the answer to the create was lost, so its token is unknown: it made ak_\w+ \(its metadata names this create\), useless without its token, and deleted it again/,
      );
      expect(await ours()).toEqual([]);
      expect(own.output).not.toContain(theirs.id);
      await theirsStillWorks();

      // With the program's own metadata there is no marker: the key it made is named, not deleted
      // (nothing tells it from an identical key another stack made at the same moment); another principal's is never named.
      proxy.fail({ method: "POST", path: /^\/api_keys$/, body: deploy, when: "after", delayMs: 1500 });
      const named = await stack.run(
        "up",
        withWarmUp(3, { deploy: { description: "ci deploy", metadata: "team=ci", ownerId: admin } }),
      );
      expect(named.ok).toBe(false);
      const [orphan] = await ours();
      expect(orphan).toBeDefined();
      expect(named.output).toMatch(
        /It may have made this key, left as it is \(another stack's or user's identical key would look the same\): /,
      );
      expect(named.output).toContain(`${orphan.id} (owner ${admin}, created_at ${orphan.created_at})`);
      expect(named.output).not.toContain(theirs.id);
      await theirsStillWorks();
      await client(emu.url, emu.adminToken).delete(`/api_keys/${orphan.id}`);

      const owned = withWarmUp(4, { deploy: { description: "ci deploy", ownerId: admin } });
      const up = await stack.ok("up", owned);
      expect((await ours()).map((k) => k.id)).toEqual([up.outputs!.key_deploy.value.id]);
      await stack.ok("destroy", owned);
      await theirsStillWorks();
    } finally {
      proxy.failed.splice(0);
      stack.cleanup();
    }
  });
});

describe("an adopted object that must be replaced (defect 4)", () => {
  it("adopted by id: a rule whose action changes, a rule whose ipPolicyId changes and a key whose ownerId changes are each replaced by a new object; later runs are clean", async () => {
    const [from, to] = emu.fixtures.ipPolicies;
    const admin = client(emu.url, emu.adminToken);
    const flips = (
      await admin.post("/ip_policy_rules", { ip_policy_id: from, cidr: "203.0.113.0/24", action: "allow" })
    ).body;
    const moves = (
      await admin.post("/ip_policy_rules", { ip_policy_id: from, cidr: "203.0.113.64/26", action: "deny" })
    ).body;
    const key = (await admin.post("/api_keys", { description: "adopted key" })).body;
    const bot = emu.fixtures.bots[0];
    const stack = proxiedStack("adopt-replace");
    try {
      const spec = (action: string, ipPolicyId: string, ownerId: string) => ({
        rules: {
          flips: { adoptId: flips.id, ipPolicyId: from, cidr: "203.0.113.0/24", action },
          moves: { adoptId: moves.id, ipPolicyId, cidr: "203.0.113.64/26", action: "deny" },
        },
        keys: { k: { adoptId: key.id, ownerId, description: "adopted key" } },
      });
      const adopted = await stack.ok("up", spec("allow", from, key.owner_id));
      expect([
        adopted.outputs!.rule_flips.value.id,
        adopted.outputs!.rule_moves.value.id,
        adopted.outputs!.key_k.value.id,
      ]).toEqual([flips.id, moves.id, key.id]);

      const up = await stack.ok("up", spec("deny", to, bot));
      expect(up.summary!.resourceChanges).toMatchObject({ replace: 3 });
      const held = (cidr: string) =>
        rules().then((all) => all.filter((r) => r.cidr === cidr).map((r) => [r.ip_policy.id, r.id, r.action]));
      expect(await held("203.0.113.0/24")).toEqual([[from, up.outputs!.rule_flips.value.id, "deny"]]);
      expect(await held("203.0.113.64/26")).toEqual([[to, up.outputs!.rule_moves.value.id, "deny"]]);
      expect(up.outputs!.rule_flips.value.id).not.toBe(flips.id);
      expect(up.outputs!.rule_moves.value.id).not.toBe(moves.id);
      const keysHeld = (await keys()).filter((k) => k.description === "adopted key");
      expect(keysHeld.map((k) => [k.owner_id, k.id])).toEqual([[bot, up.outputs!.key_k.value.id]]);
      expect(up.outputs!.key_k.value.id).not.toBe(key.id);
      expect((await stack.ok("preview", spec("deny", to, bot))).changeSummary).toEqual({ same: 4 });
      expect((await stack.ok("up", spec("deny", to, bot))).summary!.resourceChanges).toEqual({ same: 4 });
      await stack.ok("destroy", spec("deny", to, bot));
      expect((await rules()).filter((r) => r.cidr.startsWith("203.0.113."))).toEqual([]);
    } finally {
      stack.cleanup();
    }
  });

  it("an adoptId that names no rule fails with one line that says to remove it", async () => {
    const admin = client(emu.url, emu.adminToken);
    const gone = (
      await admin.post("/ip_policy_rules", {
        ip_policy_id: emu.fixtures.ipPolicies[1],
        cidr: "203.0.113.128/25",
        action: "deny",
      })
    ).body;
    await admin.delete(`/ip_policy_rules/${gone.id}`);
    const stack = proxiedStack("adopt-gone");
    try {
      const up = await stack.run("up", {
        rules: {
          r: { adoptId: gone.id, ipPolicyId: emu.fixtures.ipPolicies[1], cidr: "203.0.113.128/25", action: "deny" },
        },
      });
      expect(up.ok).toBe(false);
      expect(up.output).toMatch(
        new RegExp(
          `adopt IP policy rule ${gone.id}: HTTP 404[^\\n]*adoptId "${gone.id}" names no existing rule: remove adoptId to let Pulumi create a new rule`,
        ),
      );
    } finally {
      stack.cleanup();
    }
  });
});

describe("a create that fails after its object exists (defect 9)", () => {
  it("shows the real error, and refresh and destroy of the partial resource work", async () => {
    const policy = emu.fixtures.ipPolicies[1];
    const rule = (
      await client(emu.url, emu.adminToken).post("/ip_policy_rules", {
        ip_policy_id: policy,
        cidr: "100.64.0.0/10",
        action: "deny",
        description: "by hand",
      })
    ).body;
    const stack = proxiedStack("partial-create");
    try {
      const spec = {
        rules: {
          r: { adoptId: rule.id, ipPolicyId: policy, cidr: "100.64.0.0/10", action: "deny", description: "managed" },
        },
      };
      proxy.fail({ method: "PATCH", path: /^\/ip_policy_rules\//, when: "before", status: 500 });
      const up = await stack.run("up", spec);
      expect(up.ok).toBe(false);
      expect(up.output).toMatch(
        new RegExp(`update IP policy rule ${rule.id}: HTTP 500 ERR_TEST_GATEWAY: injected 500`),
      );
      const held = stack.state().resources.find((r) => r.type.endsWith("IpPolicyRule"));
      expect(held).toMatchObject({ id: rule.id, outputs: { __provider: expect.any(String) } });

      const refresh = await stack.run("refresh", spec);
      expect(refresh.output).not.toMatch(/code must be a string/);
      expect(refresh.ok).toBe(true);
      const destroy = await stack.run("destroy", spec);
      expect(destroy.output).not.toMatch(/code must be a string/);
      expect(destroy.ok).toBe(true);
      expect((await client(emu.url, emu.adminToken).get(`/ip_policy_rules/${rule.id}`)).status).toBe(404);
    } finally {
      proxy.failed.splice(0);
      stack.cleanup();
    }
  });
});
