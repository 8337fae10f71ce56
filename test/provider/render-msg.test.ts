// A server's msg shows only words, ids, small numbers and punctuation (provider/http/render-msg.ts; issue 39,
// the insider's leftovers): the key as decimal byte codes, or in 11-character pieces between words, passed
// scrub's 12-character window. A table of messages the emulator sends (they stay readable) and of hostile
// ones; a property over random keys, encodings, pieces of 1 to 64 characters and separators, seeded afresh
// each run (RENDER_SEED replays one; the seed is printed).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { traces } from "../helpers/leaks";
import { compiled } from "../helpers/provider";

const render = compiled("provider/http/render-msg.js");
const redact = compiled("provider/http/redact.js");

const SEED = Number(process.env.RENDER_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.RENDER_RUNS ?? 1500);
const SECRET_CHARS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
const KEY = "Ab3dEf5hIjKlMn0pQrStUvWx_yz-01234567890abcdefGHIJKLmnopq";

const codes = (s: string, base: number, sep = " ") => [...Buffer.from(s)].map((b) => b.toString(base)).join(sep);
/** The encodings of a key a hostile server may print it in (each with the separators it puts between codes). */
const ENCODINGS: Record<string, (s: string) => string> = {
  raw: (s) => s,
  hex: (s) => Buffer.from(s).toString("hex"),
  "hex, upper case": (s) => Buffer.from(s).toString("hex").toUpperCase(),
  base64: (s) => Buffer.from(s).toString("base64"),
  base64url: (s) => Buffer.from(s).toString("base64url"),
  "decimal codes": (s) => codes(s, 10),
  "decimal codes, by commas": (s) => codes(s, 10, ","),
  "decimal codes, dotted": (s) => codes(s, 10, "."),
  "octal codes": (s) => codes(s, 8),
};
const WORDS = ["and", "the", "key", "is", "a", "refused", "Token", "ERR", "with", "of"];
const SEPARATORS = [" ", "\n", "/", "-", ", ", ":", ".", "\t", " | ", "_", "", " … "];

/** Where `shown` gives `key` away: an 8-character window of an encoding, joined across all but letters and digits. */
function leaks(shown: string, key: string): string[] {
  const joined = shown.toLowerCase().replace(/[^a-z0-9]/g, "");
  const found: string[] = [];
  for (const [name, encode] of Object.entries(ENCODINGS)) {
    const form = encode(key)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, "");
    for (let i = 0; i + 8 <= form.length; i++) {
      if (joined.includes(form.slice(i, i + 8))) found.push(`${name}: ${form.slice(i, i + 8)}`);
    }
  }
  // Decimal (or octal) codes as numbers in a row, whatever stands between them: never 4 of the key's.
  const numbers = shown.match(/[0-9]+/g) ?? [];
  for (const base of [10, 8]) {
    const keyCodes = codes(key, base, ",");
    for (let i = 0; i + 4 <= numbers.length; i++) {
      const four = numbers.slice(i, i + 4);
      if (`,${keyCodes},`.includes(`,${four.join(",")},`)) found.push(`codes (base ${base}): ${four}`);
    }
  }
  // And the decodings a reader may try (base64, hex at each alignment; test/helpers/leaks.ts), of 8 letters and
  // digits of the key (a window with the key's own `-` or `_` holds fewer: those are separators here).
  return found.concat(traces(shown, key, 8).filter((t) => /^[A-Za-z0-9]{8}$/.test(t.slice(t.lastIndexOf(": ") + 2))));
}

describe("what a server's msg shows: words, ids, small numbers", () => {
  const windows = render.keyWindows([KEY]);
  const SAME = "(shown as it is)";
  const rows: [string, string, string][] = [
    // [msg, what the provider said of the request, shown]
    // An id is shown when the provider named it for the request (in `what`, or its path and body: failures.ts).
    ["IP policy ipp_abc123 already has a rule for 10.0.0.0/8: ipr_x7Yz", "create rule ipp_abc123 ipr_x7Yz", SAME],
    // One it did not name may carry 7 characters of a key (attack2.test.ts): "[…]".
    [
      "IP policy ipp_abc123 already has a rule for 10.0.0.0/8: ipr_x7Yz",
      "ipp_abc123",
      "IP policy ipp_abc123 already has a rule for 10.0.0.0/8: […]",
    ],
    // (7 digits in all, the CIDR the provider named aside: the last one is cut.)
    [
      'cidr "10.0.0.5/8" has host bits set; did you mean 10.0.0.0/8?',
      "",
      'cidr "10.0.0.5/8" has host bits set; did you mean […]?',
    ],
    ["rate limit exceeded for this account; retry after 5 s", "", SAME],
    ["no such path: /v2/ip_policy_rules/ipr_a", "read IP policy rule ipr_a", SAME],
    ["request bodies must be sent with 'Content-Type: application/json'", "", SAME],
    ["limit must be an integer from 1 to 1000", "", SAME],
    ["owner_id does not name a user or bot of this account: usr_9", "create API key for usr_9", SAME],
    // A number over 4 digits, and the digits past 7 in a msg: "[…]".
    ["request body is over 1048576 bytes", "", "request body is over […] bytes"],
    ["metadata is 5000 bytes; the limit is 4096 bytes", "", "metadata is 5000 bytes; the limit is […] bytes"],
    // The IP of the request as the provider named it is shown whole; another one only up to the digits.
    [
      "198.51.100.0/24 clashes with 203.0.113.0/24",
      "create IP policy rule 198.51.100.0/24",
      "198.51.100.0/24 clashes with 203.0.113.[…]",
    ],
    // Hostile: the key as decimal codes, in 11-character pieces between words, as hex split by "-".
    [`invalid key ${codes(KEY, 10)}`, "", "invalid key 65 98 51 […]  …"],
    [`seen ${KEY.match(/.{1,11}/g)!.join(" and ")}`, "", "seen […] and […] and […] and […] and […] and q"],
    [
      `bad key ${Buffer.from(KEY)
        .toString("hex")
        .match(/.{1,16}/g)!
        .join("-")}`,
      "",
      "bad key […]",
    ],
    // Lower-case runs of the key, each a word: one that shares 4 characters with the key is "[…]".
    ["the mnopq and rstuv", "", "the […] and […]"],
    ["the mno and rst and uvw and xyz", "", "the mno and rst and […] and xyz"],
    [`k ${"abcdefGHIJK".toLowerCase()}`, "", "k […]"],
    // Mixed case, long runs, non-ASCII: "[…]"; consecutive ones are one.
    ["token aB3kL9 zzzzzzzzzzzzzzzzzzzzzz Ωmega next", "", "token […]mega next"],
  ];
  for (const [msg, what, shown] of rows) {
    it(JSON.stringify(msg).slice(0, 90), () => {
      expect(render.renderMsg(msg, what, windows)).toBe(shown === SAME ? msg : shown);
    });
  }

  it("the two shapes of the insider's attack passed scrub and quote (window 12): they leak without renderMsg", () => {
    for (const msg of [`invalid key ${codes(KEY, 10)}`, `seen ${KEY.match(/.{1,11}/g)!.join(" and ")}`]) {
      expect(leaks(redact.quote(msg, [KEY]), KEY).length, msg).toBeGreaterThan(0);
      const rendered = redact.quote(msg, [KEY], undefined, (t: string) => render.renderMsg(t, "", windows));
      expect(leaks(rendered, KEY)).toEqual([]);
    }
  });

  it(`at most ${render.MAX_KEY_CHARS} characters of the key, one letter or a short word at a time`, () => {
    const letters = KEY.replace(/[^A-Za-z]/g, "");
    for (const msg of [letters.split("").join(" q "), letters.match(/[a-z]+|[A-Z][a-z]*/g)!.join(" and ")]) {
      const shown = render
        .renderMsg(msg, "", windows)
        .split(/[^A-Za-z]+/)
        .filter((w: string) => w && w !== "q");
      const fromKey = shown.filter((w: string) => !["and", "a", "I"].includes(w) && KEY.includes(w));
      expect(fromKey.join("").length, msg).toBeLessThanOrEqual(render.MAX_KEY_CHARS);
    }
  });

  it(`at most ${render.MAX_TOKENS} words, ids and numbers, then "…"`, () => {
    const out = render.renderMsg("and so on ".repeat(1000), "", windows);
    expect(out.split(" ").filter((w: string) => /\w/.test(w)).length).toBe(render.MAX_TOKENS);
    expect(out.endsWith(" …")).toBe(true);
  });
});

describe("the key in any encoding, in pieces of 1 to 64 characters between words, never shows", () => {
  const keyOf = (chars: number[]) => chars.map((c) => SECRET_CHARS[c]).join("");
  const shape = fc.record({
    key: fc.array(fc.integer({ min: 0, max: SECRET_CHARS.length - 1 }), { minLength: 57, maxLength: 57 }).map(keyOf),
    encoding: fc.constantFrom(...Object.keys(ENCODINGS)),
    pieces: fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 12 }),
    between: fc.array(
      fc.oneof(
        fc.constantFrom(...SEPARATORS),
        fc.constantFrom(...WORDS).map((w) => ` ${w} `),
      ),
      {
        minLength: 1,
        maxLength: 6,
      },
    ),
  });
  /** `text` cut into pieces of the given lengths (in turn), with the separators (in turn) between them. */
  const cut = (text: string, lengths: number[], between: string[]) => {
    const out: string[] = [];
    for (let at = 0, n = 0; at < text.length; n++) {
      out.push(text.slice(at, at + lengths[n % lengths.length]), between[n % between.length]);
      at += lengths[n % lengths.length];
    }
    return out.join("");
  };

  it(`property (seed ${SEED}, ${RUNS} runs): with the key's windows, and (numbers) by construction alone`, () => {
    console.log(`render-msg property: RENDER_SEED=${SEED}`);
    fc.assert(
      fc.property(shape, ({ key, encoding, pieces, between }) => {
        const text = `refused: ${cut(ENCODINGS[encoding](key), pieces, between)} end`;
        const shown = render.renderMsg(text, "create IP policy rule 10.0.0.0/8", render.keyWindows([key]));
        expect(leaks(shown, key)).toEqual([]);
        // (but when "refused" itself shares 4 characters with an encoding of the random key: then it is "[…]")
        const material = render.keyWindows([key]);
        if (!render.sharesKeyRun("refused", material)) expect(shown.startsWith("refused:")).toBe(true);
        // The numbers alone, without the key's windows: no 4 codes of it in a row, no 8 digits of its codes.
        const numbersOnly = render.renderMsg(text, "", render.keyWindows([])).replace(/[^0-9 ]/g, " ");
        const codeLeaks = leaks(numbersOnly, key).filter((l) => /^(codes|decimal|octal)/.test(l));
        expect(codeLeaks).toEqual([]);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });
});
