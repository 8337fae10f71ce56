// What an error or a log may show of a server's text or of a request: secrets out first, then cut.

// What an error quotes of a server's text (its msg, or its body): at most this many characters.
const MAX_QUOTED = 300;

/** Removes the API key and any token we know of from text headed for an error or a log. */
export function redact(text: string, secrets: (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) {
    if (!secret || secret.length < 8) continue;
    // In any case, and whatever starts with its first 16 characters (a key the server cut short).
    const head = secret.slice(0, 16).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    out = out.replace(new RegExp(`${head}[^\\s"'<>]*`, "gi"), "[redacted]");
  }
  return out;
}

/**
 * A server's text as an error may show it: terminal escapes and control characters removed, then
 * known secrets, any "token"-like field value (even one cut short), anything after "Bearer " and
 * long token-like strings redacted, and only then cut to `max` characters.
 */
export function quote(text: string, secrets: (string | undefined)[], max = MAX_QUOTED): string {
  const plain = text
    .replace(/\\u([0-9a-fA-F]{4})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) // a JSON escape hides nothing
    .replace(/\u001b(\[[0-?]*[ -\/]*[@-~]|\][^\u0007\u001b]*(\u0007|\u001b\\)?|[@-Z\\-_])?/g, "")
    .replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069]+/g, " ");
  const out = redact(plain, secrets)
    .replace(/\bBearer\s+[^\s"',;]+/gi, "Bearer [redacted]")
    .replace(/(["']?[\w-]*(?:token|key|secret|password)["']?\s*[:=]\s*["']?)[^"'\s,;}]*/gi, "$1[redacted]")
    .replace(/[A-Za-z0-9_\-+=~]{40,}/g, "[redacted]")
    .trim();
  return out.length > max ? `${out.slice(0, max)}…` : out;
}
