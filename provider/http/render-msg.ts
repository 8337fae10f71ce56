// What a server's `msg` may show, by construction (issue 39): words and id-shaped tokens, small numbers,
// punctuation, and what the provider itself already said of the request (a CIDR, an id of `what`); every
// other run becomes "[…]". Patterns (redact.ts scrub) find a key only in the encodings they know, at 12
// characters or more: decimal byte codes ("104 101 108 …") or 11-character pieces between words pass
// them. Here a run is kept for its shape, whatever it encodes:
// - a word: letters only, at most 15, written as words are (lower case, Capitalized or UPPER CASE), or
//   snake_case words (field names); a mixed-case or longer run is what keys are made of;
// - an id of the contract's shapes (`ipr_…`, `ak_…`, …; `op_…` for operation ids);
// - a number of at most 4 digits, and at most MAX_DIGITS digits of numbers in a whole msg: every
//   character a key is made of has a code of 2 or 3 digits (decimal or octal), so 7 digits decode to
//   3 bytes at most, whatever separates them;
// - at most MAX_TOKENS tokens in all.
// A key's letters can still fall into word shapes (a lower-case run of it, a piece of its hex between
// digits): so, last, the kept tokens joined (as a reader would join them, across everything between)
// are checked against every 8-character window of the credentials' encodings (text, hex, base64 at each
// alignment, decimal and octal codes), and the tokens of a window found become "[…]" too.
// Pure: no I/O, no process state (failures.ts gives it the credentials' windows).

/** A number run of the msg: at most this many digits in all (outside what the provider said itself). */
export const MAX_DIGITS = 7;
/** Words, ids and numbers kept: at most this many; the rest is cut ("…"). */
export const MAX_TOKENS = 60;
/** The width of a credential's window that the joined tokens may not hold. */
export const KEY_WINDOW = 8;
export const PLACEHOLDER = "[…]";
const MAX_WORD = 15;

/**
 * The 8-character windows (lower case) of `secrets`' encodings, for renderMsg; but those of `open`: public
 * parts of them (a key's token begins with its id, which messages name).
 */
export function keyWindows(secrets: string[], open: string[] = []): Set<string> {
  const out = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < KEY_WINDOW) continue;
    for (const form of encodings(secret)) {
      for (let i = 0; i + KEY_WINDOW <= form.length; i++) out.add(form.slice(i, i + KEY_WINDOW));
    }
  }
  for (const part of open) for (const window of keyWindows([part])) out.delete(window);
  return out;
}

/** `value`'s encodings, letters and digits only, lower case: as it is, hex, base64 at 3 alignments, codes. */
function encodings(value: string): string[] {
  const bytes = Buffer.from(value, "utf8");
  const out = [value, bytes.toString("hex")];
  for (let k = 0; k < 3; k++) {
    // (only the characters its own bytes decide: none shares bits with what stands before or after it)
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString("base64");
    out.push(encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6)));
  }
  out.push([...bytes].map((b) => b.toString(10)).join(""), [...bytes].map((b) => b.toString(8)).join(""));
  return out.map((f) => f.toLowerCase().replace(/[^a-z0-9]/g, ""));
}

type Kind = "word" | "id" | "number" | "known";

/** What a run of letters, digits and `_` is: kept as a kind, or not (undefined). */
function kindOf(run: string): Kind | undefined {
  if (/^(ak|ipr|ipp|ca|usr|bot|edgtls|op)_[A-Za-z0-9]{1,64}$/.test(run)) return "id";
  if (/^[0-9]{1,4}$/.test(run)) return "number";
  if (/^(IPv[46]|v[0-9])$/.test(run)) return "word";
  const parts = run.split("_");
  if (run.length > 40 || parts.some((p) => !isWord(p))) return undefined;
  return "word";
}

const isWord = (w: string): boolean => w.length <= MAX_WORD && /^([A-Z]?[a-z]+|[A-Z]+)$/.test(w);

interface Piece {
  text: string;
  kind?: Kind; // undefined: punctuation or space
}

/** `msg` (control characters already gone) as pieces: kept runs, placeholders, punctuation and spaces. */
function pieces(msg: string, known: string[]): Piece[] {
  const out: Piece[] = [];
  for (const chunk of msg.match(/\S+|\s+/g) ?? []) {
    // What the provider said of the request (its CIDR, an id), repeated by the server, tells nothing new.
    const core = /^([("'`]*)([\s\S]*?)([)"'`.,;:!?]*)$/.exec(chunk)!;
    if (core[2].length >= 3 && known.includes(core[2])) {
      out.push({ text: core[1] }, { text: core[2], kind: "known" }, { text: core[3] });
      continue;
    }
    for (const run of chunk.match(/[A-Za-z0-9_]+|[^A-Za-z0-9_]/g) ?? []) {
      const kind = /^[A-Za-z0-9_]/.test(run) ? kindOf(run) : undefined;
      if (kind) out.push({ text: run, kind });
      else if (/^[A-Za-z0-9_]/.test(run)) out.push({ text: PLACEHOLDER });
      else out.push({ text: /^\s+$/.test(run) ? " " : /^[!-~…→]$/.test(run) ? run : PLACEHOLDER });
    }
  }
  return out;
}

/** The tokens whose letters and digits, joined, hold a window of `windows`: their indexes. */
function tokensInWindows(tokens: Piece[], windows: Set<string>): Set<number> {
  const joined: string[] = [];
  const owner: number[] = [];
  tokens.forEach((t, i) => {
    for (const c of t.text.toLowerCase().replace(/[^a-z0-9]/g, "")) {
      joined.push(c);
      owner.push(i);
    }
  });
  const text = joined.join("");
  const hit = new Set<number>();
  for (let i = 0; i + KEY_WINDOW <= text.length; i++) {
    if (windows.has(text.slice(i, i + KEY_WINDOW))) for (let k = i; k < i + KEY_WINDOW; k++) hit.add(owner[k]);
  }
  return hit;
}

/**
 * A server's msg as an error shows it: only words, ids, small numbers (MAX_DIGITS in all), punctuation
 * and the tokens of `known` (what the provider says of the request itself), at most MAX_TOKENS of them;
 * and none that, joined with the others, holds a window of `windows` (keyWindows of the credentials).
 */
export function renderMsg(msg: string, known: string, windows: Set<string>): string {
  const said = (known.match(/\S+/g) ?? []).map((w) => w.replace(/^[("'`]+|[)"'`.,;:!?]+$/g, ""));
  const all = pieces(msg, said);
  let digits = 0;
  let kept = 0;
  let cut = all.length;
  for (let i = 0; i < all.length; i++) {
    const p = all[i];
    if (!p.kind) continue;
    if (++kept > MAX_TOKENS) {
      cut = i;
      break;
    }
    if (p.kind === "number" && (digits += p.text.length) > MAX_DIGITS) all[i] = { text: PLACEHOLDER };
  }
  const shown = all.slice(0, cut);
  // Until no window is left: a placeholder joins what stood on its two sides, as a reader would.
  for (let round = 0; round <= MAX_TOKENS; round++) {
    const tokens = shown.filter((p) => p.kind);
    const hit = tokensInWindows(tokens, windows);
    if (!hit.size) break;
    for (const i of hit) tokens[i].text = PLACEHOLDER;
    for (const t of tokens) if (t.text === PLACEHOLDER) t.kind = undefined;
  }
  return joinPieces(shown) + (cut < all.length ? " …" : "");
}

/** The pieces as text, each run of placeholders and what stands between them as one placeholder. */
function joinPieces(shown: Piece[]): string {
  let out = "";
  let pending = ""; // what followed the last placeholder, dropped if another comes before a kept token
  let afterPlaceholder = false;
  for (const p of shown) {
    if (p.text === PLACEHOLDER && !p.kind) {
      if (!afterPlaceholder) out += pending + PLACEHOLDER;
      pending = "";
      afterPlaceholder = true;
    } else if (!p.kind) {
      pending += p.text;
    } else {
      out += pending + p.text;
      pending = "";
      afterPlaceholder = false;
    }
  }
  return (out + pending).replace(/ {2,}/g, " ");
}
