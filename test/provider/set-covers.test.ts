// promise.ts covers(), which an update asks of each step (indexed: 5,000 steps against 5,000 shown), says
// what the plain definition says: some shown step of the same op, on the same rule as seen, to a
// target that fits (UNKNOWN_VALUE fits anything); `anyOf`: any create, or a step on a listed rule.
import { describe, expect, it } from "vitest";
import { compiled } from "../helpers/provider";

const { covers } = compiled("provider/ip-policy-rule-set/promise.js");
const { UNKNOWN_VALUE, isUnknownValue } = compiled("provider/ip-policy-rule-set/declared.js");

const sameRule = (a: any, b: any) =>
  a === b || (!!a && !!b && a.id === b.id && a.cidr === b.cidr && a.action === b.action && a.texts === b.texts);
const fits = (p: unknown, a: unknown) => isUnknownValue(p) || JSON.stringify(p) === JSON.stringify(a);
const plain = (shown: any[], step: any) =>
  shown.some((s) =>
    "anyOf" in s
      ? step.op === "create" || s.anyOf.some((r: any) => sameRule(r, step.rule))
      : s.steps.some(
          (p: any) =>
            p.op === step.op &&
            sameRule(p.rule, step.rule) &&
            ["cidr", "action", "texts"].every((k) => fits(p.to?.[k], step.to?.[k])),
        ),
  );

function random(seed: number) {
  let s = seed;
  const rnd = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const rule = () => ({
    id: pick(["ipr_1", "ipr_2", "ipr_3"]),
    cidr: pick(["10.0.0.0/8", "10.1.0.0/16"]),
    action: pick(["allow", "deny"]),
    texts: pick(["t1", "t2"]),
  });
  const to = () => ({
    ...(rnd() < 0.8 ? { cidr: pick(["10.0.0.0/8", "10.1.0.0/16", "10.2.0.0/16", UNKNOWN_VALUE]) } : {}),
    ...(rnd() < 0.7 ? { action: pick(["allow", "deny", UNKNOWN_VALUE]) } : {}),
    texts: pick(["t1", "t2", UNKNOWN_VALUE]),
  });
  const step = () => {
    const op = pick(["create", "retext", "move", "flip", "delete"]);
    return op === "create" ? { op, to: to() } : op === "delete" ? { op, rule: rule() } : { op, rule: rule(), to: to() };
  };
  const shown = Array.from({ length: 1 + Math.floor(rnd() * 2) }, () =>
    rnd() < 0.2
      ? { anyOf: Array.from({ length: Math.floor(rnd() * 3) }, rule) }
      : { steps: Array.from({ length: Math.floor(rnd() * 8) }, step) },
  );
  return { shown, steps: Array.from({ length: 20 }, step) };
}

describe("covers", () => {
  it("says what the plain definition says, for any shown steps and step", () => {
    let held = 0;
    for (let seed = 1; seed <= 500; seed++) {
      const { shown, steps } = random(seed);
      for (const step of steps) {
        const expected = plain(shown, step);
        held += expected ? 1 : 0;
        expect(covers(shown, step), `seed ${seed}: ${JSON.stringify(step)}`).toBe(expected);
      }
    }
    expect(held).toBeGreaterThan(100); // both answers were asked for
  });
});
