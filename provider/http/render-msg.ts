// What a server's `msg` may show, by construction (issue 39): words, small numbers, punctuation, and what
// the provider itself already said of the request (a CIDR, an id of `what` or of the request's path and
// body); every other run becomes "[…]". Patterns (redact.ts scrub) find a key only in the encodings they
// know, at 12 characters or more: decimal byte codes ("104 101 108 …"), 11-character pieces between words,
// 7 characters per id-shaped token or per word split at case changes pass them. Here a run is kept for its
// shape, whatever it encodes:
// - a word: letters only, at most 15, written as words are (lower case, Capitalized or UPPER CASE), or
//   snake_case words (field names); a mixed-case or longer run is what keys are made of; and no word that
//   shares a run of KEY_RUN (4) characters, in any case, with an encoding of the request's own key;
// - an id of the contract's shapes (`ipr_…`, `ak_…`, …) only when the provider named it for this request
//   (`ids`): any other id-shaped token may carry 7 characters of a key and is "[…]";
// - a number of at most 4 digits, and at most MAX_DIGITS digits of numbers in a whole msg: every
//   character a key is made of has a code of 2 or 3 digits (decimal or octal), so 7 digits decode to
//   3 bytes at most, whatever separates them;
// - at most MAX_TOKENS tokens in all, and at most MAX_KEY_CHARS characters of credentials in all, counted
//   two ways (overBudget): words that stand in a row in a credential's form (its text, hex, base64, codes),
//   whatever the msg puts between them; and words that are pieces of the request's own key (2 characters
//   or more in its case, 3 in any; a one-letter word but `a`/`I`). A word past the budget is "[…]".
//   (Every key the process holds is in the first count, only the request's in the second: with a dozen
//   keys held, ordinary words of 2 or 3 letters are pieces of one of them all the time.)
// The kept tokens joined (as a reader would join them, across everything between) are checked last against
// every 8-character window of the credentials' encodings (text, hex, base64 at each alignment, decimal and
// octal codes), and the tokens of a window found become "[…]" too.
// What no rendering of free text can exclude: a hostile server choosing among ordinary words to spell a
// key (a bit per choice, steganography), or pieces of another key the process holds, out of order. What
// is enforced is the bound per error above. The service's error_code and msg are still shown because
// they are its reason for refusing, which a user needs to act on.
// Pure: no I/O, no process state (failures.ts gives it the credentials' material).

/** A number run of the msg: at most this many digits in all (outside what the provider said itself). */
export const MAX_DIGITS = 7;
/** Words, ids and numbers kept: at most this many; the rest is cut ("…"). */
export const MAX_TOKENS = 30;
/** Characters of the credentials (runs a token shares with one, literally) a whole msg may show. */
export const MAX_KEY_CHARS = 6;
/** A word sharing a run of this many characters (any case) with an encoding of a credential is "[…]". */
export const KEY_RUN = 4;
/** The width of a credential's window that the joined tokens may not hold. */
export const KEY_WINDOW = 8;
export const PLACEHOLDER = "[…]";
const MAX_WORD = 15;

/** What renderMsg keeps out of a msg, made of the credentials in use (keyWindows). */
export interface KeyMaterial {
  /** The KEY_WINDOW-character windows (lower case) of every encoding. */
  windows: Set<string>;
  /** The KEY_RUN-character windows (lower case) of the request's own keys' encodings: a word holding one is "[…]". */
  runs: Set<string>;
  /** Their forms (encodings), lower case, letters and digits: where runs of tokens are followed (overBudget). */
  forms: string[];
  /** The KEY_RUN-character windows (lower case) of their text and base64 forms alone (carriesKeyMaterial). */
  plainRuns: Set<string>;
  /** The request's own credentials as they are, and their base64 forms (lower case): what a token is counted in. */
  own: { texts: string[]; base64: string[] };
}

/** Every window of `width` characters of each of `texts`. */
function windowsOf(texts: string[], width: number): Set<string> {
  const out = new Set<string>();
  for (const text of texts) for (let i = 0; i + width <= text.length; i++) out.add(text.slice(i, i + width));
  return out;
}

/**
 * The material of `secrets` for renderMsg: windows of their encodings; but those of `open`, public parts of
 * them (a key's token begins with its id, which messages name).
 */
export function keyWindows(secrets: string[], open: string[] = [], ownKeys = secrets): KeyMaterial {
  const used = secrets.filter((s) => s.length >= KEY_WINDOW);
  const forms = used.flatMap(encodings);
  const openForms = open.flatMap(encodings);
  const minus = (all: Set<string>, out: Set<string>) => [...all].filter((w) => !out.has(w));
  const windows = new Set(minus(windowsOf(forms, KEY_WINDOW), windowsOf(openForms, KEY_WINDOW)));
  // (the request's own keys only: with a dozen keys held, one of them shares 4 letters with a word of most msgs)
  const ownForms = ownKeys.filter((s) => s.length >= KEY_WINDOW).flatMap(encodings);
  const runs = new Set(minus(windowsOf(ownForms, KEY_RUN), windowsOf(openForms, KEY_RUN)));
  const cut = (s: string) => open.reduce((t, part) => (part.length >= 3 ? t.split(part).join(" ") : t), s);
  const plain = used.flatMap((s) => encodings(s).filter((_, i) => i !== 1 && i < 5)); // (not hex nor codes)
  const plainRuns = new Set(minus(windowsOf(plain, KEY_RUN), windowsOf(openForms, KEY_RUN)));
  const mine = ownKeys.filter((s) => s.length >= KEY_WINDOW).map(cut);
  const own = { texts: mine, base64: mine.flatMap((s) => encodings(s).slice(2, 5)) };
  return { windows, runs, forms: used.map(cut).flatMap(encodings), plainRuns, own };
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
function kindOf(run: string, ids: string[] | "any"): Kind | undefined {
  if (/^(ak|ipr|ipp|ca|usr|bot|edgtls|op)_[A-Za-z0-9]{1,64}$/.test(run)) {
    return ids === "any" || ids.includes(run) ? "id" : undefined;
  }
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
function pieces(msg: string, known: string[], ids: string[] | "any"): Piece[] {
  const out: Piece[] = [];
  for (const chunk of msg.match(/\S+|\s+/g) ?? []) {
    // What the provider said of the request (its CIDR, an id), repeated by the server, tells nothing new.
    const core = /^([("'`]*)([\s\S]*?)([)"'`.,;:!?]*)$/.exec(chunk)!;
    if (core[2].length >= 3 && known.includes(core[2])) {
      out.push({ text: core[1] }, { text: core[2], kind: "known" }, { text: core[3] });
      continue;
    }
    for (const run of chunk.match(/[A-Za-z0-9_]+|[^A-Za-z0-9_]/g) ?? []) {
      const kind = /^[A-Za-z0-9_]/.test(run) ? kindOf(run, ids) : undefined;
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

type Ends = [string, number][];

/**
 * Key characters in a row: where `token` (lower case) stands in a credential's forms, continuing a run of
 * earlier tokens that ended just there (`ends`: form and place → characters so far), whatever stood
 * between them in the msg. Returns the longest run it makes and the ends it would add.
 */
function chainOf(token: string, forms: string[], ends: Map<string, number>): { run: number; next: Ends } {
  const t = token.toLowerCase();
  const next: Ends = [];
  let run = 0;
  forms.forEach((form, f) => {
    for (let at = form.indexOf(t); at >= 0; at = form.indexOf(t, at + 1)) {
      const n = (ends.get(`${f}:${at}`) ?? 0) + t.length;
      next.push([`${f}:${at + t.length}`, n]);
      run = Math.max(run, n);
    }
  });
  return { run, next };
}

/** The key characters a msg has shown so far: runs of tokens (chainOf), and tokens found in the request's key. */
interface Budget {
  ends: Map<string, number>;
  shown: number;
}
const newBudget = (): Budget => ({ ends: new Map(), shown: 0 });

/**
 * Whether `t` is a piece of the request's own credentials: 2 or more characters in its case, 3 in any; a
 * one-letter word but `a` and `I` (words of people's text) in its case.
 */
function ownPiece(t: string, own: KeyMaterial["own"]): boolean {
  const lower = t.toLowerCase();
  if (t.length === 1) return /^[B-Zb-z]$/.test(t) && t !== "I" && own.texts.some((k) => k.includes(t));
  return (
    own.texts.some((k) => k.includes(t)) ||
    (t.length >= 3 && [...own.texts.map((k) => k.toLowerCase()), ...own.base64].some((k) => k.includes(lower)))
  );
}

/**
 * Whether a token (a word) would show more than MAX_KEY_CHARS key characters: in a run of tokens that
 * stand in a row in a credential's form, or in all with the pieces of the request's own key; else noted.
 */
function overBudget(token: string, material: KeyMaterial, budget: Budget): boolean {
  const { run, next } = chainOf(token, material.forms, budget.ends);
  const shown = budget.shown + (ownPiece(token, material.own) ? token.length : 0);
  if (run > MAX_KEY_CHARS || shown > MAX_KEY_CHARS) return true;
  for (const [end, n] of next) budget.ends.set(end, Math.max(budget.ends.get(end) ?? 0, n));
  budget.shown = shown;
  return false;
}

/** Whether a word holds a KEY_RUN-character window (any case) of a credential's encodings. */
export function sharesKeyRun(word: string, material: KeyMaterial): boolean {
  const w = word.toLowerCase().replace(/[^a-z0-9]/g, "");
  for (let i = 0; i + KEY_RUN <= w.length; i++) if (material.runs.has(w.slice(i, i + KEY_RUN))) return true;
  return false;
}

/** Each token in turn, "[…]" past the limits: MAX_TOKENS (cut there), MAX_DIGITS, KEY_RUN, MAX_KEY_CHARS. */
function bound(all: Piece[], material: KeyMaterial): number {
  let [digits, kept] = [0, 0];
  const budget = newBudget();
  for (let i = 0; i < all.length; i++) {
    const p = all[i];
    if (!p.kind) continue;
    if (++kept > MAX_TOKENS) return i;
    if (p.kind === "number" && (digits += p.text.length) > MAX_DIGITS) all[i] = { text: PLACEHOLDER };
    else if (p.kind !== "word") continue;
    else if (sharesKeyRun(p.text, material) || overBudget(p.text, material, budget)) all[i] = { text: PLACEHOLDER };
  }
  return all.length;
}

/**
 * A server's msg as an error shows it: only words, small numbers (MAX_DIGITS in all), punctuation, the
 * tokens of `known` (what the provider says of the request itself) and the ids of `ids` (those it named
 * for this request; "any": a single field of an id's shape, such as an operation id), at most MAX_TOKENS
 * of them and MAX_KEY_CHARS characters of a credential in all; and none that, joined with the others,
 * holds a window of the credentials (keyWindows).
 */
export function renderMsg(msg: string, known: string, material: KeyMaterial, ids: string[] | "any" = []): string {
  const said = (known.match(/\S+/g) ?? []).map((w) => w.replace(/^[("'`]+|[)"'`.,;:!?]+$/g, ""));
  const all = pieces(msg, said, ids === "any" ? ids : [...ids, ...said]);
  const cut = bound(all, material);
  const shown = all.slice(0, cut);
  // Until no window is left: a placeholder joins what stood on its two sides, as a reader would.
  for (let round = 0; round <= MAX_TOKENS; round++) {
    const tokens = shown.filter((p) => p.kind);
    const hit = tokensInWindows(tokens, material.windows);
    if (!hit.size) break;
    for (const i of hit) tokens[i].text = PLACEHOLDER;
    for (const t of tokens) if (t.text === PLACEHOLDER) t.kind = undefined;
  }
  return joinPieces(shown) + (cut < all.length ? " …" : "");
}

/**
 * Whether a server's free text (a rule's description, its metadata) carries credential material: its
 * letters and digits joined hold a KEY_WINDOW-character window of an encoding, or its runs of letters and
 * digits show more than MAX_KEY_CHARS characters of the credentials. `words` (a description: words for
 * people): each run counts as in a msg (keyChars: 2 in its case, 3 in any, a stray letter 1) or by the
 * KEY_RUN windows of the text and base64 forms it holds, whichever is more. Else (metadata: JSON of
 * names, hashes, signatures) only runs that are not plain words count, by their KEY_RUN windows (a
 * random signature shares 2 characters with any key). What passes: in metadata, a key's letters as plain
 * words of 1 to 3 between fillers; a hex encoding cut into pieces of 7 between words. Pure.
 */
export function carriesKeyMaterial(text: string, material: KeyMaterial, words: boolean): boolean {
  const joined = text.toLowerCase().replace(/[^a-z0-9]/g, "");
  for (let i = 0; i + KEY_WINDOW <= joined.length; i++) {
    if (material.windows.has(joined.slice(i, i + KEY_WINDOW))) return true;
  }
  let shown = 0;
  const budget = newBudget();
  for (const run of text.match(/[A-Za-z0-9]+/g) ?? []) {
    if (!words && /^([A-Z]?[a-z]+|[A-Z]+)$/.test(run)) continue;
    const lower = run.toLowerCase();
    const covered = new Set<number>();
    for (let i = 0; i + KEY_RUN <= lower.length; i++) {
      if (material.plainRuns.has(lower.slice(i, i + KEY_RUN))) for (let k = i; k < i + KEY_RUN; k++) covered.add(k);
    }
    if (words && overBudget(run, material, budget)) return true;
    if ((shown += covered.size) > MAX_KEY_CHARS) return true;
  }
  return false;
}

/** The ids of the contract's shapes that `text` (a request's path and body) names. */
export function idsIn(text: string): string[] {
  return text.match(/\b(?:ak|ipr|ipp|ca|usr|bot|edgtls|op)_[A-Za-z0-9]{1,64}\b/g) ?? [];
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
