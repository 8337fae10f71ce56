// The provider's check and the service validate independently. Property-based: whatever check
// accepts, the emulator accepts (and stores the same canonical CIDR); whatever check rejects, the
// emulator rejects too.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, RunningEmulator, startEmulator } from "../helpers/emulator";
import { LoadedProvider, serializedProvider } from "../helpers/provider";

let emu: RunningEmulator;
let admin: ReturnType<typeof client>;
let rule: LoadedProvider["provider"];
let apiKey: LoadedProvider["provider"];

beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  admin = client(emu.url, emu.adminToken);
  // check fails without a URL and key (issue 10); it makes no call with them.
  process.env.ACCESSCTL_API_URL = emu.url;
  process.env.ACCESSCTL_API_KEY = emu.adminToken;
  rule = (await serializedProvider("ip-policy-rule")).provider;
  apiKey = (await serializedProvider("api-key")).provider;
});
afterAll(async () => {
  delete process.env.ACCESSCTL_API_URL;
  delete process.env.ACCESSCTL_API_KEY;
  await emu?.stop();
});

const octet = fc.integer({ min: 0, max: 255 });
const ipv4 = fc.tuple(octet, octet, octet, octet).map((o) => o.join("."));
const hextet = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));
const ipv6Full = fc.array(hextet, { minLength: 8, maxLength: 8 }).map((h) => h.join(":"));
const ipv6Short = fc
  .tuple(fc.array(hextet, { maxLength: 3 }), fc.array(hextet, { maxLength: 3 }))
  .map(([a, b]) => `${a.join(":")}::${b.join(":")}`);
const ipv6 = fc.tuple(fc.oneof(ipv6Full, ipv6Short), fc.boolean()).map(([a, upper]) => (upper ? a.toUpperCase() : a));

const mappedPrefix = fc.constantFrom("::ffff:", "::FFFF:", "0:0:0:0:0:ffff:", "0::ffff:", "::0:ffff:");
/** An IPv4 address as the two hex groups of IPv6 (10.0.0.1 → a00:1). */
const asHex = (a: string) => {
  const [w, x, y, z] = a.split(".").map(Number);
  return `${(w * 256 + x).toString(16)}:${(y * 256 + z).toString(16)}`;
};

/** CIDRs valid and not: networks, host bits, bad prefixes, leading zeros, junk. */
const cidr = fc.oneof(
  fc.tuple(ipv4, fc.integer({ min: 0, max: 32 })).map(([a, p]) => `${a}/${p}`),
  fc.tuple(ipv4, fc.integer({ min: 0, max: 32 })).map(([a, p]) => `${networkOf(a, p)}/${p}`),
  fc.tuple(ipv6, fc.integer({ min: 0, max: 128 })).map(([a, p]) => `${a}/${p}`),
  fc.tuple(ipv6, fc.integer({ min: 0, max: 128 })).map(([a, p]) => `${a.replace(/[^:]+$/, "0")}/${p}`),
  fc.tuple(ipv4, fc.integer({ min: 33, max: 140 })).map(([a, p]) => `${a}/${p}`),
  fc.tuple(ipv4, fc.constantFrom("/08", "/", "", "/-1", "/ 8")).map(([a, s]) => a + s),
  fc.tuple(octet, octet).map(([a, b]) => `0${a}.${b}.0.0/16`),
  fc.string({ unit: fc.constantFrom(..."0123456789abcdefABCDEF:./% x"), maxLength: 24 }),
  // IPv4-mapped IPv6 (::ffff:a.b.c.d/96+n is a.b.c.d/n), spelled in several ways, with and without host bits.
  fc.tuple(mappedPrefix, ipv4, fc.integer({ min: 80, max: 140 })).map(([m, a, p]) => `${m}${a}/${p}`),
  fc
    .tuple(mappedPrefix, ipv4, fc.integer({ min: 0, max: 32 }), fc.boolean())
    .map(([m, a, p, hex]) => `${m}${hex ? asHex(networkOf(a, p)) : networkOf(a, p)}/${p + 96}`),
  fc
    .tuple(fc.constantFrom("::", "64:ff9b::", "::ffff:0:", "1::ffff:"), ipv4, fc.integer({ min: 96, max: 128 }))
    .map(([m, a, p]) => `${m}${a}/${p}`),
  fc.tuple(octet, fc.integer({ min: 0, max: 9 })).map(([a, b]) => `::ffff:${a}.0${b}.0.0/112`),
  // One address alone: one host (/32, /128), in any of the spellings above.
  ipv4,
  ipv6,
  fc.tuple(mappedPrefix, ipv4).map(([m, a]) => `${m}${a}`),
  fc.tuple(octet, octet).map(([a, b]) => `0${a}.${b}.0.1`),
);

function networkOf(address: string, prefix: number): string {
  const n = address.split(".").reduce((acc, o) => acc * 256 + Number(o), 0);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const net = (n & mask) >>> 0;
  return [24, 16, 8, 0].map((s) => (net >>> s) & 255).join(".");
}

/** Text whose UTF-8 size straddles a limit: 1-, 2-, 3- and 4-byte characters. */
function textAround(limit: number) {
  return fc
    .tuple(
      fc.integer({ min: limit - 8, max: limit + 8 }),
      fc.array(fc.constantFrom("é", "€", "😀", "a"), { maxLength: 4 }),
    )
    .map(([bytes, tail]) => {
      const end = tail.join("");
      return "x".repeat(Math.max(0, bytes - Buffer.byteLength(end))) + end;
    });
}

describe("check and the service agree", () => {
  it("on CIDRs, and on the canonical form of what both accept", async () => {
    let accepted = 0;
    let rejected = 0;
    await fc.assert(
      fc.asyncProperty(cidr, fc.constantFrom("allow", "deny"), async (c, action) => {
        const checked = await rule.check({}, { ipPolicyId: emu.fixtures.ipPolicies[0], cidr: c, action });
        const res = await admin.post("/ip_policy_rules", { ip_policy_id: emu.fixtures.ipPolicies[0], cidr: c, action });
        if (res.status === 201) await admin.delete(`/ip_policy_rules/${res.body.id}`);
        const clientOk = checked.failures.length === 0;
        expect({ cidr: c, service: res.status, check: checked.failures }).toEqual({
          cidr: c,
          service: clientOk ? 201 : 400,
          check: checked.failures,
        });
        if (!clientOk) rejected++;
        if (clientOk) {
          accepted++;
          expect(res.body.cidr).toBe(checked.inputs.cidr);
        }
      }),
      { numRuns: 400 },
    );
    expect(accepted).toBeGreaterThan(30); // the generator reaches both sides
    expect(rejected).toBeGreaterThan(30);
  });

  it("on description and metadata sizes in UTF-8 bytes, for keys and rules", async () => {
    await fc.assert(
      fc.asyncProperty(textAround(255), textAround(4096), fc.boolean(), async (description, metadata, forKey) => {
        const inputs = forKey
          ? { description, metadata }
          : { ipPolicyId: emu.fixtures.ipPolicies[1], cidr: "10.99.0.0/16", action: "allow", description, metadata };
        const checked = await (forKey ? apiKey : rule).check({}, inputs);
        const res = forKey
          ? await admin.post("/api_keys", { description, metadata })
          : await admin.post("/ip_policy_rules", {
              ip_policy_id: emu.fixtures.ipPolicies[1],
              cidr: "10.99.0.0/16",
              action: "allow",
              description,
              metadata,
            });
        if (res.status === 201) await admin.delete(`/${forKey ? "api_keys" : "ip_policy_rules"}/${res.body.id}`);
        const sizes = [Buffer.byteLength(description), Buffer.byteLength(metadata)];
        expect({ sizes, service: res.status }).toEqual({ sizes, service: checked.failures.length === 0 ? 201 : 400 });
      }),
      { numRuns: 200 },
    );
  });
});
