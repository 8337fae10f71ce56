// read() answered from the list endpoints (provider/list-reads.ts), through the serialized
// providers against the emulator: what a burst of reads costs, when a GET is still made, when a
// cached walk is dropped, and that a hostile list cannot make a walk run forever.
import * as http from "node:http";
import { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, RunningEmulator, startEmulator } from "../helpers/emulator";
import { configureRequest, LoadedProvider, serializedProvider } from "../helpers/provider";

let emu: RunningEmulator;
let rule: LoadedProvider;
let apiKey: LoadedProvider;
let api: ReturnType<typeof client>;

function configure(apiUrl: string, key: string) {
  return rule.provider.configure(
    configureRequest({
      "accessctl:apiUrl": apiUrl,
      "accessctl:apiKey": key,
      "accessctl:maxRequestsPerMinute": "100000",
      "accessctl:maxRetries": "1",
    }),
  );
}
const requests = async () => (await emu.stats()).requests;
const quiet = () => new Promise((r) => setTimeout(r, 10_500)); // past list-reads' MAX_AGE_MS: the next read walks again

beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
  api = client(emu.url, emu.adminToken);
  rule = await serializedProvider("ip-policy-rule");
  apiKey = await serializedProvider("api-key");
  await configure(emu.url, emu.adminToken);
});
afterAll(async () => {
  await emu?.stop();
});

async function makeRules(count: number, second: number): Promise<any[]> {
  const made = [];
  for (let i = 0; i < count; i++) {
    const res = await api.post("/ip_policy_rules", {
      ip_policy_id: emu.fixtures.ipPolicies[i % 2],
      cidr: `10.${second}.${i}.0/24`,
      action: "allow",
      description: `r${i}`,
    });
    expect(res.status).toBe(201);
    made.push(res.body);
  }
  return made;
}

describe("list-backed reads", () => {
  it("answer a burst of 250 rule and 3 key reads with one walk of each list, the same as one GET each", async () => {
    const rules = await makeRules(250, 1);
    const keys = [];
    for (let i = 0; i < 3; i++) keys.push((await api.post("/api_keys", { description: `k${i}` })).body);
    const readAll = () =>
      Promise.all([
        ...rules.map((r) => rule.provider.read(r.id, { cidr: r.cidr })),
        ...keys.map((k) => apiKey.provider.read(k.id, { token: "kept" })),
      ]);

    const before = await requests();
    const listed = await readAll();
    expect((await requests()) - before).toBe(3 + 1); // ⌈250/100⌉ rule pages + 1 key page

    process.env.ACCESSCTL_READ_MODE = "get";
    try {
      const before2 = await requests();
      const got = await readAll();
      expect((await requests()) - before2).toBe(253);
      expect(listed).toEqual(got); // same outputs either way (the token kept from state)
    } finally {
      delete process.env.ACCESSCTL_READ_MODE;
    }
    expect(listed[0]).toMatchObject({
      id: rules[0].id,
      props: { cidr: rules[0].cidr, description: "r0", ipPolicyId: rules[0].ip_policy.id },
    });
    expect(listed[250].props).toMatchObject({ description: "k0", token: "kept" });
  });

  it("confirm an object missing from the walk with its own GET: found if created since, gone if 404", async () => {
    await quiet();
    const [first] = await makeRules(1, 2);
    const before = await requests();
    expect((await rule.provider.read(first.id, {})).props.cidr).toBe(first.cidr); // a new walk: 4 pages
    const walked = (await requests()) - before;
    const [later] = await makeRules(1, 3); // by another client, after our walk
    expect((await rule.provider.read(later.id, {})).props.cidr).toBe(later.cidr);
    expect(await rule.provider.read("ipr_doesnotexist", {})).toEqual({});
    expect((await requests()) - before).toBe(walked + 1 + 2); // + the POST, + one GET each
  });

  it("walk again after a write of this process", async () => {
    const [a, b] = await makeRules(2, 4);
    const update = (description: string) =>
      rule.provider.update(a.id, {}, { ipPolicyId: a.ip_policy.id, cidr: a.cidr, action: "allow", description });
    await update("ours"); // a write: the next reads walk again, and see a and b
    await Promise.all([rule.provider.read(a.id, {}), rule.provider.read(b.id, {})]);
    await api.patch(`/ip_policy_rules/${b.id}`, { description: "changed outside" });
    expect((await rule.provider.read(b.id, {})).props.description).toBe("r1"); // the shared walk: a snapshot
    await update("ours again");
    expect((await rule.provider.read(b.id, {})).props.description).toBe("changed outside");
  });

  it("serve one burst only: reads that keep coming every 2 s see a change made through the API within the walk's age bound", async () => {
    await quiet();
    const [a, b] = await makeRules(2, 5);
    const seen: { at: number; cidr?: string; bGone: boolean }[] = [];
    const start = Date.now();
    for (let i = 0; i < 8; i++) {
      const [ra, rb] = await Promise.all([rule.provider.read(a.id, {}), rule.provider.read(b.id, {})]);
      seen.push({ at: Date.now() - start, cidr: ra.props?.cidr, bGone: rb.id === undefined });
      if (i === 0) {
        // Changed by someone else, right after the first read's walk.
        expect((await api.patch(`/ip_policy_rules/${a.id}`, { cidr: "10.99.5.0/24" })).status).toBe(200);
        expect((await api.delete(`/ip_policy_rules/${b.id}`)).status).toBe(204);
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
    expect(seen[1]).toMatchObject({ cidr: a.cidr, bGone: false }); // within the burst: the walk's snapshot
    // Past the bound (10 s after the walk began), every read sees the change and the deletion.
    for (const s of seen.filter((s) => s.at > 10_500)) expect(s).toMatchObject({ cidr: "10.99.5.0/24", bGone: true });
    expect(seen.filter((s) => s.at > 10_500).length).toBeGreaterThan(1);
  }, 60_000);

  it("stop at a looping list (same URI, or the same page under new URIs) and fall back to GETs", async () => {
    for (const loop of ["same-uri", "new-uris"]) {
      const hits: string[] = [];
      const server = http.createServer((req, res) => {
        hits.push(req.url!);
        const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const item = {
          id: "ipr_listed",
          uri: `${origin}/ip_policy_rules/ipr_listed`,
          created_at: "2026-01-01T00:00:00Z",
          cidr: "10.0.0.0/8",
          ip_policy: { id: "ipp_a", uri: "u" },
          action: "allow",
        };
        res.setHeader("content-type", "application/json");
        if (req.url!.startsWith("/ip_policy_rules/")) {
          res.statusCode = 404;
          res.end(
            JSON.stringify({
              error_code: "ERR_NOT_FOUND",
              status_code: 404,
              msg: "not found",
              details: { operation_id: "op_1" },
            }),
          );
          return;
        }
        const next = loop === "same-uri" ? `${origin}/ip_policy_rules` : `${origin}/ip_policy_rules?p=${hits.length}`;
        res.end(JSON.stringify({ ip_policy_rules: [item], uri: "x", next_page_uri: next }));
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      try {
        await configure(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, "test-key-0123456789");
        expect((await rule.provider.read("ipr_listed", {})).props.cidr).toBe("10.0.0.0/8");
        expect(await rule.provider.read("ipr_other", {})).toEqual({});
        const pages = hits.filter((h) => !h.startsWith("/ip_policy_rules/"));
        expect(pages.length).toBe(loop === "same-uri" ? 1 : 2);
        expect(hits).toContain("/ip_policy_rules/ipr_other");
      } finally {
        server.close();
        await configure(emu.url, emu.adminToken);
      }
    }
  });
});
