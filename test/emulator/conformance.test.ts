// The emulator against every rule of the contract and of the emulator issue, over real HTTP.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, client, listAll, RunningEmulator, startEmulator } from "../helpers/emulator";

let emu: RunningEmulator;
let admin: ReturnType<typeof client>;
let member: ReturnType<typeof client>;
let other: ReturnType<typeof client>;

beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  admin = client(emu.url, emu.adminToken);
  member = client(emu.url, emu.memberToken);
  other = client(emu.url, emu.otherAccountToken);
});
afterAll(async () => {
  expect(await emu.stop()).toBe(0);
});

function expectError(res: { status: number; body: any; headers: Headers }, status: number, msg?: RegExp) {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({
    error_code: expect.stringMatching(/^ERR_[A-Z_]+$/),
    status_code: status,
    msg: expect.any(String),
    details: { operation_id: expect.stringMatching(/^op_/) },
  });
  expect(res.headers.get("x-operation-id")).toBe(res.body.details.operation_id);
  if (msg) expect(res.body.msg).toMatch(msg);
}

const policy = () => emu.fixtures.ipPolicies[0];
const rule = (cidr: string, extra: Record<string, unknown> = {}) => ({
  cidr,
  ip_policy_id: policy(),
  action: "allow",
  ...extra,
});

describe("startup", () => {
  it("prints the URL, three tokens and the fixtures", () => {
    expect(emu.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(new Set([emu.adminToken, emu.memberToken, emu.otherAccountToken]).size).toBe(3);
    const f = emu.fixtures;
    expect(f.users).toEqual([
      { id: expect.stringMatching(/^usr_/), admin: true },
      { id: expect.stringMatching(/^usr_/), admin: false },
    ]);
    expect(f.bots[0]).toMatch(/^bot_/);
    expect(f.ipPolicies.length).toBeGreaterThanOrEqual(2);
    expect(f.certificateAuthorities.every((id) => id.startsWith("ca_"))).toBe(true);
    expect(f.tlsEdges.every((id) => id.startsWith("edgtls_"))).toBe(true);
  });
});

describe("auth and headers", () => {
  it("refuses a missing, malformed or unknown bearer token with 401", async () => {
    expectError(await call(emu.url, undefined, "GET", "/api_keys"), 401, /Authorization/);
    expectError(
      await call(emu.url, undefined, "GET", "/api_keys", undefined, { authorization: `Basic ${emu.adminToken}` }),
      401,
    );
    expectError(await call(emu.url, "nope_nope", "GET", "/api_keys"), 401);
    expectError(await call(emu.url, emu.adminToken + "x", "GET", "/api_keys"), 401);
  });

  it("requires Service-Version: 2 and names the header", async () => {
    expectError(await admin.get("/api_keys", { "service-version": undefined }), 400, /Service-Version/);
    expectError(await admin.get("/api_keys", { "service-version": "1" }), 400, /Service-Version/);
  });

  it("stops accepting a key's token as soon as the key is deleted", async () => {
    const created = await admin.post("/api_keys", { description: "short-lived" });
    expect(created.status).toBe(201);
    const token = created.body.token as string;
    expect((await call(emu.url, token, "GET", "/api_keys")).status).toBe(200);
    expect((await admin.delete(`/api_keys/${created.body.id}`)).status).toBe(204);
    expectError(await call(emu.url, token, "GET", "/api_keys"), 401);
  });

  it("authenticates a key's token as the key's owner", async () => {
    const [adminUser, memberUser] = emu.fixtures.users;
    const forMember = await admin.post("/api_keys", { owner_id: memberUser.id });
    expect(forMember.body.owner_id).toBe(memberUser.id);
    const asMember = client(emu.url, forMember.body.token);
    const own = await asMember.post("/api_keys", {});
    expect(own.body.owner_id).toBe(memberUser.id);
    expectError(await asMember.post("/api_keys", { owner_id: adminUser.id }), 403, /admin/);
    await admin.delete(`/api_keys/${forMember.body.id}`);
    await admin.delete(`/api_keys/${own.body.id}`);
  });

  it("carries an operation id header on every response, success or not", async () => {
    const ok = await admin.get("/api_keys");
    expect(ok.headers.get("x-operation-id")).toMatch(/^op_/);
    const bad = await admin.get("/nowhere");
    expect(bad.headers.get("x-operation-id")).toBe(bad.body.details.operation_id);
  });
});

describe("bodies", () => {
  it("rejects invalid JSON, non-objects, unknown fields and wrong types with 400 naming the field", async () => {
    expectError(await admin.post("/api_keys", "{not json"), 400, /JSON/);
    expectError(await admin.post("/api_keys", "[1,2]"), 400, /object/);
    expectError(await admin.post("/api_keys", "null"), 400, /object/);
    expectError(await admin.post("/api_keys", { descripton: "typo" }), 400, /descripton/);
    expectError(await admin.post("/api_keys", { description: 5 }), 400, /description/);
    expectError(await admin.post("/ip_policy_rules", rule("10.9.0.0/16", { metadata: ["x"] })), 400, /metadata/);
    expectError(
      await admin.put(`/edges/tls/${emu.fixtures.tlsEdges[0]}/mutual_tls`, { enabled: "yes" }),
      400,
      /enabled/,
    );
    expectError(
      await admin.put(`/edges/tls/${emu.fixtures.tlsEdges[0]}/mutual_tls`, { certificate_authority_ids: "ca_x" }),
      400,
      /certificate_authority_ids/,
    );
  });

  it("answers 415 to a body that is not application/json", async () => {
    expectError(await admin.post("/api_keys", "{}", { "content-type": "text/plain" }), 415, /application\/json/);
    expect((await admin.post("/api_keys", "{}", { "content-type": "application/json; charset=utf-8" })).status).toBe(
      201,
    );
  });
});

describe("API keys", () => {
  it("returns the token only in the create response", async () => {
    const created = await admin.post("/api_keys", { description: "ci", metadata: '{"team":"infra"}' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^ak_/),
      uri: `${emu.url}/api_keys/${created.body.id}`,
      description: "ci",
      metadata: '{"team":"infra"}',
      created_at: expect.any(String),
      token: expect.any(String),
      owner_id: emu.fixtures.users[0].id,
    });
    expect(new Date(created.body.created_at).toISOString()).toBe(created.body.created_at);
    const id = created.body.id;
    expect((await admin.get(`/api_keys/${id}`)).body.token).toBeNull();
    expect((await admin.patch(`/api_keys/${id}`, { description: "ci2" })).body.token).toBeNull();
    const listed = (await listAll(emu.url, emu.adminToken, "/api_keys", "keys")).find((k) => k.id === id);
    expect(listed.token).toBeNull();
    expect(listed.description).toBe("ci2");
  });

  it("checks owner_id: defaults to the caller, 403 for a member naming another, 400 for an unknown owner", async () => {
    const [adminUser] = emu.fixtures.users;
    const mine = await member.post("/api_keys", {});
    expect(mine.body.owner_id).toBe(emu.fixtures.users[1].id);
    expectError(await member.post("/api_keys", { owner_id: adminUser.id }), 403, new RegExp(adminUser.id));
    expectError(await admin.post("/api_keys", { owner_id: "usr_doesnotexist" }), 400, /usr_doesnotexist/);
    const forBot = await admin.post("/api_keys", { owner_id: emu.fixtures.bots[0] });
    expect(forBot.body.owner_id).toBe(emu.fixtures.bots[0]);
  });

  it("updates only description and metadata; owner_id in PATCH is a 400", async () => {
    const key = (await admin.post("/api_keys", { description: "a", metadata: "m" })).body;
    expectError(await admin.patch(`/api_keys/${key.id}`, { owner_id: emu.fixtures.users[1].id }), 400, /owner_id/);
    const cleared = await admin.patch(`/api_keys/${key.id}`, { description: "" });
    expect(cleared.status).toBe(200);
    // Unset text reads "" in the answer about one object (the service's own clients read both as present).
    expect(cleared.body.description).toBe("");
    expect(cleared.body.metadata).toBe("m");
    const bare = (await admin.post("/api_keys", {})).body;
    expect([bare.description, bare.metadata]).toEqual(["", ""]);
    expect((await admin.get(`/api_keys/${bare.id}`)).body).toMatchObject({ description: "", metadata: "" });
    // A list item leaves an unset metadata out, as the contract says of a listed key.
    const item = (await admin.get("/api_keys")).body.keys.find((k: { id: string }) => k.id === bare.id);
    expect(item.description).toBe("");
    expect("metadata" in item).toBe(false);
  });
});

describe("byte limits", () => {
  it("counts UTF-8 bytes: 255/4096 pass, one more fails naming the field, size and limit", async () => {
    const atLimit = await admin.post("/api_keys", {
      description: "é".repeat(127) + "a",
      metadata: "€".repeat(1365) + "a",
    });
    expect(atLimit.status).toBe(201);
    expectError(
      await admin.post("/api_keys", { description: "é".repeat(128) }),
      400,
      /description is 256 bytes; the limit is 255/,
    );
    expectError(
      await admin.post("/api_keys", { metadata: "x".repeat(4097) }),
      400,
      /metadata is 4097 bytes; the limit is 4096/,
    );
    expectError(
      await admin.post("/ip_policy_rules", rule("10.44.0.0/16", { description: "😀".repeat(64) })),
      400,
      /description is 256 bytes/,
    );
    expectError(
      await admin.patch(`/api_keys/${atLimit.body.id}`, { description: "é".repeat(128) }),
      400,
      /description/,
    );
  });
});

describe("IP policy rules", () => {
  it("creates a rule with every field of the contract", async () => {
    const res = await admin.post("/ip_policy_rules", rule("203.0.113.0/24", { description: "HQ", metadata: "m" }));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^ipr_/),
      uri: `${emu.url}/ip_policy_rules/${res.body.id}`,
      created_at: expect.any(String),
      description: "HQ",
      metadata: "m",
      cidr: "203.0.113.0/24",
      ip_policy: { id: policy(), uri: expect.stringMatching(new RegExp(`^${emu.url}/.+${policy()}$`)) },
      action: "allow",
    });
    expect((await admin.get(`/ip_policy_rules/${res.body.id}`)).body).toEqual(res.body);
  });

  it("requires cidr, ip_policy_id and action, and action is allow or deny", async () => {
    for (const field of ["cidr", "ip_policy_id", "action"]) {
      const body: Record<string, unknown> = rule("10.1.0.0/16");
      delete body[field];
      expectError(await admin.post("/ip_policy_rules", body), 400, new RegExp(field));
    }
    expectError(await admin.post("/ip_policy_rules", rule("10.1.0.0/16", { action: "block" })), 400, /action/);
  });

  it("answers 404 naming an unknown policy", async () => {
    expectError(
      await admin.post("/ip_policy_rules", rule("10.1.0.0/16", { ip_policy_id: "ipp_nope" })),
      404,
      /ipp_nope/,
    );
  });

  it("validates CIDRs and suggests the network address", async () => {
    expectError(await admin.post("/ip_policy_rules", rule("10.0.0.5/8")), 400, /did you mean 10\.0\.0\.0\/8\?/);
    expectError(await admin.post("/ip_policy_rules", rule("2001:db8::1/32")), 400, /did you mean 2001:db8::\/32\?/);
    for (const bad of [
      "10.0.0.0.0",
      "10.0.0.0/33",
      "10.0.0/8",
      "300.0.0.0/8",
      "::/129",
      "fe80::%eth0/64",
      "hello/8",
      "010.0.0.0/8",
      "10.0.0.0/-1",
      "10.0.0.0/08",
    ]) {
      expectError(await admin.post("/ip_policy_rules", rule(bad)), 400, /cidr/);
    }
  });

  it("takes one address as the range of that host (/32, /128), one rule whatever its spelling (409)", async () => {
    const v4 = await admin.post("/ip_policy_rules", rule("198.51.100.7", { ip_policy_id: emu.fixtures.ipPolicies[1] }));
    expect(v4.status).toBe(201);
    expect(v4.body.cidr).toBe("198.51.100.7/32");
    expectError(
      await admin.post("/ip_policy_rules", rule("198.51.100.7/32", { ip_policy_id: emu.fixtures.ipPolicies[1] })),
      409,
      /198\.51\.100\.7\/32/,
    );
    const v6 = await admin.post("/ip_policy_rules", rule("2001:DB8::7", { ip_policy_id: emu.fixtures.ipPolicies[1] }));
    expect(v6.status).toBe(201);
    expect(v6.body.cidr).toBe("2001:db8::7/128");
    expectError(
      await admin.post("/ip_policy_rules", rule("::ffff:198.51.100.7", { ip_policy_id: emu.fixtures.ipPolicies[1] })),
      409,
      /198\.51\.100\.7\/32/,
    );
    for (const made of [v4, v6]) expect((await admin.delete(`/ip_policy_rules/${made.body.id}`)).status).toBe(204);
  });

  it("stores IPv6 in canonical lower-case compressed form and refuses the same CIDR twice (409)", async () => {
    const res = await admin.post("/ip_policy_rules", rule("2001:0DB8:00AA:0000:0000:0000:0000:0000/48"));
    expect(res.status).toBe(201);
    expect(res.body.cidr).toBe("2001:db8:aa::/48");
    expectError(await admin.post("/ip_policy_rules", rule("2001:db8:AA::/48")), 409, /2001:db8:aa::\/48/);
    // The same range in another policy is fine.
    expect(
      (await admin.post("/ip_policy_rules", rule("2001:db8:aa::/48", { ip_policy_id: emu.fixtures.ipPolicies[1] })))
        .status,
    ).toBe(201);
  });

  it("holds one CIDR per policy whatever its spelling: an IPv4-mapped IPv6 range is its IPv4 range (409, on create and PATCH)", async () => {
    const own = rule("10.0.0.0/8", { ip_policy_id: emu.fixtures.ipPolicies[1] });
    const first = await admin.post("/ip_policy_rules", own);
    expect(first.status).toBe(201);
    for (const spelling of ["::ffff:10.0.0.0/104", "::FFFF:a00:0/104", "0:0:0:0:0:ffff:10.0.0.0/104"]) {
      expectError(await admin.post("/ip_policy_rules", { ...own, cidr: spelling }), 409, /10\.0\.0\.0\/8/);
    }
    const mapped = await admin.post("/ip_policy_rules", { ...own, cidr: "::ffff:192.168.0.0/112" });
    expect(mapped.status).toBe(201);
    expect(mapped.body.cidr).toBe("192.168.0.0/16");
    const other = (await admin.post("/ip_policy_rules", { ...own, cidr: "172.16.0.0/12" })).body;
    expectError(
      await admin.patch(`/ip_policy_rules/${other.id}`, { cidr: "::ffff:10.0.0.0/104" }),
      409,
      /10\.0\.0\.0\/8/,
    );
    expectError(await admin.post("/ip_policy_rules", { ...own, cidr: "::ffff:10.0.0.1/104" }), 400, /host bits/);
    const ids = [first.body.id, mapped.body.id, other.id];
    const listed = (await listAll(emu.url, emu.adminToken, "/ip_policy_rules", "ip_policy_rules")).filter(
      (r) => r.ip_policy.id === own.ip_policy_id && (ids.includes(r.id) || /^10\.0\.0\.0\/|ffff/.test(r.cidr)),
    );
    expect(listed.map((r) => r.cidr).sort()).toEqual(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]);
    for (const r of listed) await admin.delete(`/ip_policy_rules/${r.id}`);
  });

  it("updates description, metadata and cidr; refuses action and ip_policy_id", async () => {
    const created = (await admin.post("/ip_policy_rules", rule("192.0.2.0/24", { description: "d", metadata: "m" })))
      .body;
    const updated = await admin.patch(`/ip_policy_rules/${created.id}`, { cidr: "192.0.2.128/25", metadata: "" });
    expect(updated.status).toBe(200);
    expect(updated.body.cidr).toBe("192.0.2.128/25");
    expect(updated.body.metadata).toBe("");
    expect(updated.body.description).toBe("d");
    const bare = (await admin.post("/ip_policy_rules", rule("192.0.3.0/24"))).body;
    expect([bare.description, bare.metadata]).toEqual(["", ""]);
    expectError(await admin.patch(`/ip_policy_rules/${created.id}`, { action: "deny" }), 400, /action/);
    expectError(
      await admin.patch(`/ip_policy_rules/${created.id}`, { ip_policy_id: emu.fixtures.ipPolicies[1] }),
      400,
      /ip_policy_id/,
    );
    expectError(
      await admin.patch(`/ip_policy_rules/${created.id}`, { cidr: "192.0.2.1/25" }),
      400,
      /did you mean 192\.0\.2\.0\/25/,
    );
    const dup = (await admin.post("/ip_policy_rules", rule("198.51.100.0/24"))).body;
    expectError(await admin.patch(`/ip_policy_rules/${dup.id}`, { cidr: "192.0.2.128/25" }), 409);
  });
});

describe("mutual TLS", () => {
  const edge = () => emu.fixtures.tlsEdges[0];
  const cas = () => emu.fixtures.certificateAuthorities;

  it("answers 404 for a module never set, replaces with PUT, keeps CA order, defaults enabled to true", async () => {
    const path = `/edges/tls/${emu.fixtures.tlsEdges[1]}/mutual_tls`;
    expectError(await admin.get(path), 404, /edgtls_/);
    const put = await admin.put(path, { certificate_authority_ids: [cas()[1], cas()[0]] });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      enabled: true,
      certificate_authorities: [
        { id: cas()[1], uri: expect.stringContaining(cas()[1]) },
        { id: cas()[0], uri: expect.stringContaining(cas()[0]) },
      ],
    });
    expect((await admin.get(path)).body).toEqual(put.body);
    const off = await admin.put(path, { enabled: false, certificate_authority_ids: [cas()[0]] });
    expect(off.body.enabled).toBe(false);
    expect(off.body.certificate_authorities).toHaveLength(1);
    const del = await admin.delete(path);
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expectError(await admin.get(path), 404);
  });

  it("answers 404 for an unknown edge and 400 naming an unknown CA", async () => {
    expectError(
      await admin.put(`/edges/tls/edgtls_nope/mutual_tls`, { certificate_authority_ids: [] }),
      404,
      /edgtls_nope/,
    );
    expectError(
      await admin.put(`/edges/tls/${edge()}/mutual_tls`, { certificate_authority_ids: [cas()[0], "ca_nope"] }),
      400,
      /ca_nope/,
    );
  });
});

describe("lists and paging", () => {
  it("lists newest first and pages with limit, before_seq and an absolute next_page_uri", async () => {
    const created: string[] = [];
    for (let i = 0; i < 5; i++) {
      created.push(
        (await admin.post("/ip_policy_rules", rule(`172.16.${i}.0/24`, { ip_policy_id: emu.fixtures.ipPolicies[1] })))
          .body.id,
      );
    }
    const first = await admin.get("/ip_policy_rules?limit=2");
    expect(first.status).toBe(200);
    expect(first.body.ip_policy_rules.map((r: any) => r.id)).toEqual([created[4], created[3]]);
    expect(first.body.uri).toBe(`${emu.url}/ip_policy_rules?limit=2`);
    expect(first.body.next_page_uri).toMatch(new RegExp(`^${emu.url}/ip_policy_rules\\?`));
    const second = await admin.get(first.body.next_page_uri);
    expect(second.body.ip_policy_rules.map((r: any) => r.id)).toEqual([created[2], created[1]]);
    const all = await listAll(emu.url, emu.adminToken, "/ip_policy_rules?limit=3", "ip_policy_rules");
    const ids = all.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.indexOf(created[4])).toBeLessThan(ids.indexOf(created[0]));
    const last = await admin.get("/ip_policy_rules?limit=100");
    expect(last.body.next_page_uri).toBeNull();
  });

  it("refuses a limit outside 1–100, a before_seq that is not a number and an unknown before_id", async () => {
    for (const limit of ["0", "101", "x", "-1", "1.5"])
      expectError(await admin.get(`/api_keys?limit=${limit}`), 400, /limit/);
    for (const seq of ["x", "-1", "1.5", "", "1e3"])
      expectError(await admin.get(`/api_keys?before_seq=${seq}`), 400, /before_seq/);
    expectError(await admin.get("/api_keys?before_id=ak_nope"), 400, /before_id/);
    // An unknown parameter is named when it is a plain identifier, so that a typo can be seen.
    expectError(await admin.get("/api_keys?pageSize=5"), 400, /unknown query parameter: pageSize/);
    expectError(await admin.get("/api_keys?before_seq_id=5"), 400, /unknown query parameter: before_seq_id/);
    expectError(await admin.get("/api_keys?page-size=5"), 400, /unknown query parameter: \(a name that is not shown\)/);
  });

  it("keeps next_page_uri valid when the last object of the page is deleted meanwhile, listing each remaining object once", async () => {
    const own = await startEmulator(["--rate-limit", "off"]);
    try {
      const api = client(own.url, own.adminToken);
      const ids: string[] = []; // oldest first
      for (let i = 0; i < 150; i++) {
        const res = await api.post("/ip_policy_rules", {
          cidr: `10.50.${i}.0/24`,
          ip_policy_id: own.fixtures.ipPolicies[0],
          action: "allow",
        });
        expect(res.status).toBe(201);
        ids.push(res.body.id);
      }
      const first = await api.get("/ip_policy_rules");
      const page1 = first.body.ip_policy_rules.map((r: any) => r.id);
      expect(page1).toEqual(ids.slice(50).reverse());
      expect((await api.delete(`/ip_policy_rules/${page1[99]}`)).status).toBe(204);
      // Created meanwhile: newer than the cursor, so on no later page.
      expect(
        (
          await api.post("/ip_policy_rules", {
            cidr: "10.51.0.0/24",
            ip_policy_id: own.fixtures.ipPolicies[0],
            action: "allow",
          })
        ).status,
      ).toBe(201);
      const second = await api.get(first.body.next_page_uri);
      expect(second.status).toBe(200);
      expect(second.body.ip_policy_rules.map((r: any) => r.id)).toEqual(ids.slice(0, 50).reverse());
      expect(second.body.next_page_uri).toBeNull();
      // A link of an older version (before_id of an object that exists) still pages.
      const old = await api.get(`/ip_policy_rules?limit=2&before_id=${ids[10]}`);
      expect(old.status).toBe(200);
      expect(old.body.ip_policy_rules.map((r: any) => r.id)).toEqual([ids[9], ids[8]]);
      expect(old.body.next_page_uri).toMatch(new RegExp(`^${own.url}/ip_policy_rules\\?limit=2&before_seq=\\d+$`));
      const walked = await listAll(own.url, own.adminToken, "/ip_policy_rules?limit=7", "ip_policy_rules");
      expect(walked).toHaveLength(150);
      expect(new Set(walked.map((r) => r.id)).size).toBe(150);
    } finally {
      await own.stop();
    }
  });
});

describe("accounts", () => {
  it("keeps the other account from seeing or touching the first account's objects", async () => {
    const key = (await admin.post("/api_keys", { description: "mine" })).body;
    const rl = (await admin.post("/ip_policy_rules", rule("100.64.0.0/10"))).body;
    const edgePath = `/edges/tls/${emu.fixtures.tlsEdges[0]}/mutual_tls`;
    expect(
      (await admin.put(edgePath, { certificate_authority_ids: [emu.fixtures.certificateAuthorities[0]] })).status,
    ).toBe(200);

    const keys = await listAll(emu.url, emu.otherAccountToken, "/api_keys", "keys");
    expect(keys.map((k) => k.id)).not.toContain(key.id);
    const rules = await listAll(emu.url, emu.otherAccountToken, "/ip_policy_rules", "ip_policy_rules");
    expect(rules.map((r) => r.id)).not.toContain(rl.id);
    expectError(await other.get(`/api_keys/${key.id}`), 404);
    expectError(await other.patch(`/api_keys/${key.id}`, { description: "x" }), 404);
    expectError(await other.delete(`/api_keys/${key.id}`), 404);
    expectError(await other.get(`/ip_policy_rules/${rl.id}`), 404);
    expectError(await other.patch(`/ip_policy_rules/${rl.id}`, { description: "x" }), 404);
    expectError(await other.delete(`/ip_policy_rules/${rl.id}`), 404);
    expectError(await other.get(edgePath), 404);
    expectError(await other.delete(edgePath), 404);
    expectError(await other.put(edgePath, { certificate_authority_ids: [] }), 404);
    expectError(await other.post("/ip_policy_rules", rule("100.64.0.0/10")), 404, /IP policy/);
    const otherEdge = `/edges/tls/${emu.otherAccountFixtures.tlsEdges[0]}/mutual_tls`;
    expectError(
      await other.put(otherEdge, { certificate_authority_ids: [emu.fixtures.certificateAuthorities[0]] }),
      400,
      /ca_/,
    );
    expectError(await other.post("/api_keys", { owner_id: emu.fixtures.users[1].id }), 400, /owner_id/);
    // Everything is still there for its owner.
    expect((await admin.get(`/api_keys/${key.id}`)).status).toBe(200);
    expect((await admin.get(edgePath)).status).toBe(200);
  });
});

describe("routing", () => {
  it("answers 404 for unknown ids and paths, 405 for a wrong method, 204 with no body for DELETE", async () => {
    expectError(await admin.get("/api_keys/ak_nope"), 404, /ak_nope/);
    expectError(await admin.get("/ip_policy_rules/ipr_nope"), 404, /ipr_nope/);
    expectError(await admin.delete("/ip_policy_rules/ipr_nope"), 404);
    expectError(await admin.get("/no/such/path"), 404);
    expectError(await admin.put("/api_keys", {}), 405, /PUT/);
    expectError(await admin.post(`/edges/tls/${emu.fixtures.tlsEdges[0]}/mutual_tls`, {}), 405);
    const key = (await admin.post("/api_keys", {})).body;
    const del = await admin.delete(`/api_keys/${key.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expectError(await admin.delete(`/api_keys/${key.id}`), 404);
  });

  it("decodes percent-encoded ids and cannot be walked to another path", async () => {
    expectError(await admin.get("/api_keys/..%2Fip_policy_rules"), 404);
    expectError(await admin.get("/api_keys/%2E%2E"), 404);
    expectError(await admin.get(`/api_keys/${encodeURIComponent("ak_x?y#z")}`), 404);
  });
});

describe("no tokens in errors or logs", () => {
  it("never echoes a token", async () => {
    const created = await admin.post("/api_keys", { description: "secret holder" });
    const token = created.body.token as string;
    const responses = [
      await call(emu.url, token + "junk", "GET", "/api_keys"),
      await call(emu.url, undefined, "GET", "/api_keys", undefined, { authorization: `Bearer ${token} extra` }),
      await admin.get(`/api_keys/${token}`),
    ];
    for (const r of responses) {
      expect(r.text).not.toContain(token);
      expect(r.text).not.toContain(emu.adminToken);
    }
    expect(emu.stderr()).not.toContain(token);
    expect(emu.stderr()).not.toContain(emu.adminToken);
  });
});
