// The signed plan file's format (provider/ip-policy-rule-set/plan-file.ts), pure: a valid file verifies;
// every single-field edit, deletion and insertion of it, made mechanically by walking its JSON tree,
// is refused; equal texts give unequal digests; a step's digests come back only for the rules they were made for.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { compiled } from "../helpers/provider";

const planFile = compiled("provider/ip-policy-rule-set/plan-file.js");
const { bindSet, canonical, newPlan, planKeys, signed, verify, unbindSteps, bindRule, bindDeclared } = planFile;
const { accessMatches } = planFile;
const { seenStep, textsDigest } = compiled("provider/ip-policy-rule-set/promise.js");
const { UNKNOWN_VALUE } = compiled("provider/ip-policy-rule-set/declared.js");

const digest = textsDigest("the account's API key");
const member = (id: string, cidr: string, action: string, description = "") => ({
  id,
  cidr,
  action,
  description,
  metadata: "",
  uri: "u",
  createdAt: "t",
});
const declared = (cidr: string, action: string, description = "") => ({ cidr, action, description, metadata: "" });
const seen = (r: ReturnType<typeof member>) => ({ id: r.id, cidr: r.cidr, action: r.action, texts: digest(r) });
const see = (s: object) => seenStep(s, digest, (c: string) => c);

// A set's plan with a step of every kind, two rules with the same (empty) texts, and a takeover listing.
const a = member("ipr_a", "10.0.0.0/8", "allow");
const b = member("ipr_b", "10.5.0.0/16", "deny");
const c = member("ipr_c", "192.0.2.0/24", "allow", "office");
const e = member("ipr_e", "198.51.100.0/24", "allow");
const wanted = [
  declared("10.0.0.0/8", "allow", "now described"),
  declared("10.5.0.0/16", "allow"),
  declared("172.16.0.0/12", "deny"),
  declared("203.0.113.0/24", "allow"),
];
const steps = [
  { op: "create", to: wanted[2] },
  { op: "retext", rule: a, to: wanted[0] },
  { op: "move", rule: c, to: wanted[3] },
  { op: "flip", rule: b, to: wanted[1] },
  { op: "delete", rule: e },
];
const set = {
  policy: "ipp_1",
  from: [a, b, c, e].map(seen),
  declared: wanted.map((d) => ({ cidr: d.cidr, action: d.action, texts: digest(d) })),
  shown: { steps: steps.map(see) },
  takeover: ["ipr_x"],
};
const URN = "urn:pulumi:prod::shop::accessctl:index:IpPolicyRuleSet::office";
const URN2 = "urn:pulumi:prod::shop::accessctl:index:IpPolicyRuleSet::lab"; // the same plan, no takeover: its access
const { takeover: _taken, ...plain } = set;
const keys = planKeys("the pipeline's secret");

function validFile() {
  const plan = newPlan(keys, "4242-1234567");
  plan.sets[URN] = bindSet({ keys, nonce: plan.nonce, policy: "ipp_1" }, set, true);
  plan.sets[URN2] = bindSet({ keys, nonce: plan.nonce, policy: "ipp_1" }, plain, true);
  plan.written = "2026-11-27T21:00:00.000Z";
  return { plan, text: signed(keys, plan) };
}

/** Every single-field edit, deletion and insertion of `value`, each as the whole value changed once, with where. */
function mutations(value: unknown, at = "file"): { at: string; value: unknown }[] {
  const out: { at: string; value: unknown }[] = [];
  const edits = (v: unknown): unknown[] => {
    if (typeof v === "string")
      return [
        `${v}x`,
        v.slice(1),
        v.length ? v.replace(/./, (ch) => (ch === "0" ? "1" : "0")) : "0",
        v.toUpperCase() === v ? `${v}A` : v.toUpperCase(),
        1,
        true,
        null,
        [v],
        { v },
      ];
    if (typeof v === "boolean") return [!v, String(v), v ? 1 : 0, null];
    if (typeof v === "number") return [v + 1, String(v), null];
    return [null, "x", Array.isArray(v) ? {} : []];
  };
  for (const x of edits(value)) out.push({ at: `${at} := ${JSON.stringify(x)}`, value: x });
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      out.push({ at: `${at}[${i}] deleted`, value: value.filter((_, j) => j !== i) });
      out.push({ at: `${at}[${i}] repeated`, value: [...value.slice(0, i + 1), item, ...value.slice(i + 1)] });
      for (const m of mutations(item, `${at}[${i}]`))
        out.push({ at: m.at, value: value.map((y, j) => (j === i ? m.value : y)) });
    });
    out.push({ at: `${at}[] inserted`, value: [...value, value[0] ?? "x"] });
  } else if (value !== null && typeof value === "object") {
    const o = value as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      const { [k]: _gone, ...rest } = o;
      out.push({ at: `${at}.${k} deleted`, value: rest });
      out.push({ at: `${at}.${k} renamed`, value: { ...rest, [`${k}_`]: o[k] } });
      for (const m of mutations(o[k], `${at}.${k}`)) out.push({ at: m.at, value: { ...o, [k]: m.value } });
    }
    out.push({ at: `${at}.extra inserted`, value: { ...o, extra: "x" } });
    out.push({ at: `${at}.anyOf inserted`, value: { ...o, anyOf: [] } });
  }
  return out;
}

/** Every field deleted, renamed or given a value of another JSON type, and an extra field in every object: each as the whole value changed once. */
function shapeMutations(value: unknown, at = "file"): { at: string; value: unknown }[] {
  const other = (v: unknown) =>
    typeof v === "string" ? 1 : typeof v === "boolean" ? "true" : Array.isArray(v) ? {} : [];
  const out: { at: string; value: unknown }[] = [];
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      out.push({
        at: `${at}[${i}] := ${JSON.stringify(other(item))}`,
        value: value.map((y, j) => (j === i ? other(item) : y)),
      });
      for (const m of shapeMutations(item, `${at}[${i}]`))
        out.push({ at: m.at, value: value.map((y, j) => (j === i ? m.value : y)) });
    });
  } else if (value !== null && typeof value === "object") {
    const o = value as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      const { [k]: _gone, ...rest } = o;
      out.push(
        { at: `${at}.${k} deleted`, value: rest },
        { at: `${at}.${k} renamed`, value: { ...rest, [`${k}_`]: o[k] } },
      );
      out.push({ at: `${at}.${k} := ${JSON.stringify(other(o[k]))}`, value: { ...o, [k]: other(o[k]) } });
      for (const m of shapeMutations(o[k], `${at}.${k}`)) out.push({ at: m.at, value: { ...o, [k]: m.value } });
    }
    out.push({ at: `${at}.extra inserted`, value: { ...o, extra: "x" } });
  }
  // The MAC is made again below; a set's entry deleted or under another URN is a well-formed file (of another plan).
  return out.filter((m) => !/^file\.mac |^file\.sets\.[^.]+ (deleted|renamed)$/.test(m.at));
}

describe("the signed plan file", () => {
  it("verifies as written, canonical JSON on one line", () => {
    const { plan, text } = validFile();
    const found = verify(keys, text);
    expect(found.refused).toBeUndefined();
    expect(found.plan.sets[URN].steps.map((s: { op: string }) => s.op)).toEqual([
      "create",
      "retext",
      "move",
      "flip",
      "delete",
    ]);
    expect(text).toBe(`${canonical({ ...plan, mac: found.plan.mac })}\n`);
    expect(text.split("\n")).toHaveLength(2);
  });

  it("refuses every single-field edit, deletion and insertion anywhere in it (and its MAC re-made without the key does not help)", () => {
    const { text } = validFile();
    const all = mutations(JSON.parse(text));
    expect(all.length).toBeGreaterThan(800);
    // The access effect is walked too: each of its CIDRs edited, deleted, repeated.
    expect(all.filter((m) => /\.access\.(opens|closes)\[\d\]/.test(m.at)).length).toBeGreaterThan(40);
    const accepted = all.filter((m) => verify(keys, `${canonical(m.value)}\n`).plan !== undefined).map((m) => m.at);
    expect(accepted).toEqual([]);
    // Each refusal is typed: the key, a change, or not a plan; never a plan.
    for (const m of all.slice(0, 200))
      expect(["another key", "changed", "older", "not a plan"]).toContain(
        verify(keys, `${canonical(m.value)}\n`).refused,
      );
  });

  it("reads strictly even what its key signed: a missing, extra or mistyped field anywhere is refused, naming it", () => {
    const { text } = validFile();
    const shapes = shapeMutations(JSON.parse(text));
    expect(shapes.length).toBeGreaterThan(200);
    const resigned = (v: any) => {
      const { mac: _mac, ...body } = v;
      return signed(keys, body);
    };
    const accepted = shapes.filter((m) => verify(keys, resigned(m.value)).plan !== undefined).map((m) => m.at);
    expect(accepted).toEqual([]);
    const missing = JSON.parse(text);
    delete missing.sets[URN].steps[2].to.cidr;
    expect(verify(keys, resigned(missing))).toEqual({
      refused: "not a plan",
      detail: `file.sets[${JSON.stringify(URN)}].steps[2].to.cidr: missing`,
    });
    const anyOf = JSON.parse(text);
    anyOf.sets[URN].anyOf = [];
    expect(verify(keys, resigned(anyOf)).detail).toBe(
      `file.sets[${JSON.stringify(URN)}].anyOf: not a field of a plan file`,
    );
  });

  it("carries the access effect its preview showed: minimal canonical CIDRs, read strictly, \
equal to what its rules do", () => {
    const { plan, text } = validFile();
    const access = { opens: ["10.5.0.0/16", "203.0.113.0/24"], closes: ["192.0.2.0/24", "198.51.100.0/24"] };
    expect(plan.sets[URN2].access).toEqual(access);
    expect(verify(keys, text).plan.sets[URN2].access).toEqual(access);
    expect(accessMatches(plan.sets[URN2])).toBe(true);
    expect(accessMatches(plan.sets[URN])).toBe(true);
    const resigned = (edit: (v: any) => void) => {
      const v = JSON.parse(text);
      edit(v.sets[URN2]);
      const { mac: _mac, ...body } = v;
      return { checked: verify(keys, signed(keys, body)), set: v.sets[URN2] };
    };
    const at = `file.sets[${JSON.stringify(URN2)}].access`;
    const expected = "expected a minimal sorted list of canonical CIDRs";
    // The same addresses written another way: two halves, a host address, out of order: not the model's list.
    const detail = (field: "opens" | "closes", cidrs: string[]) =>
      resigned((x) => (x.access[field] = cidrs)).checked.detail;
    expect(detail("opens", ["10.5.0.0/17", "10.5.128.0/17", "203.0.113.0/24"])).toBe(`${at}.opens: ${expected}`);
    expect(detail("closes", ["192.0.2.1/24", "198.51.100.0/24"])).toBe(`${at}.closes: ${expected}`);
    expect(detail("opens", ["203.0.113.0/24", "10.5.0.0/16"])).toBe(`${at}.opens: ${expected}`);
    // Well-formed, signed, and not what its rules do (a smaller opening written beside the same steps): found apart.
    const smaller = resigned((x) => (x.access.opens = ["10.5.0.0/16"]));
    expect(smaller.checked.plan).toBeDefined();
    expect(accessMatches(smaller.checked.plan.sets[URN2])).toBe(false);
    // A set its preview did not know, and a takeover (which writes nothing), carry no access.
    const b0 = { keys, nonce: plan.nonce, policy: "ipp_1" };
    const none = { opens: [], closes: [] };
    expect(bindSet(b0, { policy: "ipp_1", from: [], shown: { anyOf: [] } }, false).access).toEqual(none);
    expect(bindSet(b0, set, false)).toMatchObject({ takesOver: true, taken: ["ipr_x"], access: none });
    expect(bindSet(b0, { ...set, takeover: [] }, false)).toMatchObject({ takesOver: true, access });
    // IPv6 after IPv4, each minimal: an allow of 2001:db8::/32 beside a deny of one /48.
    const v6 = bindSet(
      b0,
      {
        ...plain,
        from: [],
        declared: [
          { cidr: "2001:db8::/32", action: "allow", texts: digest({}) },
          { cidr: "2001:db8::/48", action: "deny", texts: digest({}) },
          { cidr: "10.0.0.0/8", action: "allow", texts: digest({}) },
        ],
        shown: { steps: [] },
      },
      false,
    );
    expect(v6.access.opens).toEqual([
      "10.0.0.0/8",
      "2001:db8:1::/48",
      "2001:db8:2::/47",
      "2001:db8:4::/46",
      "2001:db8:8::/45",
      "2001:db8:10::/44",
      "2001:db8:20::/43",
      "2001:db8:40::/42",
      "2001:db8:80::/41",
      "2001:db8:100::/40",
      "2001:db8:200::/39",
      "2001:db8:400::/38",
      "2001:db8:800::/37",
      "2001:db8:1000::/36",
      "2001:db8:2000::/35",
      "2001:db8:4000::/34",
      "2001:db8:8000::/33",
    ]);
  });

  it("refuses the same content in another layout (white space, key order), another key's signature, and the old unsigned format", () => {
    const { text } = validFile();
    const value = JSON.parse(text);
    expect(verify(keys, JSON.stringify(value, null, 1)).refused).toBe("changed");
    expect(verify(keys, `${text.trimEnd()}`).refused).toBe("changed");
    const reordered = `{${Object.keys(value)
      .reverse()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(",")}}\n`;
    expect(verify(keys, reordered).refused).toBe("changed");
    expect(verify(planKeys("another secret"), text).refused).toBe("another key");
    expect(verify(keys, JSON.stringify({ version: 1, command: "1-2", written: "", sets: {} })).refused).toBe("older");
    // The format before the access effect: older, named.
    const older = { refused: "older", detail: "accessctl-plan/2, which holds no access effect" };
    expect(verify(keys, text.replace("accessctl-plan/3", "accessctl-plan/2"))).toEqual(older);
    expect(verify(keys, "not json").refused).toBe("not a plan");
  });

  it("gives rules with equal texts unequal digests, and unequal ones in another file (its nonce)", () => {
    const { plan } = validFile();
    const from = plan.sets[URN].from.map((r: { texts: string }) => r.texts);
    expect(seen(a).texts).toBe(seen(e).texts); // the promise's own digest: equal texts, equal digests (one process, never written)
    expect(new Set(from).size).toBe(from.length);
    const other = validFile().plan.sets[URN].from.map((r: { texts: string }) => r.texts);
    expect(other.filter((t: string) => from.includes(t))).toEqual([]);
  });

  it("keeps a set whose preview did not know a value as not known, with no steps", () => {
    const { plan } = validFile();
    const b0 = { keys, nonce: plan.nonce, policy: "ipp_1" };
    expect(bindSet(b0, { policy: "ipp_1", from: [], shown: { anyOf: [] } }, false)).toMatchObject({
      known: false,
      steps: [],
      declared: [],
    });
    const unknownText = {
      ...set,
      shown: { steps: [see({ op: "create", to: { ...wanted[2], description: UNKNOWN_VALUE } })] },
    };
    expect(bindSet(b0, unknownText, false)).toMatchObject({ known: false, steps: [] });
  });

  it("turns a step's digests back into the promise's terms only for the rules and targets they were made for", () => {
    const { plan } = validFile();
    const b0 = { keys, nonce: plan.nonce, policy: "ipp_1" };
    const now = { from: set.from, declared: set.declared };
    expect(unbindSteps(b0, plan.sets[URN].steps, now)).toEqual(set.shown.steps);
    // Another rule under the same id, or other declared texts: the digests stay as the file has them, and hold nothing.
    const forged = {
      from: set.from.map((r) => (r.id === "ipr_e" ? { ...r, action: "deny" } : r)),
      declared: set.declared.map((d) => ({ ...d, texts: digest({ description: "x" }) })),
    };
    const back = unbindSteps(b0, plan.sets[URN].steps, forged);
    expect(back.find((s: { op: string }) => s.op === "delete").rule).toEqual(bindRule(b0, set.from[3]));
    expect(back.find((s: { op: string }) => s.op === "create").to.texts).not.toBe(set.declared[2].texts);
    expect(bindDeclared(b0, set.declared[0]).texts).not.toBe(set.declared[0].texts);
  });
});

describe("the roles are declared, never guessed", () => {
  it("no code of the provider or its hosts reads another process's command line (/proc/<pid>/cmdline, ps … command)", () => {
    const files = (dir: string): string[] =>
      fs
        .readdirSync(dir, { withFileTypes: true })
        .flatMap((e) =>
          e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : [],
        );
    const root = path.join(__dirname, "../..");
    const readers = ["provider", "plugin", "sdk"]
      .flatMap((d) => files(path.join(root, d)))
      .filter((f) => /cmdline|"command="|engineCommand/.test(fs.readFileSync(f, "utf8")))
      .map((f) => path.relative(root, f));
    expect(readers).toEqual([]);
  });
});

describe("a set's delete under a job's role (setDeleteUnderRole): no plan shows one", () => {
  const { setDeleteUnderRole } = compiled("provider/ip-policy-rule-set/plan-file.js");
  it("refused when the job holds to a reviewed plan; else the delete goes on (the save role refuses every write)", () => {
    expect(setDeleteUnderRole("hold")).toEqual({ kind: "refuse", because: "no-plan-shows-a-delete" });
    expect(setDeleteUnderRole(undefined)).toEqual({ kind: "delete" });
    expect(setDeleteUnderRole("save")).toEqual({ kind: "delete" });
  });
});

describe("an IpPolicyRule's delete under a job's role (plan-hold.ts ruleDeleteUnderRole)", () => {
  const { ruleDeleteUnderRole } = compiled("provider/plan-hold.js");
  it("refused when the job holds to a reviewed plan; else the delete goes on", () => {
    expect(ruleDeleteUnderRole("hold")).toEqual({ kind: "refuse", because: "no-plan-holds-a-rule" });
    expect(ruleDeleteUnderRole(undefined)).toEqual({ kind: "delete" });
    expect(ruleDeleteUnderRole("save")).toEqual({ kind: "delete" });
  });
});
