// What a text gives away of a secret, looked for as someone who reads the text would: every window
// of 12 characters of the secret (any case) in the text as it stands; with everything but letters
// and digits taken out; after %xx (and %25xx), \uXXXX, \xXX and &#NN; are decoded; and in the
// decodings of the text's base64-, base64url- and hex-looking runs, joined across whatever stands
// between them (whitespace, line breaks, `/`, `-`, quotes, words), at each alignment.

/** %xx (twice: %25xx), \uXXXX, \xXX, &#NN; and &#xHH; decoded. */
export function unescape(text: string): string {
  let out = text;
  const code = (_: string, h: string) => String.fromCharCode(parseInt(h, 16));
  for (let round = 0; round < 2; round++) out = out.replace(/%([0-9a-fA-F]{2})/g, code);
  return out
    .replace(/\\+u([0-9a-fA-F]{4})/g, code)
    .replace(/\\+x([0-9a-fA-F]{2})/g, code)
    .replace(/&#(?:(\d{1,7})|[xX]([0-9a-fA-F]{1,6}));/g, (_, d?: string, h?: string) =>
      String.fromCodePoint(d ? parseInt(d, 10) : parseInt(h!, 16)),
    );
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) VALUE[B64.charCodeAt(i)] = i;
VALUE["-".charCodeAt(0)] = 62;
VALUE["_".charCodeAt(0)] = 63;

/** `s` (base64 or base64url characters only) decoded as one stream of 6-bit groups from its first character. */
function base64Stream(s: string): string {
  const out = Buffer.alloc(Math.floor((s.length * 6) / 8));
  let bits = 0;
  let n = 0;
  let at = 0;
  for (let i = 0; i < s.length; i++) {
    bits = ((bits << 6) | VALUE[s.charCodeAt(i)]) & 0xffff;
    n += 6;
    if (n >= 8) {
      n -= 8;
      out[at++] = (bits >> n) & 255;
    }
  }
  return out.toString("latin1");
}

/** `s` (hex digits only) decoded from its first character. */
const hexStream = (s: string): string => Buffer.from(s.slice(0, s.length - (s.length % 2)), "hex").toString("latin1");

/** The decodings of `text` in which a secret may be read. */
export function readings(text: string): Record<string, string> {
  const out: Record<string, string> = { text };
  // Escapes decoded where they stand, and once what stands between pieces is taken out (an escape split by a line).
  const bases = { "": unescape(text), "joined, ": unescape(text.replace(/[^A-Za-z0-9%\\&#;]/g, "")) };
  for (const [how, plain] of Object.entries(bases)) {
    out[`${how}unescaped`] = plain;
    // The runs that look like base64 or hex, joined: the key's encodings hold no `+/-_=` for the characters keys
    // are made of, so those are read as separators; and once as data (a run of standard base64 or base64url).
    const b64 = plain.replace(/[^A-Za-z0-9]/g, "");
    const b64data = plain.replace(/[^A-Za-z0-9+/_-]/g, "");
    const hexRun = plain.replace(/[^0-9A-Fa-f]/g, "");
    for (let k = 0; k < 4; k++) {
      out[`${how}base64@${k}`] = base64Stream(b64.slice(k));
      out[`${how}base64 with +/-_@${k}`] = base64Stream(b64data.slice(k));
    }
    for (let k = 0; k < 2; k++) out[`${how}hex@${k}`] = hexStream(hexRun.slice(k));
  }
  return out;
}

/**
 * Where `text` gives away `secret`: "reading: window" for each window of `width` characters of the
 * secret (any case; also of its letters and digits alone) that a reading of the text holds. Empty: none.
 */
export function traces(text: string, secret: string, width = 12): string[] {
  const found: string[] = [];
  const lower = secret.toLowerCase();
  const letters = lower.replace(/[^a-z0-9]/g, "");
  for (const [name, reading] of Object.entries(readings(text))) {
    const low = reading.toLowerCase();
    const squeezed = low.replace(/[^a-z0-9]/g, "");
    for (let i = 0; i + width <= lower.length; i++) {
      if (low.includes(lower.slice(i, i + width))) found.push(`${name}: ${secret.slice(i, i + width)}`);
    }
    for (let i = 0; i + width <= letters.length; i++) {
      const run = letters.slice(i, i + width);
      if (squeezed.includes(run)) found.push(`${name} (letters): ${run}`);
    }
  }
  return found;
}
