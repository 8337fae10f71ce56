// The API client under faults: the emulator's --fail-rate and --rate-limit, and a small server
// that misbehaves on purpose. Everything over real HTTP.
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { listAll, REPO, startEmulator } from "../helpers/emulator";
import { compiled, configureRequest, serializedProvider } from "../helpers/provider";

const client = compiled("provider/http/api.js");
const walker = compiled("provider/http/pages.js");
const config = compiled("provider/config.js");
/** As the host calls it: ACCESSCTL_ACCEPT_GONE is taken only in a read operation (http/trust.ts acceptGoneApplies). */
const asRead = <T>(fn: () => Promise<T>): Promise<T> =>
  compiled("provider/operation.js").inOperation(fn, undefined, "read");

function useApi(apiUrl: string, apiKey: string, maxRequestsPerMinute = "100000", maxRetries = "8") {
  return config.configure(
    configureRequest({
      "accessctl:apiUrl": apiUrl,
      "accessctl:apiKey": apiKey,
      "accessctl:maxRequestsPerMinute": maxRequestsPerMinute,
      "accessctl:maxRetries": maxRetries,
    }),
  );
}

const servers: http.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A server that answers every request with `handler`, and counts requests per method. */
async function misbehaving(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const hits: Record<string, number> = {};
  const server = http.createServer((req, res) => {
    hits[req.method!] = (hits[req.method!] ?? 0) + 1;
    req.resume();
    req.on("end", () => handler(req, res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

describe("retries against the emulator", () => {
  it("rides out --fail-rate 0.3: every create lands exactly once", async () => {
    const emu = await startEmulator(["--fail-rate", "0.3", "--rate-limit", "off"]);
    try {
      await useApi(emu.url, emu.adminToken);
      const { provider } = await serializedProvider("ip-policy-rule");
      const before = client.counters().retries;
      const created = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          provider.create({ ipPolicyId: emu.fixtures.ipPolicies[0], cidr: `10.1.${i}.0/24`, action: "allow" }),
        ),
      );
      expect(new Set(created.map((c) => c.id)).size).toBe(30);
      expect(client.counters().retries).toBeGreaterThan(before);
      const stored = [];
      for await (const rule of walker.listAll("/ip_policy_rules", "ip_policy_rules", "list")) stored.push(rule);
      expect(stored.map((r: any) => r.cidr).sort()).toEqual(created.map((c) => c.outs.cidr).sort());
    } finally {
      await emu.stop();
    }
  });

  it("keeps under the service's limit with the client-side limiter: no 429 at all", async () => {
    // 15 per rolling window on both sides, the window 5 s instead of 60 so that the test takes seconds.
    const emu = await startEmulator(["--rate-limit", "15/5"]);
    compiled("provider/limiter.js").setRateWindow(5000);
    try {
      await useApi(emu.url, emu.adminToken, "15");
      const { provider } = await serializedProvider("api-key");
      const before = { ...client.counters() };
      await Promise.all(Array.from({ length: 17 }, (_, i) => provider.create({ description: `paced ${i}` })));
      expect(client.counters().rateLimited - before.rateLimited).toBe(0);
      expect((await emu.stats()).byStatus["429"]).toBeUndefined();
    } finally {
      compiled("provider/limiter.js").setRateWindow(60_000);
      await emu.stop();
    }
  }, 120_000);

  it("honours Retry-After when the service limits it anyway, and creates nothing twice", async () => {
    const emu = await startEmulator(["--rate-limit", "5/2"]);
    // The limiter's window as the service's (2 s): its pace is learned per window, and a 60 s one cut by the
    // 429s of a 2 s service takes minutes for 15 creates on a loaded machine.
    compiled("provider/limiter.js").setRateWindow(2_000);
    try {
      await useApi(emu.url, emu.adminToken, "100000");
      const { provider } = await serializedProvider("api-key");
      const before = client.counters().rateLimited;
      await Promise.all(Array.from({ length: 15 }, (_, i) => provider.create({ description: `pushed ${i}` })));
      expect(client.counters().rateLimited - before).toBeGreaterThan(0);
      const keys = await listAll(emu.url, emu.adminToken, "/api_keys", "keys").catch(async () => {
        await new Promise((r) => setTimeout(r, 2500));
        return listAll(emu.url, emu.adminToken, "/api_keys", "keys");
      });
      expect(keys.filter((k) => /^pushed \d+$/.test(k.description)).length).toBe(15);
    } finally {
      compiled("provider/limiter.js").setRateWindow(60_000);
      await emu.stop();
    }
  }, 120_000);
});

describe("ambiguous failures", () => {
  it("never repeats a POST whose answer was lost, but retries a GET", async () => {
    const server = await misbehaving((_req, res) => res.socket!.destroy());
    await useApi(server.url, "k".repeat(20), "100000", "3");
    const post = await client.api("POST", "/api_keys", { what: "create API key", body: {} }).catch((e: any) => e);
    expect(server.hits.POST).toBe(1);
    expect(post.ambiguous).toBe(true);
    expect(post.message).toMatch(/^create API key: /);
    const get = await client.api("GET", "/api_keys", { what: "list API keys" }).catch((e: any) => e);
    expect(server.hits.GET).toBe(4);
    expect(get.message).toMatch(/after 4 attempts\)$/);
  }, 120_000);

  it("retries a POST answered 503 or 429 (not acted on), not one answered 502", async () => {
    let status = 503;
    const server = await misbehaving((_req, res) => {
      res.writeHead(status, { "content-type": "application/json", "retry-after": "0" });
      res.end(
        JSON.stringify({ error_code: "ERR_X", status_code: status, msg: "busy", details: { operation_id: "op_1" } }),
      );
    });
    await useApi(server.url, "k".repeat(20));
    const failed503 = await client.api("POST", "/api_keys", { what: "create", body: {} }).catch((e: any) => e);
    expect(server.hits.POST).toBeGreaterThan(1);
    expect(failed503.message).toMatch(/^create: HTTP 503 ERR_X: busy \(operation op_1\) \(after \d+ attempts\)$/);
    server.hits.POST = 0;
    status = 502;
    await client.api("POST", "/api_keys", { what: "create", body: {} }).catch((e: any) => e);
    expect(server.hits.POST).toBe(1);
  }, 120_000);
});

describe("requests", () => {
  it("carry the contract's headers and a User-Agent with the package version", async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const server = await misbehaving((req, res) => {
      seen.push(req.headers);
      res.writeHead(201, { "content-type": "application/json" });
      res.end("{}");
    });
    await useApi(server.url, "header-test-key-0123456789");
    await client.api("POST", "/api_keys", { what: "create", body: { description: "x" } });
    await client.api("GET", "/api_keys", { what: "list" });
    const version = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")).version;
    expect(seen[0]).toMatchObject({
      authorization: "Bearer header-test-key-0123456789",
      "service-version": "2",
      "content-type": "application/json",
      "user-agent": expect.stringMatching(new RegExp(`^accessctl-pulumi/${version.replace(/\./g, "\\.")} `)),
    });
    expect(seen[1]["content-type"]).toBeUndefined(); // no body, no Content-Type
    expect(seen[1]["service-version"]).toBe("2");
  });

  it("carry the package version from a serialized provider too: read from package.json when it runs", async () => {
    const agents: (string | undefined)[] = [];
    const server = await misbehaving((req, res) => {
      agents.push(req.headers["user-agent"]);
      // The module's 404, then the request that shows this URL serves the API (http/trust.ts believe404).
      const proof = req.url!.startsWith("/ip_policy_rules?");
      res.writeHead(proof ? 200 : 404, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          proof
            ? { ip_policy_rules: [], uri: "u", next_page_uri: null }
            : { error_code: "ERR_NOT_FOUND", status_code: 404, msg: "not found" },
        ),
      );
    });
    await useApi(server.url, "header-test-key-0123456789");
    const { provider } = await serializedProvider("tls-edge-mutual-tls");
    process.env.ACCESSCTL_ACCEPT_GONE = "1"; // the key has seen nothing of the stack: the user's say-so that it is gone
    try {
      expect(await asRead(() => provider.read("edgtls_abc", {}))).toEqual({});
    } finally {
      delete process.env.ACCESSCTL_ACCEPT_GONE;
    }
    const version = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")).version;
    const agent = expect.stringMatching(new RegExp(`^accessctl-pulumi/${version.replace(/\./g, "\\.")} node/`));
    expect(agents).toEqual([agent, agent]);
  });
});

describe("answers that are not what they should be", () => {
  it("reports a non-JSON error body by its size, not its text (it may hold anything)", async () => {
    const key = "secret-api-key-0123456789";
    const server = await misbehaving((_req, res) => {
      res.writeHead(500, { "content-type": "text/html" });
      res.end(`<html>Internal error for ${key}</html>`);
    });
    await useApi(server.url, key);
    const err = await client.api("GET", "/api_keys/ak_1", { what: "read API key ak_1" }).catch((e: any) => e);
    expect(err.message).toBe(
      "read API key ak_1: HTTP 500: an answer that is not the service's error (57 bytes, not shown)",
    );
    expect(err.message).not.toContain("Internal error");
    expect(err.status).toBe(500);
  });

  it("gives up on a huge answer, and on a success that is not JSON", async () => {
    let mode = "huge";
    const server = await misbehaving((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      if (mode === "huge") {
        const chunk = "x".repeat(1 << 20);
        for (let i = 0; i < 12; i++) res.write(chunk);
        res.end();
      } else res.end("{not json");
    });
    await useApi(server.url, "k".repeat(20));
    const huge = await client.api("GET", "/api_keys", { what: "list" }).catch((e: any) => e);
    expect(huge.message).toMatch(/^list: the answer is over \d+ bytes/);
    mode = "text";
    const text = await client.api("GET", "/api_keys", { what: "list" }).catch((e: any) => e);
    expect(text.message).toBe("list: HTTP 200 but the answer is not JSON (9 bytes, not shown)");
  });

  it("refuses an answer that lacks a field rather than wiping the state", async () => {
    const server = await misbehaving((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "ipr_1",
          uri: "u",
          created_at: "t",
          action: "allow",
          ip_policy: { id: "ipp_1", uri: "u" },
        }),
      );
    });
    await useApi(server.url, "k".repeat(20));
    const { provider } = await serializedProvider("ip-policy-rule");
    const err = await provider.read("ipr_1", { cidr: "10.0.0.0/8" }).catch((e: Error) => e);
    expect(err.message).toBe(
      "read IP policy rule ipr_1: the answer has no valid cidr (expected a string); nothing was changed in the state",
    );
    const mtls = (await serializedProvider("tls-edge-mutual-tls")).provider;
    const err2 = await mtls.read("edgtls_1", {}).catch((e: Error) => e);
    expect(err2.message).toMatch(/the answer has no valid enabled/);
  });

  it("treats a create answered 201 without the fields it needs as possibly made, and says so", async () => {
    const server = await misbehaving((req, res) => {
      res.writeHead(req.method === "POST" ? 201 : 200, { "content-type": "application/json" });
      res.end(req.method === "POST" ? "{}" : JSON.stringify({ keys: [], uri: "u", next_page_uri: null }));
    });
    await useApi(server.url, "k".repeat(20));
    const { provider } = await serializedProvider("api-key");
    const err = await provider.create({ description: "x" }).catch((e: Error) => e);
    expect(err.message).toMatch(
      /^create API key: the answer has no valid id .*; the answer to the create was lost, so its token is unknown: no key names this create \(its metadata would\), so it made none\. Run the update again\.$/,
    );
    expect(server.hits.POST).toBe(1);
    expect(server.hits.GET).toBe(1); // it looked for a key the create may have made
  });

  it("after a lost create answer, names the key it may have made (deleting none), never a sibling whose token was delivered", async () => {
    const now = () => new Date().toISOString(); // made by the creates: after they were sent
    const deleted: string[] = [];
    let posts = 0;
    const server = await misbehaving((req, res) => {
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (req.method === "POST") {
        posts++;
        if (posts === 1) return res.socket!.destroy(); // the first create's answer is lost
        // The sibling's create answers late, while the first one is being cleaned up.
        return setTimeout(
          () =>
            json(201, {
              id: "ak_sibling",
              uri: "u",
              created_at: now(),
              token: "sibling-token-0123456789",
              owner_id: "usr_a",
              description: "same",
              metadata: "m",
            }),
          500,
        );
      }
      if (req.method === "GET") {
        const key = (id: string) => ({
          id,
          uri: "u",
          created_at: now(),
          token: null,
          owner_id: "usr_a",
          description: "same",
          metadata: "m",
        });
        return json(200, { keys: [key("ak_sibling"), key("ak_orphan")], uri: "u", next_page_uri: null });
      }
      deleted.push(req.url!);
      res.writeHead(204).end();
    });
    await useApi(server.url, "k".repeat(20));
    const { provider } = await serializedProvider("api-key");
    // With the program's own metadata (no marker of the provider's), the keys it may have made are named.
    const [lost, sibling] = await Promise.allSettled([
      provider.create({ description: "same", metadata: "m" }),
      provider.create({ description: "same", metadata: "m" }),
    ]);
    expect(sibling).toMatchObject({ status: "fulfilled", value: { id: "ak_sibling" } });
    expect(lost.status).toBe("rejected");
    expect((lost as PromiseRejectedResult).reason.message).toMatch(
      /the answer to the create was lost, so its token is unknown\. It may have made this key, left as it is \(another stack's or user's identical key would look the same\): ak_orphan \(owner usr_a, created_at [^)]+\)\. Delete the one that is yours/,
    );
    expect(deleted).toEqual([]);
  });

  it("ends with a clear error on a truncated answer, without hanging", async () => {
    const server = await misbehaving((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "500" });
      res.write('{"keys": [');
      setTimeout(() => res.socket!.destroy(), 20);
    });
    await useApi(server.url, "k".repeat(20), "100000", "1");
    const err = await client.api("GET", "/api_keys", { what: "list API keys" }).catch((e: any) => e);
    expect(err.message).toMatch(/^list API keys: \w+: .* \(after 2 attempts\)$/);
    expect(server.hits.GET).toBe(2);
  });

  it("does not follow a next_page_uri to another origin with the key", async () => {
    const server = await misbehaving((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ keys: [], uri: "x", next_page_uri: "https://elsewhere.example/api_keys?page=2" }));
    });
    await useApi(server.url, "k".repeat(20));
    const pages = (async () => {
      for await (const _ of walker.listAll("/api_keys", "keys", "list API keys")) void _;
    })();
    await expect(pages).rejects.toThrow(/refusing to send the API key to https:\/\/elsewhere\.example/);
  });
});

describe("a 404 is not taken for gone", () => {
  it("a key of another account that lists a key of the same owner (a user of two accounts) proves nothing: the stack's key's 404 is not believed", async () => {
    const server = await misbehaving((req, res) => {
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (req.url!.startsWith("/ip_policy_rules"))
        return json(200, { ip_policy_rules: [], uri: "u", next_page_uri: null });
      if (req.url!.startsWith("/api_keys/"))
        return json(404, { error_code: "ERR_NOT_FOUND", status_code: 404, msg: "API key not found", details: {} });
      const key = {
        id: "ak_theirs",
        uri: "u",
        created_at: new Date().toISOString(),
        token: null,
        owner_id: "usr_a",
        description: "",
        metadata: "",
      };
      return json(200, { keys: [key], uri: "u", next_page_uri: null });
    });
    await useApi(server.url, "b".repeat(20));
    const { provider } = await serializedProvider("api-key");
    const read = await provider.read("ak_mine", { ownerId: "usr_a", description: "ci" }).catch((e: Error) => e);
    expect(String(read)).toContain("not taken as deleted: accessctl:apiKey sees none of this stack's objects here");
    // The user's say-so is for reads: a delete's 404 to such a key is never believed.
    process.env.ACCESSCTL_ACCEPT_GONE = "1";
    try {
      expect(await asRead(() => provider.read("ak_mine", { ownerId: "usr_a", description: "ci" }))).toEqual({});
      // Outside a read operation (a create, update, destroy, or not known), the say-so is not taken.
      expect(
        String(await provider.read("ak_mine", { ownerId: "usr_a", description: "ci" }).catch((e: Error) => e)),
      ).toContain("not taken as deleted");
      expect(
        String(
          await provider.delete("ak_mine", { ownerId: "usr_a", description: "ci" }).then(
            () => "deleted",
            (e: Error) => e,
          ),
        ),
      ).toContain("not taken as deleted");
    } finally {
      delete process.env.ACCESSCTL_ACCEPT_GONE;
    }
  });
});

describe("connection settings", () => {
  it("names the config key and environment variable that are missing", async () => {
    const saved = { url: process.env.ACCESSCTL_API_URL, key: process.env.ACCESSCTL_API_KEY };
    delete process.env.ACCESSCTL_API_URL;
    delete process.env.ACCESSCTL_API_KEY;
    try {
      expect(() => config.connection({})).toThrow(/accessctl:apiUrl.*ACCESSCTL_API_URL/);
      expect(() => config.connection({ apiUrl: "https://api.example" })).toThrow(/accessctl:apiKey.*ACCESSCTL_API_KEY/);
      process.env.ACCESSCTL_API_URL = "http://127.0.0.1:1";
      process.env.ACCESSCTL_API_KEY = "from-env-0123456789";
      expect(config.connection({})).toMatchObject({
        apiUrl: "http://127.0.0.1:1",
        apiKey: "from-env-0123456789",
        maxRequestsPerMinute: 120,
      });
      // Stack config wins over the environment.
      expect(config.connection({ apiKey: "from-config-0123456789" }).apiKey).toBe("from-config-0123456789");
    } finally {
      process.env.ACCESSCTL_API_URL = saved.url;
      process.env.ACCESSCTL_API_KEY = saved.key;
      if (saved.url === undefined) delete process.env.ACCESSCTL_API_URL;
      if (saved.key === undefined) delete process.env.ACCESSCTL_API_KEY;
    }
  });

  it("refuses plain http:// except to loopback", () => {
    for (const ok of ["https://api.example.com", "http://127.0.0.1:8787", "http://localhost:1", "http://[::1]:8787"])
      expect(() => config.checkApiUrl(ok)).not.toThrow();
    for (const bad of [
      "http://api.example.com",
      "http://10.0.0.1",
      "ftp://x",
      "not a url",
      "https://user:pw@api.example.com",
    ]) {
      expect(() => config.checkApiUrl(bad), bad).toThrow(/accessctl:apiUrl/);
    }
    expect(() => config.connection({ apiUrl: "https://x", apiKey: "k", maxRequestsPerMinute: "0" })).toThrow(
      /maxRequestsPerMinute/,
    );
  });
});

describe("paths", () => {
  it("URL-encodes every id and refuses dot segments", () => {
    expect(client.apiPath`/api_keys/${"ak_1/../ip_policy_rules?x=1#y"}`).toBe(
      "/api_keys/ak_1%2F..%2Fip_policy_rules%3Fx%3D1%23y",
    );
    expect(client.apiPath`/edges/tls/${"a b%"}/mutual_tls`).toBe("/edges/tls/a%20b%25/mutual_tls");
    for (const bad of ["..", ".", "", "%2e%2E"]) expect(() => client.apiPath`/api_keys/${bad}`).toThrow(/invalid id/);
  });

  it("pages to the end of a list", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    try {
      await useApi(emu.url, emu.adminToken);
      for (let i = 0; i < 7; i++)
        await client.api("POST", "/api_keys", { what: "create", body: { description: `p${i}` } });
      const seen: string[] = [];
      for await (const key of walker.listAll("/api_keys?limit=2", "keys", "list")) seen.push(key.description);
      expect(seen.filter((d) => d?.startsWith("p"))).toEqual(["p6", "p5", "p4", "p3", "p2", "p1", "p0"]);
    } finally {
      await emu.stop();
    }
  });

  it("pages on when the last object of a page is deleted during the walk", async () => {
    const emu = await startEmulator(["--rate-limit", "off"]);
    try {
      await useApi(emu.url, emu.adminToken);
      for (let i = 0; i < 7; i++)
        await client.api("POST", "/api_keys", { what: "create", body: { description: `p${i}` } });
      const seen: string[] = [];
      for await (const key of walker.listAll("/api_keys?limit=2", "keys", "list")) {
        seen.push(key.description);
        // Each page's last key goes as soon as it is read (another client's delete).
        if (seen.length % 2 === 0 && key.description?.startsWith("p"))
          await client.api("DELETE", client.apiPath`/api_keys/${key.id}`, { what: "delete" });
      }
      expect(seen.filter((d) => d?.startsWith("p"))).toEqual(["p6", "p5", "p4", "p3", "p2", "p1", "p0"]);
    } finally {
      await emu.stop();
    }
  });
});
