// Pure checks that `check` runs before any API call: byte limits, CIDRs, id prefixes, types.
// The service validates on its own; tests prove the two agree.
import * as ipaddr from "ipaddr.js";
import { TEXT_LIMITS, TextField } from "../contract/common";

export interface CheckFailure {
  property: string;
  reason: string;
}

// What the engine sends in place of a value that is not known yet (during preview).
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

export function isUnknown(value: unknown): boolean {
  return value === UNKNOWN || (Array.isArray(value) && value.some(isUnknown));
}

// The checks below are the `check` of a field in a resource's table (./fields.ts): each gets a
// value that is set and known, and returns its problem in words that follow the property name.

/** description and metadata: strings of at most 255 / 4096 bytes of UTF-8. */
export function limitedText(name: TextField): (value: unknown) => string | undefined {
  return (value) => {
    if (typeof value !== "string") return "must be a string";
    const bytes = Buffer.byteLength(value, "utf8");
    return bytes > TEXT_LIMITS[name] ? `is ${bytes} bytes of UTF-8; the limit is ${TEXT_LIMITS[name]} bytes` : undefined;
  };
}

/** An id of one of the given kinds (ID_PREFIX.ipPolicy, …): the prefix, then letters and digits only. */
export function id(...prefixes: string[]): (value: unknown) => string | undefined {
  return (value) => idProblem(value, prefixes);
}

export function idProblem(value: unknown, prefixes: readonly string[]): string | undefined {
  const expected = prefixes.map((p) => `${p}_…`).join(" or ");
  if (typeof value !== "string") return `must be a string id (${expected})`;
  if (!prefixes.some((p) => value.startsWith(`${p}_`))) return `must be an id starting with ${expected}, got ${JSON.stringify(value.slice(0, 80))}`;
  if (!/^[a-z]+_[A-Za-z0-9]{1,128}$/.test(value)) return `must contain only letters and digits after the prefix, got ${JSON.stringify(value.slice(0, 80))}`;
  return undefined;
}

/** One of a list of strings (RULE_ACTIONS). */
export function oneOf(values: readonly string[]): (value: unknown) => string | undefined {
  return (value) => (values.includes(value as string) ? undefined : `must be ${values.map((v) => JSON.stringify(v)).join(" or ")}, got ${JSON.stringify(value)}`);
}

export function boolean(value: unknown): string | undefined {
  return typeof value === "boolean" ? undefined : "must be true or false";
}

/** A CIDR the service accepts (see parseCidr). */
export function cidr(value: unknown): string | undefined {
  if (typeof value !== "string") return "must be a string";
  const parsed = parseCidr(value);
  return "reason" in parsed ? parsed.reason : undefined;
}

/** A valid CIDR in the service's canonical form: no diff between 2001:DB8::/32 and 2001:db8::/32. */
export function canonicalCidr(value: string): string {
  const parsed = parseCidr(value);
  return "cidr" in parsed ? parsed.cidr : value;
}

/**
 * A CIDR as the service reads it: IPv4 dotted decimal or IPv6, a prefix length, no host bits.
 * Returns the canonical form (IPv6 compressed and lower case; an IPv4-mapped IPv6 range, such as
 * ::ffff:10.0.0.0/104, as the IPv4 range it is, 10.0.0.0/8) or the reason it is not valid.
 * See also parseCidr in emulator/ip-policy-rule.ts: the service's reading, written independently
 * so that test/provider/agreement.test.ts compares two programs, not one with itself.
 */
export function parseCidr(text: string): { cidr: string } | { reason: string } {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(text);
  if (!match) {
    return { reason: text.includes("/") ? `${JSON.stringify(text)} is not in address/prefix form` : `${JSON.stringify(text)} has no prefix length (write e.g. ${text}/32 for one IPv4 address)` };
  }
  const [, written, prefixText] = match;
  const prefix = Number(prefixText);
  if (String(prefix) !== prefixText) return { reason: `${JSON.stringify(text)} has a prefix length with a leading zero` };
  const notAnAddress = { reason: `${JSON.stringify(text)} is not an IPv4 or IPv6 address range` };
  let address = written;
  let kind: "ipv4" | "ipv6";
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(address) && ipaddr.IPv4.isValidFourPartDecimal(address)) {
    if (address.split(".").some((octet) => octet.length > 1 && octet.startsWith("0"))) {
      return { reason: `${JSON.stringify(text)} has an octet with a leading zero` };
    }
    kind = "ipv4";
  } else if (address.includes(":") && !address.includes("%")) {
    // A trailing dotted quad (::ffff:192.0.2.1) becomes its two groups of hex, read here: ipaddr.js
    // reads ::1.2.3.4 as ::ffff:1.2.3.4 and takes octets with leading zeros.
    const quad = /^(.*:)(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
    if (quad) {
      const octets = quad.slice(2);
      if (octets.some((o) => Number(o) > 255 || (o.length > 1 && o.startsWith("0")))) return notAnAddress;
      const [a, b, c, d] = octets.map(Number);
      address = `${quad[1]}${(a * 256 + b).toString(16)}:${(c * 256 + d).toString(16)}`;
    }
    if (address.includes(".") || !ipaddr.IPv6.isValid(address)) return notAnAddress;
    kind = "ipv6";
  } else {
    return notAnAddress;
  }
  const maxPrefix = kind === "ipv4" ? 32 : 128;
  if (prefix > maxPrefix) return { reason: `${JSON.stringify(text)}: the prefix length of an ${kind === "ipv4" ? "IPv4" : "IPv6"} range is at most ${maxPrefix}` };
  const parsed = ipaddr.parse(address);
  const bytes = parsed.toByteArray();
  if (kind === "ipv6" && prefix >= 96 && bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) {
    // IPv4-mapped: the IPv4 range it names, one range whatever its spelling.
    const ipv4 = `${bytes.slice(12).join(".")}/${prefix - 96}`;
    const asIpv4 = parseCidr(ipv4);
    return "cidr" in asIpv4 ? asIpv4 : { reason: asIpv4.reason.replace(JSON.stringify(ipv4), `${JSON.stringify(text)} (the IPv4 range ${ipv4})`) };
  }
  const network = (kind === "ipv4" ? ipaddr.IPv4 : ipaddr.IPv6).networkAddressFromCIDR(`${address}/${prefix}`).toString();
  if (network !== parsed.toString()) return { reason: `${JSON.stringify(text)} has host bits set; did you mean ${network}/${prefix}?` };
  return { cidr: `${network}/${prefix}` };
}

/** Two CIDRs that name the same range (IPv6 case and zero compression aside). */
export function sameCidr(a: unknown, b: unknown): boolean {
  if (typeof a !== "string" || typeof b !== "string") return a === b;
  const pa = parseCidr(a);
  const pb = parseCidr(b);
  return "cidr" in pa && "cidr" in pb ? pa.cidr === pb.cidr : a === b;
}

/** description/metadata as the service holds them: unset and "" are the same. */
export function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

export function sameText(a: unknown, b: unknown): boolean {
  return text(a) === text(b);
}
