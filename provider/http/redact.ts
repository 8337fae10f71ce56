// What an error or a log may show of a server's text or of a request: secrets out first, then cut.
//
// One place holds every credential this process knows (holdSecret: the keys config.ts resolves, the
// tokens of the keys created here; scrub also looks at every ACCESSCTL_*API_KEY variable), and
// scrub() finds in a text every run that stands for WINDOW or more characters of any of them and
// redacts the whole token-like run it is part of. A run stands for a secret's characters when it
// holds them, or their base64, base64url or hex encoding (of the secret as it is, in lower case or in
// upper case), in any case, with anything put anywhere in it (whitespace, line breaks, quotes, control
// characters; and, read a second way, every character that is not a letter or a digit: `/`, `-`,
// `_`, `+`, `=`, `%`), with any of its characters URL-encoded (%xx, %25xx) or escaped (\uXXXX, \xXX,
// \/, \", &#NN;). Every error the provider makes (errors.ts plainError, setMessage), every message it
// shows (engine.ts report) and every error the plugin sends (plugin/server.ts) goes through scrub.
//
// How: a text is read once (twice when it holds `%`, `\` or `&`: as it stands, and with escapes
// decoded), normalized as it is read: lower-cased, only letters, digits and the secrets' own
// punctuation kept. Two lanes of rolling hashes follow the normalized characters, each with a small
// ring that remembers where in the original each of its last 12 characters came from: lane "p" reads
// them all, lane "a" only the letters and digits. Each secret is held as the 12-character windows of
// its forms: in lane p, its text (so that 12 characters of it with a `-` or `_` among them count); in
// lane a, its letters and digits, its hex, its base64 at each of the three byte alignments it can
// have inside a longer encoded text (only the characters its own bytes decide) and the hex of that
// base64 (its %xx-encoding read as it stands). Normalized, base64url is base64; for the characters
// keys are made of (letters, digits, `-`, `_`) no encoding holds a `+/-_` of its own, so lane a loses
// nothing by dropping them. Matching a window of an encoded form is decoding every run, joined across
// separators, in each encoding at each alignment, and matching the decoding: done in the one pass.
// Every window whose hash is in its lane's set, and that is one of the windows, marks its span of the
// original text; a span is widened to the token-like run around it (letters, digits, `+/_-%` and a
// trailing `=`), and overlapping spans are redacted as one.
import { processState } from "../state";

// What an error quotes of a server's text (its msg): at most this many characters.
const MAX_QUOTED = 300;
// What quote() reads of a text at most (before redacting it, and long before the cut to MAX_QUOTED).
const MAX_READ = 64 * 1024;
/** A run of this many characters of a secret is redacted (fewer: not, unless it is a whole short secret). */
export const WINDOW = 12;
/** Shorter values are not held as secrets (they would redact ordinary words). */
const MIN_SECRET = 8;
const REDACTED = "[redacted]";

interface SecretSet {
  /** The values held (as given), so that each is added once. */
  held: Record<string, true>;
  /** Normalized windows by lane and length ("p12", "a12"; "p9": a whole short secret): hash → windows. */
  windows: Record<string, Map<number, string[]>>;
  /** By the same keys, a bit for each low 20 bits of a hash in the map: most characters of a text cost no lookup. */
  bits: Record<string, Uint32Array>;
  /** Which ASCII characters a normalized text keeps: letters, digits, and the punctuation of the secrets. */
  alphabet: Uint8Array;
}

function secretSet(): SecretSet {
  // (named apart from the set of earlier versions, whose shape differs: see state.ts)
  return processState<SecretSet>("secrets-encoded", () => {
    const alphabet = new Uint8Array(128);
    for (let c = 48; c <= 57; c++) alphabet[c] = 1;
    for (let c = 97; c <= 122; c++) alphabet[c] = 1;
    return { held: Object.create(null), windows: {}, bits: {}, alphabet };
  });
}

// Never kept in a normalized text: what wraps, quotes or escapes (a secret made of them is not matched through them).
// (A string, not a Set: Pulumi serializes this module's functions by value inside this repository.)
const NEVER_KEPT = "\"'`\\";
const isLetterOrDigit = (c: number) => (c >= 48 && c <= 57) || (c >= 97 && c <= 122);

const hashOf = (text: string): number => {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0;
  return h;
};

/**
 * The forms `value` may take in a text, normalized: its text; then, for it as it is, in lower case
 * and in upper case, its hex and its base64 at each of the three byte alignments (the characters of
 * the encoding that its bytes alone decide: none that shares bits with what stands before or after
 * it), and the hex of that base64 (which is its %xx-encoding, % dropped).
 */
function forms(value: string): string[] {
  const out = [normalize(value).replace(/[^a-z0-9]/g, "")];
  const variants = [value, value.toLowerCase(), value.toUpperCase()].filter((v, i, all) => all.indexOf(v) === i);
  for (const variant of variants) {
    const bytes = Buffer.from(variant, "utf8");
    out.push(bytes.toString("hex"));
    for (let k = 0; k < 3; k++) {
      const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString("base64");
      const decided = encoded.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
      out.push(decided.toLowerCase().replace(/[^a-z0-9]/g, ""), Buffer.from(decided).toString("hex"));
    }
  }
  return out;
}

/** Every window of `width` characters of each of `texts`. */
function windowsOf(texts: string[], width: number): Set<string> {
  const out = new Set<string>();
  for (const text of texts) for (let i = 0; i + width <= text.length; i++) out.add(text.slice(i, i + width));
  return out;
}

/** Adds the windows of `width` characters of `form` to the lane's set, but those in `open`. */
function addWindows(set: SecretSet, lane: "p" | "a", form: string, width: number, open: Set<string>): void {
  const byHash = (set.windows[`${lane}${width}`] ??= new Map());
  const bits = (set.bits[`${lane}${width}`] ??= new Uint32Array(1 << 15));
  for (const window of windowsOf([form], width)) {
    if (open.has(window)) continue;
    const h = hashOf(window);
    bits[(h & 0xfffff) >>> 5] |= 1 << (h & 31);
    const list = byHash.get(h);
    if (!list) byHash.set(h, [window]);
    else if (!list.includes(window)) list.push(window);
  }
}

/**
 * Holds `value` as a credential of this process: from now on no run of WINDOW of its characters (or
 * of their encodings) leaves the process in a text that goes through scrub(). `publicPart`: a part
 * of it that is no secret (an API key's token begins with its id, which messages and the state
 * name): windows wholly inside it (or inside one of its encodings) are not redacted.
 */
export function holdSecret(value: unknown, publicPart?: string): void {
  if (typeof value !== "string" || value.length < MIN_SECRET) return;
  const set = secretSet();
  const id = publicPart ? `${value}\u0000${publicPart}` : value;
  if (set.held[id]) return;
  set.held[id] = true;
  for (const ch of value) {
    const c = ch.charCodeAt(0);
    if (ch.length === 1 && c > 32 && c < 127 && !NEVER_KEPT.includes(ch))
      set.alphabet[c >= 65 && c <= 90 ? c + 32 : c] = 1;
  }
  const normal = normalize(value);
  if (normal.length < MIN_SECRET) return;
  const width = Math.min(WINDOW, normal.length);
  addWindows(set, "p", normal, width, windowsOf(publicPart ? [normalize(publicPart)] : [], width));
  const open = windowsOf(publicPart ? forms(publicPart) : [], WINDOW);
  for (const form of forms(value)) if (form.length >= WINDOW) addWindows(set, "a", form, WINDOW, open);
}

/** Every credential this process holds (and those of the environment), as given, and their public parts. */
export function heldValues(): { values: string[]; open: string[] } {
  holdEnvironmentKeys();
  const held = Object.keys(secretSet().held).map((id) => id.split("\u0000"));
  return { values: held.map((h) => h[0]), open: held.filter((h) => h[1]).map((h) => h[1]) };
}

/** The API keys in the environment: ACCESSCTL_API_KEY and every profile's ACCESSCTL_<PROFILE>_API_KEY. */
function holdEnvironmentKeys(): void {
  for (const [name, value] of Object.entries(process.env))
    if (/^ACCESSCTL_(\w+_)?API_KEY$/.test(name)) holdSecret(value);
}

const hex = (text: string, at: number, n: number): number => {
  if (at + n > text.length) return -1;
  const part = text.slice(at, at + n);
  return /^[0-9a-fA-F]+$/.test(part) ? parseInt(part, 16) : -1;
};

/** What the escape at `i` (a `%`, `\` or `&`) stands for, and where it ends; [-1, end]: nothing. */
function decodeAt(text: string, i: number): [number, number] {
  const c = text.charCodeAt(i);
  if (c === 37 /* % */) {
    const v = hex(text, i + 1, 2);
    if (v === 0x25 && hex(text, i + 3, 2) >= 0) return [hex(text, i + 3, 2), i + 5];
    return v >= 0 ? [v, i + 3] : [c, i + 1];
  }
  if (c === 92 /* \ */) {
    let j = i;
    while (j < text.length && text.charCodeAt(j) === 92) j++;
    const next = text[j];
    const u = next === "u" ? hex(text, j + 1, 4) : next === "x" ? hex(text, j + 1, 2) : -1;
    if (u >= 0) return [u, j + (next === "u" ? 5 : 3)];
    // The backslashes go; an escaped n r t b f stands for whitespace and goes with them.
    return [-1, next !== undefined && "nrtbf".includes(next) ? j + 1 : j];
  }
  if (c === 38 /* & */ && text[i + 1] === "#") {
    const m = /^&#(?:(\d{1,7})|[xX]([0-9a-fA-F]{1,6}));/.exec(text.slice(i, i + 12));
    if (m) return [m[1] !== undefined ? parseInt(m[1], 10) : parseInt(m[2], 16), i + m[0].length];
  }
  return [c, i + 1];
}

/**
 * The character of `text` at `i` as a normalized text reads it: [code, end], its code (lower case; -1
 * for one the alphabet does not keep) and where it ends. With `decode`, %xx and %25xx, \uXXXX, \xXX,
 * &#NN; and &#xHH; are decoded and a backslash, \n \r \t \b \f dropped; whitespace, quotes, control
 * characters and anything not in the alphabet are dropped.
 */
function readAt(text: string, i: number, alphabet: Uint8Array, decode: boolean): [number, number] {
  let c = text.charCodeAt(i);
  let end = i + 1;
  if (decode && (c === 37 || c === 92 || c === 38)) [c, end] = decodeAt(text, i);
  if (c >= 65 && c <= 90) c += 32;
  return [c >= 0 && c < 128 && alphabet[c] ? c : -1, end];
}

function normalize(text: string): string {
  const alphabet = secretSet().alphabet;
  let out = "";
  for (let i = 0; i < text.length;) {
    const [c, next] = readAt(text, i, alphabet, true);
    i = next;
    if (c >= 0) out += String.fromCharCode(c);
  }
  return out;
}

/** A rolling hash over the last `width` characters of one lane, and where in the text each came from. */
interface Lane {
  letters: boolean; // lane a: letters and digits only
  width: number;
  byHash: Map<number, string[]>;
  bits: Uint32Array;
  codes: Int32Array;
  starts: Int32Array;
  slot: number; // where the next character goes in codes and starts (the oldest one is there)
  count: number; // characters read
  h: number;
  top: number; // 31^width, to take the oldest character out of the hash
}

function lane(set: SecretSet, key: string): Lane {
  const width = Number(key.slice(1));
  let top = 1;
  for (let k = 0; k < width; k++) top = Math.imul(top, 31);
  const [codes, starts] = [new Int32Array(width), new Int32Array(width)];
  const [byHash, bits] = [set.windows[key], set.bits[key]];
  return { letters: key[0] === "a", width, byHash, bits, codes, starts, slot: 0, count: 0, h: 0, top };
}

/** Feeds one normalized character to a lane; when its last `width` are a window, marks their span in `out`. */
function feed(l: Lane, c: number, start: number, end: number, out: [number, number][]): void {
  const slot = l.slot;
  l.h = (Math.imul(l.h, 31) + c - Math.imul(l.codes[slot], l.top)) | 0; // (codes start as 0: nothing to take out)
  l.codes[slot] = c;
  l.starts[slot] = start;
  l.slot = slot + 1 === l.width ? 0 : slot + 1;
  if (++l.count < l.width || !(l.bits[(l.h & 0xfffff) >>> 5] & (1 << (l.h & 31)))) return;
  const found = l.byHash.get(l.h);
  if (!found) return;
  let window = "";
  for (let k = 0; k < l.width; k++) window += String.fromCharCode(l.codes[(l.slot + k) % l.width]);
  if (!found.includes(window)) return;
  const from = l.starts[l.slot];
  const last = out[out.length - 1];
  if (last && from >= last[0] && from <= last[1]) last[1] = Math.max(last[1], end);
  else out.push([from, end]);
}

/** The spans [start, end) of `text` that hold a window of a secret, read with or without decoding escapes. */
function spans(text: string, set: SecretSet, out: [number, number][], decode: boolean): void {
  const lanes = Object.keys(set.windows)
    .filter((key) => set.windows[key].size)
    .map((key) => lane(set, key));
  if (!lanes.length) return;
  const alphabet = set.alphabet;
  for (let i = 0; i < text.length;) {
    const start = i;
    let c = text.charCodeAt(i);
    // (the common case read here, the rest by readAt: this loop runs over every character of every text)
    if (c < 128 && c !== 37 && c !== 92 && c !== 38) i++;
    else [c, i] = readAt(text, i, alphabet, decode);
    if (c >= 65 && c <= 90) c += 32;
    if (c < 0 || c >= 128 || !alphabet[c]) continue;
    const letter = isLetterOrDigit(c);
    for (let k = 0; k < lanes.length; k++) if (letter || !lanes[k].letters) feed(lanes[k], c, start, i, out);
  }
}

/** `text` with each span, widened to the token-like run around it, as "[redacted]" (overlapping ones as one). */
function redactRuns(text: string, found: [number, number][]): string {
  found.sort((a, b) => a[0] - b[0]);
  let out = "";
  let at = -1; // the end of the last run redacted
  for (let [start, end] of found) {
    while (start > 0 && /[A-Za-z0-9+/_%-]/.test(text[start - 1])) start--;
    while (end < text.length && /[A-Za-z0-9+/_%=-]/.test(text[end])) end++;
    if (start > at) out += text.slice(Math.max(at, 0), start) + REDACTED; // else it overlaps or touches the last one
    at = Math.max(at, end);
  }
  return out + text.slice(at);
}

/**
 * `text` without any run that stands for WINDOW or more characters of a credential this process
 * holds (or a whole shorter one), however wrapped, split, encoded (base64, base64url, hex, %xx),
 * escaped or quoted: each such run, with what was put inside it, becomes "[redacted]". Use it on
 * every text headed out of the provider, before cutting it.
 */
export function scrub(text: string): string {
  if (!text) return text;
  holdEnvironmentKeys();
  const set = secretSet();
  const found: [number, number][] = [];
  // Read as it stands (a %xx-encoding split inside its escapes reads as its hex), and with escapes decoded.
  spans(text, set, found, false);
  if (/[%\\&]/.test(text)) spans(text, set, found, true);
  return found.length ? redactRuns(text, found) : text;
}

/** scrub(), with `secrets` held first (the keys of the request that got the text). */
export function redact(text: string, secrets: (string | undefined)[]): string {
  for (const secret of secrets) holdSecret(secret);
  return scrub(text);
}

/**
 * A server's text as an error may show it: read up to MAX_READ characters (the run a longer text is
 * cut in is dropped: it may be the start of a secret), every credential of the process taken out
 * (scrub), then terminal escapes and control characters removed, any "token"-like field value (even
 * one cut short), anything after "Bearer " and long token-like strings redacted, and only then cut
 * to `max` characters. `render`: what the text may show at all (render-msg.ts), applied once it is plain.
 */
export function quote(
  text: string,
  secrets: (string | undefined)[],
  max = MAX_QUOTED,
  render = (t: string) => t,
): string {
  const read = text.length > MAX_READ ? `${text.slice(0, MAX_READ).replace(/\S*$/, "")}…` : text;
  const plain = redact(read, secrets)
    // a JSON escape hides nothing
    .replace(/\\u([0-9a-fA-F]{4})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    // eslint-disable-next-line no-control-regex -- terminal escapes and control characters are what these take out
    .replace(/\u001b(\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(\u0007|\u001b\\)?|[@-Z\\-_])?/g, "")
    // eslint-disable-next-line no-control-regex -- as above
    .replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069]+/g, " ");
  const out = scrub(render(plain))
    .replace(/\bBearer\s+[^\s"',;]+/gi, "Bearer [redacted]")
    .replace(/(["']?[\w-]*(?:token|key|secret|password)["']?\s*[:=]\s*["']?)[^"'\s,;}]*/gi, "$1[redacted]")
    .replace(/[A-Za-z0-9_\-+=~]{40,}/g, "[redacted]")
    .trim();
  return out.length > max ? `${out.slice(0, max)}…` : out;
}
