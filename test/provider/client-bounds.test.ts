// Issue 10: a client that always ends and says little, against servers on loopback that misbehave
// on purpose: loops of pages, a body trickled byte by byte, 429 for ever, a refused connection,
// 502/504 to a create, a key echoed deep in an error page, a key refused by the service.
import * as http from "node:http";
import * as net from "node:net";
import { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { compiled, configureRequest, serializedProvider } from "../helpers/provider";

const client = compiled("provider/http/api.js");
const walker = compiled("provider/http/pages.js");
const config = compiled("provider/config.js");

function useApi(apiUrl: string, apiKey: string, maxRetries = "8") {
  return config.configure(
    configureRequest({
      "accessctl:apiUrl": apiUrl,
      "accessctl:apiKey": apiKey,
      "accessctl:maxRequestsPerMinute": "100000",
      "accessctl:maxRetries": maxRetries,
    }),
  );
}

const servers: http.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
  delete process.env.ACCESSCTL_API_KEY;
  delete process.env.ACCESSCTL_ADOPT_EXISTING;
  delete process.env.ACCESSCTL_READ_MODE;
  delete process.env.ACCESSCTL_STAGING_API_URL;
  delete process.env.ACCESSCTL_STAGING_API_KEY;
});

async function serve(handler: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void) {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => handler(req, res, body));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
};

async function drain(path: string, field = "keys") {
  const items: unknown[] = [];
  for await (const item of walker.listAll(path, field, "list API keys")) items.push(item);
  return items;
}

describe("paging ends", () => {
  it("stops at a next_page_uri that leads back to an earlier page (2 → 1) or to itself", async () => {
    let self = false;
    const server = await serve((req, res) => {
      const page = new URL(req.url!, "http://x").searchParams.get("page");
      const next = self
        ? `${server.url}/api_keys?page=1`
        : page === "2"
          ? `${server.url}/api_keys`
          : `${server.url}/api_keys?page=2`;
      json(res, 200, { keys: [{ id: `ak_${page ?? 1}` }], uri: "u", next_page_uri: next });
    });
    await useApi(server.url, "k".repeat(20));
    const loop =
      /^list API keys: next_page_uri leads back to a page already read \(page 1 of this walk\); giving up on the list$/;
    await expect(drain("/api_keys")).rejects.toThrow(loop);
    expect(server.hits).toEqual(["GET /api_keys", "GET /api_keys?page=2"]);
    self = true;
    await expect(drain("/api_keys?page=1")).rejects.toThrow(/leads back to a page already read/);
  });

  it("stops after a bounded number of pages", async () => {
    const server = await serve((req, res) => {
      const page = Number(new URL(req.url!, "http://x").searchParams.get("page") ?? 0);
      json(res, 200, { keys: [], uri: "u", next_page_uri: `${server.url}/api_keys?page=${page + 1}` });
    });
    await useApi(server.url, "k".repeat(20));
    await expect(drain("/api_keys")).rejects.toThrow(
      /^list API keys: more than 5000 pages, the most one walk follows; giving up on the list$/,
    );
    expect(server.hits.length).toBe(5000);
  }, 30_000);

  it("a walk's limits: 5000 pages, the bound of one operation, growing by each page's time at the pace", async () => {
    const limits = (perMinute: string) => {
      config.configure(
        configureRequest({
          "accessctl:apiUrl": "http://127.0.0.1:9",
          "accessctl:apiKey": "k".repeat(20),
          "accessctl:maxRequestsPerMinute": perMinute,
        }),
      );
      return walker.walkLimits();
    };
    expect(limits("120")).toEqual({ maxPages: 5000, budgetMs: 600_000, pageMs: 500 }); // 10 minutes, + 0.5 s a page at the service's 120 a minute
    expect(limits("1000000")).toEqual({ maxPages: 5000, budgetMs: 600_000, pageMs: 0.06 });
    process.env.ACCESSCTL_OPERATION_TIMEOUT = "90";
    try {
      expect(limits("120")).toEqual({ maxPages: 5000, budgetMs: 90_000, pageMs: 500 });
    } finally {
      delete process.env.ACCESSCTL_OPERATION_TIMEOUT;
    }
  });

  it("a rule create answered 409 whose list loops ends with the 409", async () => {
    const server = await serve((req, res) => {
      if (req.method === "POST")
        return json(res, 409, {
          error_code: "ERR_CONFLICT",
          status_code: 409,
          msg: "taken",
          details: { operation_id: "op_1" },
        });
      json(res, 200, { ip_policy_rules: [], uri: "u", next_page_uri: `${server.url}/ip_policy_rules` });
    });
    await useApi(server.url, "k".repeat(20));
    const { provider } = await serializedProvider("ip-policy-rule");
    const err = await provider
      .create({ ipPolicyId: "ipp_1", cidr: "10.0.0.0/8", action: "allow" })
      .catch((e: Error) => e);
    expect(err.message).toBe("create IP policy rule 10.0.0.0/8: HTTP 409 ERR_CONFLICT: taken (operation op_1)");
  }, 20_000);
});

describe("time bounds", () => {
  it("abandons a body trickled one byte at a time, at the whole-answer deadline", async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const timer = setInterval(() => res.write(" "), 200);
      res.on("close", () => clearInterval(timer));
    });
    await useApi(server.url, "k".repeat(20), "0");
    const started = Date.now();
    const err = await client
      .api("GET", "/api_keys", { what: "list API keys", deadlineMs: 1500 })
      .catch((e: Error) => e);
    expect(err.message).toBe(
      `list API keys: TIMEOUT: no complete answer within 1.5 s (${server.url}); is the service up, and is accessctl:apiUrl right?`,
    );
    expect(Date.now() - started).toBeLessThan(3000);
  }, 20_000);

  it("a create that times out may have acted: the error says so (ambiguous, with when it was sent) and reads as ours, unredacted", async () => {
    const server = await serve(() => undefined); // accepts, reads, never answers
    await useApi(server.url, "k".repeat(20), "3");
    const before = Date.now();
    const err = await client
      .api("POST", "/api_keys", { what: "create API key", body: {}, deadlineMs: 1000 })
      .catch((e: Error) => e);
    expect(err.message).toBe(
      `create API key: TIMEOUT: no complete answer within 1 s (${server.url}); is the service up, and is accessctl:apiUrl right?`,
    );
    expect(err.ambiguous).toBe(true);
    expect(err.sentAt).toBeGreaterThanOrEqual(before);
    expect(server.hits).toEqual(["POST /api_keys"]); // not sent again to a silent service
  }, 20_000);

  it("counts Retry-After waits in the retry budget: always-429 ends within it, whatever maxRetries says", async () => {
    const server = await serve((_req, res) =>
      json(
        res,
        429,
        { error_code: "ERR_RATE_LIMITED", status_code: 429, msg: "slow down", details: { operation_id: "op_1" } },
        { "retry-after": "1" },
      ),
    );
    await useApi(server.url, "k".repeat(20), "6");
    const started = Date.now();
    const err = await client.api("GET", "/api_keys", { what: "list API keys", budgetMs: 2500 }).catch((e: Error) => e);
    const took = Date.now() - started;
    // (a 429 also cuts the pace, which spaces the retries further once nothing gets through)
    expect(err.message).toMatch(
      /^list API keys: HTTP 429 ERR_RATE_LIMITED: slow down \(operation op_1\) \(after [23] attempts\)$/,
    );
    expect(took).toBeLessThan(3000); // the budget, and the timer that ends the wait at it
    expect(server.hits.length).toBeGreaterThanOrEqual(2);
    expect(server.hits.length).toBeLessThanOrEqual(3);
  }, 30_000);

  it("gives up on a refused connection within seconds, with one line that says what to do", async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (probe.address() as AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    await useApi(`http://127.0.0.1:${port}`, "k".repeat(20), "8");
    const started = Date.now();
    const err = await client
      .api("GET", "/ip_policy_rules/ipr_1", { what: "read IP policy rule ipr_1" })
      .catch((e: Error) => e);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(err.message).toBe(
      `read IP policy rule ipr_1: ECONNREFUSED: cannot connect (http://127.0.0.1:${port}) (after 3 attempts); is the service up, and is accessctl:apiUrl right?`,
    );
    expect(err.message).not.toContain("\n");
  }, 20_000);
});

describe("502 and 504 to a create are ambiguous, like a lost answer", () => {
  for (const status of [502, 504]) {
    it(`${status}: a key create names the key it may have made and deletes none; a rule create takes over the rule it made`, async () => {
      // The service made the objects while a gateway held each create for 1.1 s, then the answer was
      // lost; one create answered before tells the service's clock to the millisecond.
      const made: Record<string, string> = {};
      const deleted: string[] = [];
      const server = await serve((req, res, sent) => {
        if (req.method === "POST" && req.url === "/api_keys" && !made.warmUp) {
          made.warmUp = new Date().toISOString();
          return json(res, 201, {
            id: "ak_warm",
            uri: "u",
            created_at: made.warmUp,
            token: "t".repeat(40),
            owner_id: "usr_a",
            description: "warm-up",
          });
        }
        if (req.method === "POST") {
          // Made early in the wait (with the metadata sent: the rule's marker), then the answer is lost.
          setTimeout(() => (made[req.url!] = new Date().toISOString()), 50);
          made[`${req.url} metadata`] = JSON.parse(sent || "{}").metadata;
          return void setTimeout(
            () =>
              json(res, status, {
                error_code: "ERR_GATEWAY",
                status_code: status,
                msg: "upstream",
                details: { operation_id: "op_g" },
              }),
            1150,
          );
        }
        if (req.method === "DELETE") {
          deleted.push(req.url!);
          return res.writeHead(204).end();
        }
        if (req.url!.startsWith("/api_keys"))
          return json(res, 200, {
            keys: [
              {
                id: "ak_orphan",
                uri: "u",
                created_at: made["/api_keys"],
                token: null,
                owner_id: "usr_a",
                description: "gw",
                metadata: made["/api_keys metadata"],
              },
            ],
            uri: "u",
            next_page_uri: null,
          });
        const rule = {
          id: `ipr_made${status}`,
          uri: "u",
          created_at: made["/ip_policy_rules"],
          cidr: "10.9.0.0/16",
          action: "allow",
          metadata: made["/ip_policy_rules metadata"],
          ip_policy: { id: "ipp_1", uri: "u" },
        };
        json(res, 200, { ip_policy_rules: [rule], uri: "u", next_page_uri: null });
      });
      await useApi(server.url, "k".repeat(20));
      const key = (await serializedProvider("api-key")).provider;
      await key.create({ description: "warm-up", ownerId: "usr_a" });
      // With its own metadata (no marker), nothing proves which key it made: named, none deleted.
      const err = await key
        .create({ description: "gw", metadata: "team=blue", ownerId: "usr_a" })
        .catch((e: Error) => e);
      expect(err.message).toBe(
        `create API key: HTTP ${status} ERR_GATEWAY: upstream (operation op_g); the answer to the create was lost, so its token is unknown. ` +
          `It may have made this key, left as it is (another stack's or user's identical key would look the same): ak_orphan (owner usr_a, created_at ${made["/api_keys"]}). ` +
          "Delete the one that is yours and that nobody uses (its token was never received), then run the update again.",
      );
      expect(deleted).toEqual([]); // an identical key of another stack would look the same
      // With the provider's marker: the key that names this create is its own, useless without its token: deleted.
      const own = await key.create({ description: "gw", ownerId: "usr_a" }).catch((e: Error) => e);
      expect(own.message).toBe(
        `create API key: HTTP ${status} ERR_GATEWAY: upstream (operation op_g); the answer to the create was lost, so its token is unknown: ` +
          "it made ak_orphan (its metadata names this create), useless without its token, and deleted it again. Run the update again.",
      );
      expect(deleted).toEqual(["/api_keys/ak_orphan"]);
      const rule = (await serializedProvider("ip-policy-rule")).provider;
      const taken = await rule.create({ ipPolicyId: "ipp_1", cidr: "10.9.0.0/16", action: "allow" });
      expect(taken.id).toBe(`ipr_made${status}`);
      expect(server.hits.filter((h) => h.startsWith("POST")).length).toBe(4); // each create sent once
    });
  }
});

describe("redaction", () => {
  it("an error page that is not the service's error is not shown, the key in it neither", async () => {
    const key = "secret-api-key-0123456789abcdef";
    const server = await serve((_req, res) => {
      res.writeHead(500, { "content-type": "text/html" });
      res.end(`${"x".repeat(180)}${key}${"y".repeat(50)}`);
    });
    await useApi(server.url, key, "0");
    const err = await client.api("GET", "/api_keys", { what: "list API keys" }).catch((e: Error) => e);
    expect(err.message).not.toContain(key.slice(0, 10));
    expect(err.message).toBe(
      "list API keys: HTTP 500: an answer that is not the service's error (261 bytes, not shown)",
    );
  });
});

describe("a rotated key", () => {
  const auth = (valid: string) =>
    serve((req, res) => {
      if (req.headers.authorization !== `Bearer ${valid}`)
        return json(res, 401, {
          error_code: "ERR_UNAUTHORIZED",
          status_code: 401,
          msg: "invalid API key",
          details: { operation_id: "op_a" },
        });
      json(res, 200, { id: "ak_1", uri: "u", created_at: "t", owner_id: "usr_a", token: null });
    });

  it("a refused config key gives way to ACCESSCTL_API_KEY, once, then the environment's key is used directly", async () => {
    const oldKey = "old-revoked-key-0123456789";
    const newKey = "new-rotated-key-0123456789";
    const server = await auth(newKey);
    await useApi(server.url, oldKey);
    process.env.ACCESSCTL_API_KEY = newKey;
    process.env.ACCESSCTL_READ_MODE = "get"; // one GET per read, so that the requests can be counted
    const { provider } = await serializedProvider("api-key");
    expect((await provider.read("ak_1", {})).id).toBe("ak_1");
    expect((await provider.read("ak_1", {})).id).toBe("ak_1");
    expect(server.hits.length).toBe(3); // one 401, then the environment's key
  });

  it("with the config key alone, the 401 says what to run", async () => {
    const server = await auth("the-live-key-0123456789");
    await useApi(server.url, "old-revoked-key-0123456789");
    const { provider } = await serializedProvider("api-key");
    const err = await provider.read("ak_1", {}).catch((e: Error) => e);
    expect(err.message).toMatch(
      /^read API key ak_1: HTTP 401 ERR_UNAUTHORIZED: invalid API key \(operation op_a\); the API key in accessctl:apiKey was refused\. .*`pulumi refresh --run-program`.*`pulumi up` without --refresh first, or set ACCESSCTL_API_KEY to the new key$/,
    );
    process.env.ACCESSCTL_API_KEY = "another-dead-key-0123456789";
    const both = await provider.read("ak_1", {}).catch((e: Error) => e);
    expect(both.message).toMatch(
      /neither accessctl:apiKey \(as saved in the state\) nor ACCESSCTL_API_KEY was accepted/,
    );
    expect(both.message).not.toContain("another-dead-key");
  });

  it("for a profile, the 401 names the profile's key and what to run, never the default account's ACCESSCTL_API_KEY", async () => {
    const server = await auth("the-live-key-0123456789");
    await useApi(server.url, "the-live-key-0123456789");
    process.env.ACCESSCTL_API_KEY = "the-live-key-0123456789"; // the default account's: never used for a profile
    process.env.ACCESSCTL_STAGING_API_URL = server.url;
    process.env.ACCESSCTL_STAGING_API_KEY = "old-staging-key-0123456789";
    process.env.ACCESSCTL_READ_MODE = "get";
    const { provider } = await serializedProvider("api-key");
    const err = await provider.read("ak_1", { profile: "staging" }).catch((e: Error) => e);
    expect(err.message).toMatch(
      /HTTP 401 .*; the API key of profile "staging" \(ACCESSCTL_STAGING_API_KEY\) was refused/,
    );
    expect(err.message).not.toContain("ACCESSCTL_API_KEY to");
    expect(server.hits.length).toBe(1); // no retry with the default account's key
  });
});

describe("list helpers", () => {
  it("honour accessctl:maxRetries from the stack config", async () => {
    const server = await serve((_req, res) =>
      json(
        res,
        503,
        { error_code: "ERR_UNAVAILABLE", status_code: 503, msg: "busy", details: { operation_id: "op_b" } },
        { "retry-after": "0" },
      ),
    );
    const pulumi = compiled("../node_modules/@pulumi/pulumi/index.js");
    pulumi.runtime.setAllConfig({
      "accessctl:apiUrl": server.url,
      "accessctl:apiKey": "k".repeat(20),
      "accessctl:maxRetries": "1",
    });
    const sdk = compiled("sdk/index.js");
    await expect(sdk.listApiKeys()).rejects.toThrow(
      /^list API keys: HTTP 503 ERR_UNAVAILABLE: busy \(operation op_b\) \(after 2 attempts\)$/,
    );
    expect(server.hits.length).toBe(2);
  }, 30_000);
});
