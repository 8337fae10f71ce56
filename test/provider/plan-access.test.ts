// A reviewed plan's access effect (issue 42): what `up` under a plan file (ACCESSCTL_PLAN_HOLD) did
// against what the file says its preview showed (access.ts againstPlan, words in messages.ts), and the
// file's recorded opening as a bound on what an update may open (guard.ts reconcile, planOpens).
import { describe, expect, it } from "vitest";
import { compiled } from "../helpers/provider";

const { againstPlan, spaceOf } = compiled("provider/access.js");
const { againstPlanWords } = compiled("provider/messages.js");
const { plan } = compiled("provider/ip-policy-rule-set/plan.js");
const { reconcile } = compiled("provider/ip-policy-rule-set/guard.js");
const { becauseWords, say } = compiled("provider/ip-policy-rule-set/messages.js");
const { seenStep, textsDigest } = compiled("provider/ip-policy-rule-set/promise.js");
const { canonicalCidr } = compiled("provider/ip-policy-rule.js");

const change = (opens: string[], closes: string[] = []) => ({ opens: spaceOf(opens), closes: spaceOf(closes) });

describe("what an update did against its reviewed plan", () => {
  it.each([
    [
      "exactly",
      change(["10.7.0.0/16", "2001:db8::/32"], ["192.0.2.0/24"]),
      change(["10.7.0.0/16", "2001:db8::/32"], ["192.0.2.0/24"]),
      "access of ipp_1: did exactly what the plan showed: opens 10.7.0.0/16 (65,536 addresses) and 2001:db8::/32 " +
        "(79,228,162,514,264,337,593,543,950,336 addresses); closes 192.0.2.0/24 (256 addresses)",
    ],
    [
      "exactly, a text-only plan",
      change([]),
      change([]),
      "access of ipp_1: did exactly what the plan showed: access unchanged",
    ],
    [
      "less: the opening held back, the closing done",
      change(["172.16.0.0/12"], ["192.0.2.0/24"]),
      change([], ["192.0.2.0/24"]),
      "access of ipp_1: did less than the plan showed: held back opening 172.16.0.0/12 (1,048,576 addresses); " +
        "did: closes 192.0.2.0/24 (256 addresses)",
    ],
    [
      "less: part of an opening (a deny added by hand inside it since)",
      change(["10.7.0.0/16"]),
      change(["10.7.0.0/17"]),
      "access of ipp_1: did less than the plan showed: held back opening 10.7.128.0/17 (32,768 addresses); " +
        "did: opens 10.7.0.0/17 (32,768 addresses)",
    ],
    [
      "more: closed beyond the plan (a deny the plan kept was deleted by hand inside what it closes)",
      change([], ["10.0.0.0/9"]),
      change([], ["10.0.0.0/8"]),
      "access of ipp_1: did more than the plan showed: did: closes 10.0.0.0/8 (16,777,216 addresses); " +
        "beyond it, as the policy changed since the plan: closing 10.128.0.0/9 (8,388,608 addresses)",
    ],
  ])("%s", (_, planned, done, words) => {
    expect(againstPlanWords("ipp_1", againstPlan(planned, done))).toBe(words);
  });

  it("is a typed verdict: what was held back and what was done beyond the plan, as spaces", () => {
    const a = againstPlan(change(["172.16.0.0/12", "10.7.0.0/16"]), change(["10.7.0.0/16", "203.0.113.0/24"]));
    expect(a.verdict).toBe("more");
    expect([a.heldBack.opens.v4, a.beyond.opens.v4, a.done.opens.v4Count]).toEqual([
      ["172.16.0.0/12"],
      ["203.0.113.0/24"],
      65_792n,
    ]);
  });
});

describe("the plan file's recorded opening bounds what an update opens (planOpens)", () => {
  const m = (id: string, cidr: string, action: string) => ({
    id,
    cidr,
    action,
    description: "",
    metadata: "",
    uri: "u",
    createdAt: "t",
  });
  const d = (cidr: string, action: string) => ({ cidr, action, description: "", metadata: "" });
  const digest = textsDigest("k");
  const see = (s: object) => seenStep(s, digest, canonicalCidr);
  const A = m("ipr_A", "10.0.0.0/8", "allow");
  const D = m("ipr_D", "10.5.0.0/16", "deny");
  const declared = [d("10.0.0.0/8", "allow"), d("172.16.0.0/12", "allow")];
  const decide = (planOpens: string[] | undefined, promised = false) => {
    const p = plan([A, D], declared);
    return reconcile(p, {
      recorded: [A, D],
      declared,
      live: [A, D],
      see,
      promises: promised ? [[{ steps: p.steps.map(see) }]] : [],
      claimedElsewhere: new Set(),
      othersOf: new Map(),
      previewSaw: new Set(),
      adoptExisting: false,
      ...(planOpens ? { planOpens: spaceOf(planOpens) } : {}),
    });
  };

  it("a step opening outside the file's opening is held back before any write, naming the range; \
inside it, it is made", () => {
    // The plan deletes the deny (opens 10.5.0.0/16) and creates 172.16.0.0/12.
    expect(
      decide(undefined)
        .steps.map((s: { op: string }) => s.op)
        .sort(),
    ).toEqual(["create", "delete"]);
    const bounded = decide(["172.16.0.0/12"]);
    expect(bounded.steps.map((s: { op: string }) => s.op)).toEqual(["create"]);
    expect(bounded.heldBack.map(say)).toEqual(["delete 10.5.0.0/16 deny (ipr_D)"]);
    const why = "it would open 10.5.0.0/16 (65,536 addresses), which the preview did not show opening";
    expect(bounded.heldBecause.map(becauseWords)).toEqual([why]);
    expect(bounded.heldBecause).toEqual([{ kind: "opensUnshown", opens: spaceOf(["10.5.0.0/16"]) }]);
    expect(decide(["10.5.0.0/16", "172.16.0.0/12"]).heldBack).toEqual([]);
    // With this command's preview as a promise too, the file's opening still bounds it (both hold).
    expect(decide(["10.5.0.0/16"], true).heldBack.map(say)).toEqual(["create 172.16.0.0/12 allow"]);
  });
});
