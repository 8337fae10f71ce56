// The way in and the way back of each field table agree, through the emulator over HTTP: what check
// hands on, once created and read back, is what read() says the live object would declare, and
// diff sees no change either way (no perpetual diff, whatever the spelling declared).
import * as fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunningEmulator, startEmulator } from "../helpers/emulator";
import { configureRequest, LoadedProvider, newRun, serializedProvider } from "../helpers/provider";

let emu: RunningEmulator;
const providers: Record<string, LoadedProvider> = {};

beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  for (const name of ["api-key", "ip-policy-rule", "tls-edge-mutual-tls", "ip-policy-rule-set"] as const)
    providers[name] = await serializedProvider(name);
  await providers["api-key"].provider.configure(
    configureRequest({
      "accessctl:apiUrl": emu.url,
      "accessctl:apiKey": emu.adminToken,
      "accessctl:maxRequestsPerMinute": "100000",
    }),
  );
});
afterAll(async () => {
  await emu?.stop();
});

/** Declares, creates, reads back, and checks that both directions agree; deletes what it made. */
async function roundTrip(name: string, declared: Record<string, unknown>, notReadBack: string[] = []): Promise<void> {
  // Each case is its own `pulumi up`: this process forgets the objects earlier cases claimed (provider/ownership.ts).
  newRun();
  const p = providers[name].provider;
  const checked = await p.check({}, declared);
  expect(checked.failures).toEqual([]);
  const created = await p.create(checked.inputs);
  try {
    const read = await p.read(created.id, created.outs);
    expect(read.props).toEqual(created.outs);
    // The live object declares what the program did, in check's form (but a choice no live value contradicts).
    expect(read.inputs).toEqual(
      Object.fromEntries(Object.entries(checked.inputs).filter(([k]) => !notReadBack.includes(k))),
    );
    expect((await p.check({}, read.inputs)).inputs).toEqual(read.inputs);
    expect((await p.diff(created.id, read.props, checked.inputs)).changes).toBe(false);
  } finally {
    newRun(); // and its `pulumi destroy` another (a delete in the run that made the object is a replacement's, which leaves it)
    await p.delete(created.id, created.outs);
  }
}

// Text without "" (an empty string is declared as unset; that case is in check-diff.test.ts).
const text = (max: number) =>
  fc.option(fc.string({ minLength: 1, maxLength: max, unit: "grapheme" }), { nil: undefined });
const ipv4Cidr = fc
  .tuple(fc.integer({ min: 1, max: 223 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 8, max: 24 }))
  .map(([a, b, prefix]) => {
    const address = (((a << 24) | (b << 16)) >>> 0) & (prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0);
    return `${address >>> 24}.${(address >>> 16) & 255}.${(address >>> 8) & 255}.${address & 255}/${prefix}`;
  });
// IPv6 in any case and spelling: the table canonicalizes on the way in and compares canonically on the way back.
const ipv6Cidr = fc
  .tuple(fc.integer({ min: 0x2001, max: 0x2fff }), fc.integer({ min: 1, max: 0xffff }), fc.boolean())
  .map(([a, b, upper]) => {
    const written = `${a.toString(16)}:${b.toString(16)}:0::/32`;
    return upper ? written.toUpperCase() : written;
  });
const drop = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

describe("field tables: the way in and the way back agree", () => {
  it("IpPolicyRule", async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(ipv4Cidr, ipv6Cidr),
        fc.constantFrom("allow", "deny"),
        text(60),
        text(500),
        async (cidr, action, description, metadata) => {
          // One policy per run: a CIDR generated twice must not meet its earlier self.
          const ipPolicyId = emu.fixtures.ipPolicies[n++ % emu.fixtures.ipPolicies.length];
          await roundTrip("ip-policy-rule", drop({ ipPolicyId, cidr, action, description, metadata }));
        },
      ),
      { numRuns: 25 },
    );
  });

  it("ApiKey", async () => {
    await fc.assert(
      fc.asyncProperty(
        text(60),
        text(500),
        fc.option(fc.constantFrom(...emu.fixtures.bots), { nil: undefined }),
        async (description, metadata, ownerId) => {
          await roundTrip("api-key", drop({ description, metadata, ownerId }), ["ownerId"]);
        },
      ),
      { numRuns: 15 },
    );
  });

  it("TlsEdgeMutualTls", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.subarray(emu.fixtures.certificateAuthorities),
        fc.option(fc.boolean(), { nil: undefined }),
        async (certificateAuthorityIds, enabled) => {
          await roundTrip(
            "tls-edge-mutual-tls",
            drop({ edgeId: emu.fixtures.tlsEdges[0], certificateAuthorityIds, enabled }),
          );
        },
      ),
      { numRuns: 10 },
    );
  });

  it("IpPolicyRuleSet", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.record({ cidr: ipv4Cidr, action: fc.constantFrom("allow", "deny"), description: text(40) }), {
          maxLength: 6,
          selector: (r) => r.cidr,
        }),
        async (rules) => {
          await roundTrip("ip-policy-rule-set", { ipPolicyId: emu.fixtures.ipPolicies[0], rules: rules.map(drop) });
        },
      ),
      { numRuns: 10 },
    );
  });
});
