// Every operation ends within its bound, whatever the service does (provider/operation.ts), time
// queued in the rate limiter counts in a call's budget, and a stop (the plugin's Cancel) ends every
// wait at once: the limiter's queue, a backoff, a walk of a list in flight.
import * as http from "node:http";
import { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { RunningEmulator, startEmulator } from "../helpers/emulator";
import { FaultProxy, startFaultProxy } from "../helpers/fault-proxy";
import { compiled, configureRequest, newRun, serializedProvider } from "../helpers/provider";

const client = compiled("provider/http/api.js");
const config = compiled("provider/config.js");
const operation = compiled("provider/operation.js");
const engine = compiled("provider/engine.js");
const listReads = compiled("provider/list-reads.js");
const { IP_POLICY_RULE_ANSWER: RULE_FIELDS } = compiled("contract/ip-policy-rule.js");

const useApi = (apiUrl: string, apiKey: string, perMinute = "100000") =>
  config.configure(
    configureRequest({
      "accessctl:apiUrl": apiUrl,
      "accessctl:apiKey": apiKey,
      "accessctl:maxRequestsPerMinute": perMinute,
    }),
  );

/** Forgets a stop: the next test runs as a new process would. */
function unstop() {
  const all = (globalThis as unknown as Record<symbol, Record<string, unknown> | undefined>)[
    Symbol.for("@accessctl/pulumi/state/v1")
  ];
  if (all) for (const what of ["engine", "limiter", "list-reads"]) delete all[what];
}

const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  unstop();
});

async function serve(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    req.resume();
    req.on("end", () => handler(req, res));
  });
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
};
const elapsed = (since: number) => Date.now() - since;

describe("a set create against a service that answers 429 for ever after 5 writes", () => {
  let emu: RunningEmulator;
  let proxy: FaultProxy;
  let set: any;
  beforeAll(async () => {
    emu = await startEmulator(["--rate-limit", "off"]);
    set = (await serializedProvider("ip-policy-rule-set")).provider;
  });
  afterAll(async () => {
    await emu.stop();
  });

  const createWith = async (retryAfter: string, boundMs: number, ipPolicyId: string) => {
    newRun();
    proxy = await startFaultProxy(emu.url);
    closers.push(() => proxy.close());
    await useApi(proxy.url, emu.adminToken);
    proxy.fail({
      method: "POST",
      path: /^\/ip_policy_rules$/,
      when: "before",
      status: 429,
      retryAfter,
      times: Infinity,
      skip: 5,
    });
    const rules = Array.from({ length: 40 }, (_, i) => ({ cidr: `10.7.${i}.0/24`, action: "allow" }));
    const inputs = (await set.check({}, { ipPolicyId, rules })).inputs;
    const started = Date.now();
    const err = await operation
      .inOperation(() => set.create(inputs), boundMs)
      .catch((e: Error & { properties?: any }) => e);
    return { err, ms: elapsed(started) };
  };

  it("Retry-After: 60 with 3 s left: it gives up at once (no wait would end in time), records the 5 rules made, and says what to do in one line", async () => {
    const { err, ms } = await createWith("60", 3000, emu.fixtures.ipPolicies[0]);
    expect(ms).toBeLessThan(3000);
    expect(err.message).not.toContain("\n");
    expect(err.message).toMatch(
      /^create IP policy rule set of ipp_\w+: \d+ calls? failed, first: create IP policy rule 10\.7\.\d+\.0\/24: HTTP 429 ERR_RATE_LIMITED: injected 429 \(request not forwarded\); gave up: the next try \(in 60 s\) would pass this operation's time bound \(3 s, ACCESSCTL_OPERATION_TIMEOUT\); /,
    );
    expect(err.message).toMatch(
      /another client is using the account's rate limit.*run the command again to go on, or raise ACCESSCTL_OPERATION_TIMEOUT/,
    );
    expect(Object.keys(err.properties.rules)).toHaveLength(5);
  });

  it("Retry-After: 1 for ever: retries wait their turn in the limiter until the operation's bound (4 s), then every call ends", async () => {
    const { err, ms } = await createWith("1", 4000, emu.fixtures.ipPolicies[1]);
    expect(ms).toBeGreaterThan(2500); // it did wait: retries one at a time, a second apart
    expect(ms).toBeLessThan(4000 + 1500); // the bound, and the attempts under way then (each well under a second here)
    // (the first of the calls to fail: one that got its 429, or one that waited its turn behind them)
    expect(err.message).toMatch(
      /(gave up: (the next try \(in 1 s\) would pass )?|not sent: the service answered 429 and requests wait their turn; )this operation's time bound \(4 s, ACCESSCTL_OPERATION_TIMEOUT\)/,
    );
    expect(err.message).toMatch(/another client is using the account's rate limit/);
    expect(Object.keys(err.properties.rules)).toHaveLength(5);
    expect(proxy.failed.length).toBeGreaterThan(2);
  });
});

describe("time queued in the rate limiter is time of the call", () => {
  it("a call that cannot get a slot within its budget ends then, not sent, and says why", async () => {
    const server = await serve((_req, res) => json(res, 200, { keys: [], uri: "u", next_page_uri: null }));
    await useApi(server.url, "k".repeat(20), "1");
    await client.api("GET", "/api_keys", { what: "list API keys" }); // the one slot of the minute
    const started = Date.now();
    const err = await client.api("GET", "/api_keys", { what: "list API keys", budgetMs: 1000 }).catch((e: Error) => e);
    expect(elapsed(started)).toBeGreaterThanOrEqual(950);
    expect(elapsed(started)).toBeLessThan(2000);
    expect(err.message).toBe(
      "list API keys: not sent: its time budget (1 s) is spent waiting for the account's rate limit (1 requests a minute)",
    );
    expect(server.hits).toHaveLength(1);
  });

  it("within an operation, the operation's bound ends the wait", async () => {
    const server = await serve((_req, res) => json(res, 200, { keys: [], uri: "u", next_page_uri: null }));
    await useApi(server.url, "k".repeat(20), "1");
    const started = Date.now();
    const err = await operation
      .inOperation(async () => {
        await client.api("GET", "/api_keys", { what: "list API keys" });
        await client.api("GET", "/api_keys", { what: "list API keys" });
      }, 1500)
      .catch((e: Error) => e);
    expect(elapsed(started)).toBeLessThan(2500);
    expect(err.message).toMatch(
      /^list API keys: not sent: this operation's time bound \(1\.5 s, ACCESSCTL_OPERATION_TIMEOUT\) is spent; what was done is recorded: run the command again to go on, or raise ACCESSCTL_OPERATION_TIMEOUT \(seconds\)$/,
    );
  });
});

describe("a stop (the plugin's Cancel) ends every wait at once", () => {
  it("a wait in the rate limiter's queue", async () => {
    const server = await serve((_req, res) => json(res, 200, { keys: [], uri: "u", next_page_uri: null }));
    await useApi(server.url, "k".repeat(20), "1");
    await client.api("GET", "/api_keys", { what: "list API keys" });
    const waiting = client.api("GET", "/api_keys", { what: "list API keys" }).catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 300));
    const stoppedAt = Date.now();
    engine.stopRequests("the operation was cancelled");
    const err = await waiting;
    expect(elapsed(stoppedAt)).toBeLessThan(1000);
    expect(err.message).toBe("list API keys: not sent: the operation was cancelled");
    expect(server.hits).toHaveLength(1);
  });

  it("a backoff between retries (503 without Retry-After)", async () => {
    const server = await serve((_req, res) => json(res, 503, { error_code: "ERR_BUSY", msg: "busy" }));
    await useApi(server.url, "k".repeat(20));
    const waiting = client.api("GET", "/api_keys", { what: "list API keys" }).catch((e: Error) => e);
    while (server.hits.length < 4) await new Promise((r) => setTimeout(r, 20)); // backoffs of 1-2 s from here
    const stoppedAt = Date.now();
    engine.stopRequests("the operation was cancelled");
    const err = await waiting;
    expect(elapsed(stoppedAt)).toBeLessThan(1000);
    expect(err.message).toMatch(/^list API keys: not sent \(after \d attempts\): the operation was cancelled$/);
  });

  it("a Retry-After of 60 s", async () => {
    const server = await serve((_req, res) =>
      json(res, 429, { error_code: "ERR_RATE_LIMITED", msg: "slow down" }, { "retry-after": "60" }),
    );
    await useApi(server.url, "k".repeat(20));
    const waiting = client.api("GET", "/api_keys", { what: "list API keys" }).catch((e: Error) => e);
    while (server.hits.length < 1) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 200));
    const stoppedAt = Date.now();
    engine.stopRequests("the operation was cancelled");
    const err = await waiting;
    expect(elapsed(stoppedAt)).toBeLessThan(1000);
    expect(err.message).toBe("list API keys: not sent (after 1 attempts): the operation was cancelled");
  });

  it("a read waiting for the walk of the list in flight (a slow page)", async () => {
    const server = await serve((_req, res) =>
      setTimeout(() => json(res, 200, { ip_policy_rules: [], uri: "u", next_page_uri: null }), 5000),
    );
    await useApi(server.url, "k".repeat(20));
    const read = listReads
      .policyRulesOf(undefined, "ipp_a", { what: "read IP policy rule set of ipp_a" })
      .catch((e: Error) => e);
    while (server.hits.length < 1) await new Promise((r) => setTimeout(r, 20));
    const stoppedAt = Date.now();
    engine.stopRequests("the operation was cancelled");
    const err = await read;
    expect(elapsed(stoppedAt)).toBeLessThan(1000);
    expect(err.message).toBe("read IP policy rule set of ipp_a: the operation was cancelled");
    void RULE_FIELDS;
  });
});

describe("bounded: what a host hands to Pulumi", () => {
  it("serialized as Pulumi serializes a dynamic provider, each operation calls its own function, inside an operation", async () => {
    const pulumi = await import("@pulumi/pulumi");
    const names = ["check", "diff", "create", "read", "update", "delete"];
    const module = Object.fromEntries(
      names.map((n) => [n, async (...args: unknown[]) => ({ n, args, bound: operation.currentOperation()?.boundMs })]),
    );
    const b = operation.bounded(module);
    const ser = await pulumi.runtime.serializeFunction(() => b, { allowSecrets: true });
    const loaded = (await import("require-from-string")).default(ser.text).handler();
    for (const n of names)
      expect(await loaded[n](1, 2, 3)).toMatchObject({ n, args: expect.arrayContaining([1]), bound: 600_000 });
  });
});
