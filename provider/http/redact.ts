// What an error or a log may show of a server's text or of a request: secrets out first, then cut.
//
// One place holds every credential this process knows (holdSecret: the keys config.ts resolves, the
// tokens of the keys created here; scrub also looks at every ACCESSCTL_*API_KEY variable), and
// scrub() takes out of a text every run of WINDOW or more characters of any of them, wherever it
// stands, also when the run is wrapped (whitespace, line breaks, quotes or control characters put
// anywhere in it), URL-encoded (%xx, %25xx), escaped (\uXXXX, \xXX, \/, \", &#NN;) or in another
// case. Every error the provider makes (errors.ts plainError, setMessage), every message it shows
// (engine.ts report) and every error the plugin sends (plugin/server.ts) goes through scrub.
//
// How: the 12-character windows of each secret, normalized as a text is (lower case, only the
// characters secrets are made of), are kept as a set, with a rolling hash of each. A text is read
// once, normalized as it is read (a small ring remembers where in the original each of the last
// 12 normalized characters came from); every normalized window whose hash is in the set, and that is
// one of the windows, marks its span of the original text, and overlapping spans are redacted as one.
import { processState } from "../state";

// What an error quotes of a server's text (its msg, or its body): at most this many characters.
const MAX_QUOTED = 300;
/** A run of this many characters of a secret is redacted (fewer: not, unless it is a whole short secret). */
export const WINDOW = 12;
/** Shorter values are not held as secrets (they would redact ordinary words). */
const MIN_SECRET = 8;
const REDACTED = "[redacted]";

interface SecretSet {
  /** The values held (as given), so that each is added once. */
  held: Record<string, true>;
  /** Normalized windows, by length (WINDOW, or a whole short secret's length): hash → windows. */
  windows: Record<number, Map<number, string[]>>;
  /** Which ASCII characters a normalized text keeps: letters, digits, and the punctuation of the secrets. */
  alphabet: Uint8Array;
}

function secretSet(): SecretSet {
  return processState<SecretSet>("secrets", () => {
    const alphabet = new Uint8Array(128);
    for (let c = 48; c <= 57; c++) alphabet[c] = 1;
    for (let c = 97; c <= 122; c++) alphabet[c] = 1;
    return { held: Object.create(null), windows: {}, alphabet };
  });
}

// Never kept in a normalized text: what wraps, quotes or escapes (a secret made of them is not matched through them).
// (A string, not a Set: Pulumi serializes this module's functions by value inside this repository.)
const NEVER_KEPT = "\"'`\\";

const hashOf = (codes: ArrayLike<number>, start: number, length: number): number => {
  let h = 0;
  for (let i = 0; i < length; i++) h = (Math.imul(h, 31) + codes[(start + i) % length]) | 0;
  return h;
};

/**
 * Holds `value` as a credential of this process: from now on no run of WINDOW of its characters
 * leaves the process in a text that goes through scrub(). `publicPart`: a part of it that is no
 * secret (an API key's token begins with its id, which messages and the state name): windows wholly
 * inside it are not redacted.
 */
export function holdSecret(value: unknown, publicPart?: string): void {
  if (typeof value !== "string" || value.length < MIN_SECRET) return;
  const set = secretSet();
  const id = publicPart ? `${value}\u0000${publicPart}` : value;
  if (set.held[id]) return;
  set.held[id] = true;
  for (const ch of value) {
    const c = ch.charCodeAt(0);
    if (ch.length === 1 && c > 32 && c < 127 && !NEVER_KEPT.includes(ch)) set.alphabet[c >= 65 && c <= 90 ? c + 32 : c] = 1;
  }
  const normal = normalize(value);
  if (normal.length < MIN_SECRET) return;
  const width = Math.min(WINDOW, normal.length);
  const open = publicPart ? normalize(publicPart) : "";
  const byHash = (set.windows[width] ??= new Map());
  for (let i = 0; i + width <= normal.length; i++) {
    const window = normal.slice(i, i + width);
    if (open.includes(window)) continue;
    const codes = [...window].map((c) => c.charCodeAt(0));
    const h = hashOf(codes, 0, width);
    const list = byHash.get(h) ?? [];
    if (!list.includes(window)) list.push(window);
    byHash.set(h, list);
  }
}

/** The API keys in the environment: ACCESSCTL_API_KEY and every profile's ACCESSCTL_<PROFILE>_API_KEY. */
function holdEnvironmentKeys(): void {
  for (const [name, value] of Object.entries(process.env)) if (/^ACCESSCTL_(\w+_)?API_KEY$/.test(name)) holdSecret(value);
}

const hex = (text: string, at: number, n: number): number => {
  if (at + n > text.length) return -1;
  const part = text.slice(at, at + n);
  return /^[0-9a-fA-F]+$/.test(part) ? parseInt(part, 16) : -1;
};

/**
 * Reads `text` as scrub does, calling `emit(code, start, end)` for each character a normalized text
 * keeps (lower case), with the span of the original it stands for: %xx and %25xx, \uXXXX, \xXX,
 * &#NN; and &#xHH; decoded; a backslash, \n \r \t \b \f, whitespace, quotes, control characters and
 * anything not in the alphabet dropped.
 */
function readNormalized(text: string, alphabet: Uint8Array, emit: (code: number, start: number, end: number) => void): void {
  const n = text.length;
  let i = 0;
  while (i < n) {
    const start = i;
    let c = text.charCodeAt(i);
    let end = i + 1;
    if (c === 37 /* % */) {
      let v = hex(text, i + 1, 2);
      if (v === 0x25 && hex(text, i + 3, 2) >= 0) {
        v = hex(text, i + 3, 2);
        end = i + 5;
      } else if (v >= 0) end = i + 3;
      if (v >= 0) c = v;
    } else if (c === 92 /* \ */) {
      let j = i;
      while (j < n && text.charCodeAt(j) === 92) j++;
      const next = text[j];
      const u = next === "u" ? hex(text, j + 1, 4) : next === "x" ? hex(text, j + 1, 2) : -1;
      if (u >= 0) {
        c = u;
        end = j + (next === "u" ? 5 : 3);
      } else {
        // The backslashes go; an escaped n r t b f stands for whitespace and goes with them.
        i = next !== undefined && "nrtbf".includes(next) ? j + 1 : j;
        continue;
      }
    } else if (c === 38 /* & */ && text[i + 1] === "#") {
      const m = /^&#(?:(\d{1,7})|[xX]([0-9a-fA-F]{1,6}));/.exec(text.slice(i, i + 12));
      if (m) {
        c = m[1] !== undefined ? parseInt(m[1], 10) : parseInt(m[2], 16);
        end = i + m[0].length;
      }
    }
    i = end;
    if (c >= 65 && c <= 90) c += 32;
    if (c < 128 && alphabet[c]) emit(c, start, end);
  }
}

function normalize(text: string): string {
  let out = "";
  readNormalized(text, secretSet().alphabet, (c) => (out += String.fromCharCode(c)));
  return out;
}

/** The spans [start, end) of `text` to redact for the windows of one width (merged when they overlap or touch). */
function spans(text: string, width: number, byHash: Map<number, string[]>, alphabet: Uint8Array, out: [number, number][]): void {
  const codes = new Array<number>(width).fill(0);
  const starts = new Array<number>(width).fill(0);
  let count = 0; // normalized characters read
  let h = 0;
  // 31^width, to take the oldest character out of the rolling hash.
  let top = 1;
  for (let k = 0; k < width; k++) top = Math.imul(top, 31);
  readNormalized(text, alphabet, (c, start, end) => {
    const slot = count % width;
    h = (Math.imul(h, 31) + c - Math.imul(count >= width ? codes[slot] : 0, top)) | 0;
    codes[slot] = c;
    starts[slot] = start;
    count++;
    if (count < width) return;
    const found = byHash.get(h);
    if (!found) return;
    const oldest = count % width;
    let window = "";
    for (let k = 0; k < width; k++) window += String.fromCharCode(codes[(oldest + k) % width]);
    if (!found.includes(window)) return;
    const from = starts[oldest];
    const last = out[out.length - 1];
    if (last && from <= last[1]) last[1] = Math.max(last[1], end);
    else out.push([from, end]);
  });
}

/**
 * `text` without any run of WINDOW or more characters of a credential this process holds (or of a
 * whole shorter one), however wrapped, encoded, escaped or quoted: each such run, with what was put
 * inside it, becomes "[redacted]". Use it on every text headed out of the provider, before cutting it.
 */
export function scrub(text: string): string {
  if (!text) return text;
  holdEnvironmentKeys();
  const set = secretSet();
  const found: [number, number][] = [];
  for (const [width, byHash] of Object.entries(set.windows)) {
    if (byHash.size) spans(text, Number(width), byHash, set.alphabet, found);
  }
  if (!found.length) return text;
  found.sort((a, b) => a[0] - b[0]);
  let out = "";
  let at = -1; // the end of the last span redacted
  for (const [start, end] of found) {
    if (start > at) out += text.slice(Math.max(at, 0), start) + REDACTED; // else it overlaps or touches the last one
    at = Math.max(at, end);
  }
  return out + text.slice(at);
}

/** scrub(), with `secrets` held first (the keys of the request that got the text). */
export function redact(text: string, secrets: (string | undefined)[]): string {
  for (const secret of secrets) holdSecret(secret);
  return scrub(text);
}

/**
 * A server's text as an error may show it: every credential of the process taken out (scrub), then
 * terminal escapes and control characters removed, any "token"-like field value (even one cut
 * short), anything after "Bearer " and long token-like strings redacted, and only then cut to `max`
 * characters.
 */
export function quote(text: string, secrets: (string | undefined)[], max = MAX_QUOTED): string {
  const plain = redact(text, secrets)
    .replace(/\\u([0-9a-fA-F]{4})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) // a JSON escape hides nothing
    .replace(/\u001b(\[[0-?]*[ -\/]*[@-~]|\][^\u0007\u001b]*(\u0007|\u001b\\)?|[@-Z\\-_])?/g, "")
    .replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069]+/g, " ");
  const out = scrub(plain)
    .replace(/\bBearer\s+[^\s"',;]+/gi, "Bearer [redacted]")
    .replace(/(["']?[\w-]*(?:token|key|secret|password)["']?\s*[:=]\s*["']?)[^"'\s,;}]*/gi, "$1[redacted]")
    .replace(/[A-Za-z0-9_\-+=~]{40,}/g, "[redacted]")
    .trim();
  return out.length > max ? `${out.slice(0, max)}…` : out;
}
