// create / read / update / delete of the serialized providers against the emulator over HTTP.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, listAll, RunningEmulator, startEmulator } from "../helpers/emulator";
import { configureRequest, LoadedProvider, newRun, serializedProvider } from "../helpers/provider";

let emu: RunningEmulator;
let apiKey: LoadedProvider;
let rule: LoadedProvider;
let mtls: LoadedProvider;

beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  apiKey = await serializedProvider("api-key");
  rule = await serializedProvider("ip-policy-rule");
  mtls = await serializedProvider("tls-edge-mutual-tls");
  // As the dynamic-provider plugin does: configure once with the stack config.
  await apiKey.provider.configure(
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

describe("serialized code", () => {
  it("holds no credential, even when serialized after configure and with the env set", async () => {
    process.env.ACCESSCTL_API_KEY = emu.adminToken;
    try {
      for (const name of ["api-key", "ip-policy-rule", "tls-edge-mutual-tls"] as const) {
        const { text } = await serializedProvider(name);
        expect(text).not.toContain(emu.adminToken);
        expect(text).not.toContain(emu.url);
      }
    } finally {
      delete process.env.ACCESSCTL_API_KEY;
    }
  });
});

describe("ApiKey", () => {
  it("creates a key with its token, keeps the token across read and update, and deletes it", async () => {
    const p = apiKey.provider;
    const created = await p.create({ description: "ci", metadata: "m" });
    expect(created.id).toMatch(/^ak_/);
    expect(created.outs).toMatchObject({
      description: "ci",
      metadata: "m",
      ownerId: emu.fixtures.users[0].id,
      token: expect.any(String),
    });
    expect(created.outs.uri).toBe(`${emu.url}/api_keys/${created.id}`);
    const token = created.outs.token;
    // The token works against the API: it is the real one.
    expect((await client(emu.url, token).get("/api_keys?limit=1")).status).toBe(200);

    const read = await p.read(created.id, created.outs);
    expect(read).toEqual({ id: created.id, props: { ...created.outs }, inputs: { description: "ci", metadata: "m" } });

    const updated = await p.update(created.id, created.outs, { description: "ci v2" });
    expect(updated.outs).toMatchObject({ description: "ci v2", metadata: "", token });
    const live = (await client(emu.url, emu.adminToken).get(`/api_keys/${created.id}`)).body;
    expect(live.description).toBe("ci v2");
    expect(live.metadata).toMatch(/^\{"managed-by":"pulumi-accessctl",/); // removed from the program: cleared, the provider's marker in its place

    await p.delete(created.id, updated.outs);
    expect((await client(emu.url, emu.adminToken).get(`/api_keys/${created.id}`)).status).toBe(404);
    expect(await p.read(created.id, updated.outs)).toEqual({}); // refresh drops it
    await p.delete(created.id, updated.outs); // already gone: still succeeds
  });

  it("creates a key for another owner, and adopts an existing key without creating one", async () => {
    const p = apiKey.provider;
    const forBot = await p.create({ ownerId: emu.fixtures.bots[0] });
    expect(forBot.outs.ownerId).toBe(emu.fixtures.bots[0]);
    const existing = (await client(emu.url, emu.adminToken).post("/api_keys", { description: "made by hand" })).body;
    const before = (await listAll(emu.url, emu.adminToken, "/api_keys", "keys")).length;
    const adopted = await p.create({ adoptId: existing.id, description: "now managed" });
    expect(adopted.id).toBe(existing.id);
    expect(adopted.outs).toMatchObject({ description: "now managed", adoptId: existing.id });
    expect(adopted.outs.token).toBeUndefined();
    expect((await listAll(emu.url, emu.adminToken, "/api_keys", "keys")).length).toBe(before);
  });

  it("explains the service's refusals: a member naming another owner gets the 403", async () => {
    const asMember = (await client(emu.url, emu.adminToken).post("/api_keys", { owner_id: emu.fixtures.users[1].id }))
      .body.token;
    process.env.ACCESSCTL_API_KEY = asMember;
    const saved = (globalThis as any)[Symbol.for("@accessctl/pulumi/state/v1")]["stack-config"].value;
    (globalThis as any)[Symbol.for("@accessctl/pulumi/state/v1")]["stack-config"].value = {
      apiUrl: emu.url,
      maxRequestsPerMinute: "100000",
    };
    try {
      const err = await apiKey.provider.create({ ownerId: emu.fixtures.users[0].id }).catch((e: Error) => e);
      expect(err.message).toMatch(
        /^create API key: HTTP 403 ERR_FORBIDDEN: only admins may create an API key owned by someone else .* \(operation op_\w+\)$/,
      );
      expect(err.message).not.toContain(asMember);
      expect((err as any).status).toBe(403);
    } finally {
      (globalThis as any)[Symbol.for("@accessctl/pulumi/state/v1")]["stack-config"].value = saved;
      delete process.env.ACCESSCTL_API_KEY;
    }
  });
});

describe("IpPolicyRule", () => {
  it("creates, reads, updates in place and deletes a rule", async () => {
    const p = rule.provider;
    const inputs = (
      await p.check(
        {},
        { ipPolicyId: emu.fixtures.ipPolicies[0], cidr: "2001:DB8:AB::/48", action: "deny", description: "lab" },
      )
    ).inputs;
    const created = await p.create(inputs);
    expect(created.outs).toEqual({
      ipPolicyId: emu.fixtures.ipPolicies[0],
      ipPolicy: { id: emu.fixtures.ipPolicies[0], uri: expect.stringContaining(emu.fixtures.ipPolicies[0]) },
      cidr: "2001:db8:ab::/48",
      action: "deny",
      description: "lab",
      metadata: "",
      uri: `${emu.url}/ip_policy_rules/${created.id}`,
      createdAt: expect.any(String),
    });
    // The stored CIDR equals the checked input: no diff on the next run.
    expect((await p.diff(created.id, created.outs, inputs)).changes).toBe(false);
    const updated = await p.update(created.id, created.outs, {
      ...inputs,
      cidr: "2001:db8:ac::/48",
      description: undefined,
      metadata: "x",
    });
    expect(updated.outs).toMatchObject({ cidr: "2001:db8:ac::/48", description: "", metadata: "x" });
    expect((await p.read(created.id, updated.outs)).props).toEqual(updated.outs);
    await p.delete(created.id, updated.outs);
    expect(await p.read(created.id, updated.outs)).toEqual({});
    await p.delete(created.id, updated.outs);
  });

  it("reports the service's 404 for an unknown policy with the operation id", async () => {
    const err = await rule.provider
      .create({ ipPolicyId: "ipp_doesnotexist", cidr: "10.0.0.0/8", action: "allow" })
      .catch((e: Error) => e);
    expect(err.message).toMatch(
      /^create IP policy rule 10\.0\.0\.0\/8: HTTP 404 ERR_NOT_FOUND: IP policy not found: ipp_doesnotexist \(operation op_\w+\)$/,
    );
  });

  it("adopts an existing rule and converges it, and refuses one whose action differs", async () => {
    const admin = client(emu.url, emu.adminToken);
    const existing = (
      await admin.post("/ip_policy_rules", {
        ip_policy_id: emu.fixtures.ipPolicies[1],
        cidr: "192.0.2.0/24",
        action: "allow",
        description: "old",
      })
    ).body;
    const before = (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).length;
    const adopted = await rule.provider.create({
      adoptId: existing.id,
      ipPolicyId: emu.fixtures.ipPolicies[1],
      cidr: "192.0.2.0/24",
      action: "allow",
      description: "new",
    });
    expect(adopted).toMatchObject({ id: existing.id, outs: { description: "new", adoptId: existing.id } });
    expect((await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).length).toBe(before);
    const refused = await rule.provider
      .create({ adoptId: existing.id, ipPolicyId: emu.fixtures.ipPolicies[1], cidr: "192.0.2.0/24", action: "deny" })
      .catch((e: Error) => e);
    expect(refused.message).toContain("its action is allow, not deny");
  });
});

describe("IpPolicyRule that already exists (one owner per object)", () => {
  it("a create answered 409 fails naming the existing rule and both ways forward, and leaves the rule alone", async () => {
    const admin = client(emu.url, emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    const existing = (
      await admin.post("/ip_policy_rules", {
        ip_policy_id: p,
        cidr: "2001:db8:99::/48",
        action: "allow",
        description: "theirs",
      })
    ).body;
    const err = await rule.provider
      .create({ ipPolicyId: p, cidr: "2001:db8:99::/48", action: "allow", description: "declared" })
      .catch((e: Error) => e);
    expect(err.message).toMatch(
      new RegExp(
        `HTTP 409 ERR_CONFLICT: .*; rule ${existing.id} already holds this CIDR and was not made by this resource \\(it carries no marker of this provider's: made by hand, or by another tool\\)\\. ` +
          `To manage it from this resource, declare adoptId: "${existing.id}"\\. If an interrupted \`pulumi up\` of this stack made it, run \`ACCESSCTL_ADOPT_EXISTING=1 pulumi up\` once\\.`,
      ),
    );
    expect((await admin.get(`/ip_policy_rules/${existing.id}`)).body.description).toBe("theirs");
    const clash = await rule.provider
      .create({ ipPolicyId: p, cidr: "2001:db8:99::/48", action: "deny" })
      .catch((e: Error) => e);
    expect(clash.message).toMatch(
      /HTTP 409 ERR_CONFLICT: .*; rule ipr_\w+ has this CIDR with action allow: delete it, or adopt it with adoptId "ipr_\w+" and action "allow"$/,
    );
  });

  it("with ACCESSCTL_ADOPT_EXISTING=1 (the run after an interrupted up) takes it over, but never for two resources", async () => {
    const admin = client(emu.url, emu.adminToken);
    const p = emu.fixtures.ipPolicies[0];
    const existing = (
      await admin.post("/ip_policy_rules", { ip_policy_id: p, cidr: "2001:db8:98::/48", action: "allow" })
    ).body;
    const before = (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).length;
    process.env.ACCESSCTL_ADOPT_EXISTING = "1";
    try {
      const taken = await rule.provider.create({
        ipPolicyId: p,
        cidr: "2001:DB8:98::/48",
        action: "allow",
        description: "declared",
      });
      expect(taken.id).toBe(existing.id);
      expect(taken.outs.description).toBe("declared");
      expect((await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).length).toBe(before);
      const second = await rule.provider
        .create({ ipPolicyId: p, cidr: "2001:db8:98::/48", action: "allow", description: "again" })
        .catch((e: Error) => e);
      expect(second.message).toMatch(
        new RegExp(
          `^create IP policy rule 2001:db8:98::/48: IP policy rule ${existing.id} is already managed by another resource of this stack; declare it once$`,
        ),
      );
      expect((await admin.get(`/ip_policy_rules/${existing.id}`)).body.description).toBe("declared");
    } finally {
      delete process.env.ACCESSCTL_ADOPT_EXISTING;
    }
  });

  it("two resources of one run cannot claim one object: a 409 on a rule this run created, two adoptIds with one id", async () => {
    const p = emu.fixtures.ipPolicies[1];
    const first = await rule.provider.create({ ipPolicyId: p, cidr: "10.77.0.0/16", action: "deny" });
    const second = await rule.provider
      .create({ ipPolicyId: p, cidr: "10.77.0.0/16", action: "deny" })
      .catch((e: Error) => e);
    expect(second.message).toBe(
      `create IP policy rule 10.77.0.0/16: IP policy rule ${first.id} is already managed by another resource of this stack; declare it once`,
    );
    const other = (
      await client(emu.url, emu.adminToken).post("/ip_policy_rules", {
        ip_policy_id: p,
        cidr: "10.78.0.0/16",
        action: "deny",
      })
    ).body;
    await rule.provider.create({
      adoptId: other.id,
      ipPolicyId: p,
      cidr: "10.78.0.0/16",
      action: "deny",
      description: "one",
    });
    const twice = await rule.provider
      .create({ adoptId: other.id, ipPolicyId: p, cidr: "10.78.0.0/16", action: "deny", description: "two" })
      .catch((e: Error) => e);
    expect(twice.message).toBe(
      `adopt IP policy rule ${other.id}: IP policy rule ${other.id} is already managed by another resource of this stack; declare it once`,
    );
    expect((await client(emu.url, emu.adminToken).get(`/ip_policy_rules/${other.id}`)).body.description).toBe("one");
    const key = (await client(emu.url, emu.adminToken).post("/api_keys", { description: "k" })).body;
    await apiKey.provider.create({ adoptId: key.id });
    expect((await apiKey.provider.create({ adoptId: key.id }).catch((e: Error) => e)).message).toMatch(
      /already managed by another resource of this stack/,
    );
  });
});

describe("TlsEdgeMutualTls", () => {
  it("puts, reads, updates and deletes the module; the id is the edge id", async () => {
    const p = mtls.provider;
    const edgeId = emu.fixtures.tlsEdges[1];
    const cas = emu.fixtures.certificateAuthorities;
    const created = await p.create({ edgeId, certificateAuthorityIds: [cas[1], cas[0]] });
    expect(created).toEqual({
      id: edgeId,
      outs: {
        edgeId,
        enabled: true,
        certificateAuthorityIds: [cas[1], cas[0]],
        certificateAuthorities: [
          { id: cas[1], uri: expect.stringContaining(cas[1]) },
          { id: cas[0], uri: expect.stringContaining(cas[0]) },
        ],
      },
    });
    const updated = await p.update(edgeId, created.outs, { edgeId, certificateAuthorityIds: [cas[0]], enabled: false });
    expect(updated.outs).toMatchObject({ enabled: false, certificateAuthorityIds: [cas[0]] });
    expect((await p.read(edgeId, updated.outs)).props).toEqual(updated.outs);
    newRun(); // (a delete in the run that created the module is a replacement's: that leaves it)
    await p.delete(edgeId, updated.outs);
    expect(await p.read(edgeId, updated.outs)).toEqual({});
    await p.delete(edgeId, updated.outs);
  });

  it("refuses a second module resource for one edge in the same run", async () => {
    const edgeId = emu.fixtures.tlsEdges[1];
    const declared = { edgeId, certificateAuthorityIds: [emu.fixtures.certificateAuthorities[0]] };
    const first = await mtls.provider.create(declared);
    const err = await mtls.provider.create(declared).catch((e: Error) => e);
    expect(err.message).toBe(
      `set mutual TLS of TLS edge ${edgeId}: TLS edge ${edgeId} is already managed by another resource of this stack; declare it once`,
    );
    newRun();
    await mtls.provider.delete(edgeId, first.outs);
  });

  it("reads back the inputs check stores for a module declared with enabled: true (no refresh diff on every preview)", async () => {
    const edgeId = emu.fixtures.tlsEdges[0];
    const cas = [emu.fixtures.certificateAuthorities[0]];
    await client(emu.url, emu.adminToken).put(`/edges/tls/${edgeId}/mutual_tls`, {
      enabled: true,
      certificate_authority_ids: cas,
    });
    for (const enabled of [true, undefined]) {
      const { inputs, failures } = await mtls.provider.check(
        {},
        { edgeId, certificateAuthorityIds: cas, ...(enabled === undefined ? {} : { enabled }) },
      );
      expect(failures).toEqual([]);
      expect((await mtls.provider.read(edgeId, {})).inputs).toEqual(inputs);
    }
  });

  it("names an unknown certificate authority", async () => {
    const err = await mtls.provider
      .create({ edgeId: emu.fixtures.tlsEdges[0], certificateAuthorityIds: ["ca_nope"] })
      .catch((e: Error) => e);
    expect(err.message).toContain("no such certificate authority: ca_nope");
  });
});
