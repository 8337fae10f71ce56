// provider/access.ts, the access model, against a brute-force oracle on address spaces small enough
// to enumerate: IPv4 rules inside 10.1.2.0/24 and IPv6 rules inside 2001:db8::/120, every address of
// both checked (allowed = in some allow, in no deny). A fresh seed each run, printed; ACCESS_SEED
// replays one (fast-check prints the seed and the shrunk case of a failure).
import { execFileSync } from "node:child_process";
import * as path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { REPO } from "../helpers/emulator";
import { compiled } from "../helpers/provider";

const access = compiled("provider/access.js");
const SEED = Number(process.env.ACCESS_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.ACCESS_RUNS ?? 300);
console.log(`access property seed: ${SEED} (ACCESS_SEED=${SEED} replays it)`);

type Rule = { cidr: string; action: "allow" | "deny" };
const V4 = 0x0a010200n; // 10.1.2.0/24
const V6 = 0x20010db8000000000000000000000000n; // 2001:db8::/120
const v4Text = (n: bigint) => [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join(".");
const v6Text = (n: bigint) => `2001:db8::${(n & 255n).toString(16)}`;

/** A rule inside the small spaces: an offset and a prefix of 24..32 (IPv4) or 120..128 (IPv6). */
const rule = fc
  .record({
    v6: fc.boolean(),
    offset: fc.integer({ min: 0, max: 255 }),
    host: fc.integer({ min: 0, max: 8 }),
    allow: fc.boolean(),
  })
  .map(({ v6, offset, host, allow }): Rule => {
    const first = BigInt(offset) & ~((1n << BigInt(host)) - 1n);
    const address = v6 ? v6Text(V6 + first) : v4Text(V4 + first);
    return { cidr: `${address}/${(v6 ? 128 : 32) - host}`, action: allow ? "allow" : "deny" };
  });
const rules = fc.array(rule, { maxLength: 12 });

const rangeOf = (c: string) => {
  const parsed = access.parseCidr(c);
  return { v6: parsed.v6 as boolean, first: parsed.first as bigint, last: parsed.last as bigint };
};
const holds = (c: string, v6: boolean, a: bigint) => {
  const r = rangeOf(c);
  return r.v6 === v6 && r.first <= a && a <= r.last;
};
/** The oracle: the service's rule, address by address. */
const allowed = (rs: Rule[], v6: boolean, a: bigint) =>
  rs.some((r) => r.action === "allow" && holds(r.cidr, v6, a)) &&
  !rs.some((r) => r.action === "deny" && holds(r.cidr, v6, a));
const EVERY = [false, true].flatMap((v6) =>
  Array.from({ length: 256 }, (_, i) => ({ v6, a: (v6 ? V6 : V4) + BigInt(i) })),
);
const inSpace = (s: any, v6: boolean, a: bigint) => (v6 ? s.v6 : s.v4).some((c: string) => holds(c, v6, a));
const oracleCount = (test: (v6: boolean, a: bigint) => boolean, v6: boolean) =>
  BigInt(EVERY.filter((x) => x.v6 === v6 && test(x.v6, x.a)).length);

/** Every address agrees with `test`; counts exact; the CIDRs sorted, disjoint, no two mergeable (so minimal). */
function expectSpace(s: any, test: (v6: boolean, a: bigint) => boolean) {
  const wrong = EVERY.find(({ v6, a }) => inSpace(s, v6, a) !== test(v6, a));
  expect(
    wrong && `${wrong.v6 ? v6Text(wrong.a) : v4Text(wrong.a)}: ${test(wrong.v6, wrong.a) ? "missing" : "extra"}`,
  ).toBeUndefined();
  expect(s.v4Count).toBe(oracleCount(test, false));
  expect(s.v6Count).toBe(oracleCount(test, true));
  for (const list of [s.v4, s.v6]) {
    const rs = list.map(rangeOf);
    for (let i = 1; i < rs.length; i++) {
      expect(rs[i].first > rs[i - 1].last, `${list[i - 1]} and ${list[i]} overlap or are out of order`).toBe(true);
      const size = rs[i - 1].last - rs[i - 1].first + 1n;
      const siblings =
        rs[i].first === rs[i - 1].last + 1n &&
        rs[i].last - rs[i].first + 1n === size &&
        rs[i - 1].first % (2n * size) === 0n;
      expect(siblings, `${list[i - 1]} and ${list[i]} make one CIDR`).toBe(false);
    }
  }
}

describe("access model against a brute-force oracle (small spaces, every address)", () => {
  it("accessOf: allowed = in some allow and in no deny; minimal CIDRs; exact counts", () => {
    fc.assert(
      fc.property(rules, (rs) => expectSpace(access.accessOf(rs), (v6, a) => allowed(rs, v6, a))),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it("accessChange: opens = allowed after, not before; closes = allowed before, not after", () => {
    fc.assert(
      fc.property(rules, rules, (before, after) => {
        const { opens, closes } = access.accessChange(before, after);
        expectSpace(opens, (v6, a) => allowed(after, v6, a) && !allowed(before, v6, a));
        expectSpace(closes, (v6, a) => allowed(before, v6, a) && !allowed(after, v6, a));
      }),
      { seed: SEED, numRuns: RUNS / 2 },
    );
  });

  it("mayOpen: every address some other rules let the change open, and no other", () => {
    fc.assert(
      fc.property(rules, rules, rules, (before, after, others) => {
        const may = access.mayOpen(before, after);
        const opened = (ctx: Rule[], v6: boolean, a: bigint) =>
          allowed([...ctx, ...after], v6, a) && !allowed([...ctx, ...before], v6, a);
        const all: Rule[] = [
          { cidr: "0.0.0.0/0", action: "allow" },
          { cidr: "::/0", action: "allow" },
        ];
        expectSpace(may, (v6, a) => opened([], v6, a) || opened(all, v6, a));
        expect(EVERY.filter(({ v6, a }) => opened(others, v6, a) && !inSpace(may, v6, a))).toEqual([]);
      }),
      { seed: SEED, numRuns: RUNS / 3 },
    );
  });

  it("explainAccess: each allow's addresses let in, each deny's kept out, the allows behind each CIDR", () => {
    fc.assert(
      fc.property(rules, (rs) => {
        const x = access.explainAccess(rs);
        expect(x.space).toEqual(access.accessOf(rs));
        const inAllow = (v6: boolean, a: bigint) => rs.some((r) => r.action === "allow" && holds(r.cidr, v6, a));
        const counted = rs.map((r) =>
          BigInt(
            EVERY.filter(
              ({ v6, a }) => holds(r.cidr, v6, a) && (r.action === "allow" ? allowed(rs, v6, a) : inAllow(v6, a)),
            ).length,
          ),
        );
        expect(x.rules).toEqual(counted);
        for (const c of x.cidrs) {
          const { v6, first, last } = rangeOf(c.cidr);
          expect(c.count).toBe(last - first + 1n);
          const behind = rs.flatMap((r, i) =>
            r.action === "allow" &&
            rangeOf(r.cidr).v6 === v6 &&
            rangeOf(r.cidr).first <= last &&
            rangeOf(r.cidr).last >= first
              ? [i]
              : [],
          );
          expect(c.allows).toEqual(behind);
        }
      }),
      { seed: SEED, numRuns: RUNS / 3 },
    );
  });

  it("spaceOf, intersect, subtract and isEmpty", () => {
    const cidrs = fc.array(
      rule.map((r) => r.cidr),
      { maxLength: 8 },
    );
    fc.assert(
      fc.property(cidrs, cidrs, (a, b) => {
        const inAny = (list: string[]) => (v6: boolean, x: bigint) => list.some((c) => holds(c, v6, x));
        const [sa, sb] = [access.spaceOf(a), access.spaceOf(b)];
        expectSpace(sa, inAny(a));
        expectSpace(access.intersect(sa, sb), (v6, x) => inAny(a)(v6, x) && inAny(b)(v6, x));
        expectSpace(access.subtract(sa, sb), (v6, x) => inAny(a)(v6, x) && !inAny(b)(v6, x));
        expect(access.isEmpty(sa)).toBe(a.length === 0);
      }),
      { seed: SEED, numRuns: RUNS / 3 },
    );
  });

  it("shapesOf: the parts (CIDRs, or CIDRs except some) name the same addresses as the CIDRs, in no more words", () => {
    fc.assert(
      fc.property(rules, (rs) => {
        const s = access.accessOf(rs);
        for (const shape of access.shapesOf(s)) {
          const family = shape.v6 ? s.v6 : s.v4;
          let back = access.spaceOf([]);
          for (const p of shape.parts)
            back = access.spaceOf([
              ...back.v4,
              ...back.v6,
              ...access.subtract(access.spaceOf([p.cidr]), access.spaceOf(p.except ?? [])).v4,
              ...access.subtract(access.spaceOf([p.cidr]), access.spaceOf(p.except ?? [])).v6,
            ]);
          expect([...back.v4, ...back.v6]).toEqual(family);
          const words = shape.parts.reduce((n: number, p: any) => n + 1 + (p.except?.length ?? 0), 0);
          expect(words).toBeLessThanOrEqual(family.length);
        }
      }),
      { seed: SEED, numRuns: RUNS / 3 },
    );
  });
});

describe("access model: whole families and words", () => {
  const r = (cidr: string, action: "allow" | "deny" = "allow"): Rule => ({ cidr, action });

  it("counts of whole families are exact (bigint)", () => {
    const s = access.accessOf([r("0.0.0.0/0"), r("::/0"), r("10.5.0.0/16", "deny")]);
    expect(s.v4Count).toBe(4_294_901_760n);
    expect(s.v6Count).toBe(2n ** 128n);
    expect(s.v6).toEqual(["::/0"]);
    expect(s.v4).toHaveLength(16);
  });

  it("describeSpace: CIDRs with counts, a family in its shorter `except` form, `nothing`", () => {
    expect(access.describeSpace(access.spaceOf(["10.7.0.0/16"]))).toBe("10.7.0.0/16 (65,536 addresses)");
    expect(access.describeSpace(access.spaceOf(["192.0.2.1"]))).toBe("192.0.2.1/32 (1 address)");
    expect(access.describeSpace(access.accessOf([r("0.0.0.0/0"), r("10.5.0.0/16", "deny")]))).toBe(
      "0.0.0.0/0 except 10.5.0.0/16 (4,294,901,760 addresses)",
    );
    expect(access.describeSpace(access.spaceOf(["2001:db8::/48", "10.0.0.0/8"]))).toBe(
      "10.0.0.0/8 (16,777,216 addresses) and 2001:db8::/48 (1,208,925,819,614,629,174,706,176 addresses)",
    );
    expect(access.describeSpace(access.spaceOf([]))).toBe("nothing");
    const mixed = access.accessOf([
      r("10.0.0.0/8"),
      r("10.5.0.0/16", "deny"),
      r("10.7.0.0/16", "deny"),
      r("192.0.2.0/24"),
      r("198.51.100.0/24"),
    ]);
    expect(access.describeSpace(mixed)).toBe(
      "10.0.0.0/8 except (10.5.0.0/16, 10.7.0.0/16), 192.0.2.0/24, 198.51.100.0/24 (16,646,656 addresses)",
    );
  });

  it("a text that is no CIDR is an error that names it", () => {
    expect(() => access.accessOf([r("10.0.0.5/8")])).toThrow(/10\.0\.0\.5\/8.*host bits/);
  });

  it("CIDRs: canonical form (IPv4-mapped IPv6 as IPv4, IPv6 compressed) and order (IPv4 first, address, prefix)", () => {
    expect(access.canonicalCidr("::FFFF:10.0.0.0/104")).toBe("10.0.0.0/8");
    expect(access.canonicalCidr("2001:DB8:0:0::/32")).toBe("2001:db8::/32");
    const sorted = ["2001:db8::/32", "10.0.0.0/16", "10.0.0.0/8", "9.0.0.0/8"].sort(access.compareCidrs);
    expect(sorted).toEqual(["9.0.0.0/8", "10.0.0.0/8", "10.0.0.0/16", "2001:db8::/32"]);
  });
});

it("requiring the compiled access module loads nothing of http/, engine, run-record or config", () => {
  const script = `require(${JSON.stringify(path.join(REPO, "dist/provider/access.js"))}); console.log(JSON.stringify(Object.keys(require.cache)))`;
  const loaded: string[] = JSON.parse(execFileSync(process.execPath, ["-e", script], { encoding: "utf8" }));
  const ours = loaded
    .filter((f) => f.startsWith(path.join(REPO, "dist")))
    .map((f) => path.relative(path.join(REPO, "dist"), f));
  expect(ours).toContain("provider/access.js");
  expect(ours.filter((f) => /provider\/(http\/|engine|run-record|config)/.test(f))).toEqual([]);
  expect(ours.sort()).toEqual(["provider/access.js", "provider/messages.js", "provider/state.js"]);
});
