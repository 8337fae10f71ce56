// Issue 17: "could this attempt have made it?", the judgement that recovery after a lost create
// answer rests on (provider/ownership.ts), and the server clock it reads (provider/http/clock.ts).
import * as http from "node:http";
import { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { compiled, configureRequest, serializedProvider } from "../helpers/provider";

const ownership = compiled("provider/ownership.js");
const client = compiled("provider/http/api.js");
const clock = compiled("provider/http/clock.js");
const config = compiled("provider/config.js");

const SENT_AT = Date.parse("2026-11-23T08:00:00.700Z"); // our clock, when the request went out
const attempt = (sent: Record<string, string | undefined> = { cidr: "192.0.2.0/24", action: "deny" }) => ({ kind: "test rule", sentAt: SENT_AT, sent });
const found = (createdAt: string, fields: Record<string, string> = { cidr: "192.0.2.0/24", action: "deny" }, id = "ipr_x") => ({ id, createdAt, fields });

describe("whyNotMadeBy", () => {
  it("accepts an object created at or after the latest moment the request can have been sent on the service's clock, with every field sent", () => {
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:00.700Z"), 0)).toBeUndefined();
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:01.000Z"), 0)).toBeUndefined();
    // The service's clock runs an hour ahead of ours: its timestamps are judged on its clock.
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T09:00:01.000Z"), 3_600_000)).toBeUndefined();
  });

  it("refuses what is not provably later: the upper bound of the service's clock counts, not the lower one", () => {
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:00.699Z"), 0)).toMatch(/created at 2026-11-23T08:00:00.699Z, not provably after this create was sent \(at the latest 2026-11-23T08:00:00.700Z on the service's clock\)/);
    // Known only from whole-second Date headers, the clock may be up to a second ahead: an identical
    // rule made 400 ms before the send (another stack's) is not taken; neither is a whole-second time.
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:00.300Z"), 1000)).toMatch(/not provably after/);
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:01Z"), 1000)).toMatch(/not provably after/);
    // On our clock it is after the sending, but the service's clock is an hour ahead: it is older.
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:30:00Z"), 3_600_000)).toMatch(/not provably after this create was sent/);
  });

  it("refuses what was made after the failure came back (another stack's identical rule), on the service's clock at the earliest", () => {
    const failed = { ...attempt(), failedAt: SENT_AT + 2000 }; // the 502 came back 2 s after sending
    expect(ownership.whyNotMadeBy(failed, found("2026-11-23T08:00:02.123Z"), 0, 0)).toBeUndefined();
    // A time in whole seconds names any moment of that second: 08:00:02 may be 08:00:02.900, after the failure.
    expect(ownership.whyNotMadeBy(failed, found("2026-11-23T08:00:02Z"), 0, 0)).toMatch(/after this create's failure came back/);
    expect(ownership.whyNotMadeBy(failed, found("2026-11-23T08:00:01Z"), 0, 0)).toBeUndefined();
    expect(ownership.whyNotMadeBy(failed, found("2026-11-23T08:00:04.200Z"), 0, 0)).toMatch(/created at 2026-11-23T08:00:04.200Z, after this create's failure came back \(2026-11-23T08:00:02.700Z on the service's clock at the earliest\)/);
    // The service's clock may be a second behind ours (whole-second Date headers): judged by its earliest.
    expect(ownership.whyNotMadeBy(failed, found("2026-11-23T08:00:02.500Z"), 0, -1000)).toMatch(/after this create's failure came back/);
    expect(ownership.whyNotMadeBy(failed, found("2026-11-23T08:00:02.123Z"), 0, undefined)).toMatch(/clock is unknown, so nothing proves it was created before/);
  });

  it("refuses an object that differs in any field sent, or whose field cannot be checked", () => {
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:05Z", { cidr: "192.0.2.0/24", action: "allow" }), 0)).toMatch(/its action is "allow", not "deny"/);
    const withDescription = attempt({ cidr: "192.0.2.0/24", action: "deny", description: "ours" });
    expect(ownership.whyNotMadeBy(withDescription, found("2026-11-23T08:00:05Z", { cidr: "192.0.2.0/24", action: "deny", description: "theirs" }), 0)).toMatch(/its description is "theirs", not "ours"/);
    const unknownOwner = attempt({ description: "ci deploy", ownerId: undefined });
    expect(ownership.whyNotMadeBy(unknownOwner, found("2026-11-23T08:00:05Z", { description: "ci deploy", ownerId: "usr_other" }), 0)).toMatch(/ownerId cannot be checked/);
  });

  it("proves nothing without the service's clock, or from a created_at that is not a time", () => {
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:05Z"), undefined)).toMatch(/clock is unknown/);
    expect(ownership.whyNotMadeBy(attempt(), found("yesterday"), 0)).toMatch(/not a time/);
  });

  it("refuses an object another resource of this run manages", () => {
    ownership.claim("test rule", "ipr_claimed", "test");
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:05Z", undefined, "ipr_claimed"), 0)).toMatch(/another resource of this stack manages it/);
  });
});

describe("mayHaveCreated", () => {
  it("holds only for an object a lost create of this run, for this slot, can have made", () => {
    const before = found("2026-11-23T07:59:00Z", undefined, "ipr_before");
    const after = found("2026-11-23T08:00:03Z", undefined, "ipr_after");
    expect(ownership.mayHaveCreated("test rule", "ipp_1 192.0.2.0/24", after, 0)).toBe(false); // no lost create yet
    ownership.noteLostCreate("ipp_1 192.0.2.0/24", attempt());
    expect(ownership.mayHaveCreated("test rule", "ipp_1 192.0.2.0/24", after, 0)).toBe(true);
    expect(ownership.mayHaveCreated("test rule", "ipp_1 192.0.2.0/24", before, 0)).toBe(false); // older than the request
    expect(ownership.mayHaveCreated("test rule", "ipp_2 192.0.2.0/24", after, 0)).toBe(false); // another slot
  });
});

describe("replacing and objectExists", () => {
  it("remembers which objects diff found must be replaced", () => {
    expect(ownership.replacing("test rule", "ipr_r")).toBe(false);
    ownership.noteReplacing("test rule", "ipr_r");
    expect(ownership.replacing("test rule", "ipr_r")).toBe(true);
    expect(ownership.replacing("API key", "ipr_r")).toBe(false);
  });

  it("gives a partial create's error the id, the state with __provider, and reasons", () => {
    const err = ownership.objectExists(new Error("update IP policy rule ipr_1: HTTP 502"), "ipr_1", { cidr: "192.0.2.0/24" }, { __provider: "exports.handler = …", cidr: "x" });
    expect(err).toMatchObject({ id: "ipr_1", properties: { cidr: "192.0.2.0/24", __provider: "exports.handler = …" }, reasons: ["update IP policy rule ipr_1: HTTP 502"] });
  });
});

describe("the service's clock", () => {
  const servers: http.Server[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      s.close();
    }
  });

  it("is learnt from the Date header of its answers and the created_at of its creates, as bounds on its offset from ours", async () => {
    const ahead = 3_600_000;
    const server = http.createServer((req, res) => {
      res.sendDate = false;
      const now = Date.now() + ahead;
      res.writeHead(req.method === "POST" ? 201 : 200, { "content-type": "application/json", date: new Date(now).toUTCString() });
      res.end(req.method === "POST" ? JSON.stringify({ id: "ak_1", created_at: new Date(now).toISOString() }) : "{}");
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const source = { apiUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: "test-key-0123456789" };
    await client.api("GET", "/api_keys", { what: "list", source });
    const coarse = clock.serverClock(source);
    expect(coarse.lower).toBeLessThanOrEqual(ahead); // the header is in whole seconds
    expect(coarse.upper).toBeGreaterThanOrEqual(ahead); // never less than the truth: nobody else's object is taken for ours
    expect(coarse.upper - coarse.lower).toBeLessThan(1100);
    await client.api("POST", "/api_keys", { what: "create", body: {}, source });
    const fine = clock.serverClock(source);
    expect(fine.upper).toBeGreaterThanOrEqual(ahead);
    expect(fine.upper - fine.lower).toBeLessThan(100); // a created_at to the millisecond tightens both
  });
});

describe("the service's clock is learnt only from the service (second attack)", () => {
  const servers: http.Server[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      s.close();
    }
  });
  const start = async (handler: http.RequestListener) => {
    const server = http.createServer(handler);
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return { apiUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: "test-key-0123456789" };
  };

  it("a gateway's 502 with its own Date, 3 s behind, does not move the bound below the truth", async () => {
    const source = await start((req, res) => {
      res.sendDate = false;
      if (req.method === "POST") {
        res.writeHead(502, { "content-type": "application/json", date: new Date(Date.now() - 3000).toUTCString() });
        return void res.end(JSON.stringify({ error_code: "ERR_GATEWAY", msg: "upstream" }));
      }
      res.writeHead(200, { "content-type": "application/json", date: new Date().toUTCString() });
      res.end("{}");
    });
    await client.api("GET", "/api_keys", { what: "list", source });
    await client.api("POST", "/api_keys", { what: "create", body: {}, source }).catch(() => undefined);
    expect(clock.serverClock(source).upper).toBeGreaterThanOrEqual(0); // same machine: the true offset is 0
  });

  it("a created_at printed with a fraction of zeros proves whole seconds, not milliseconds", async () => {
    const source = await start((_req, res) => {
      const whole = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString(); // "….000Z"
      res.writeHead(201, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: "ak_1", created_at: whole }));
    });
    await client.api("POST", "/api_keys", { what: "create", body: {}, source });
    expect(clock.serverClock(source).upper).toBeGreaterThanOrEqual(0);
  });
});

describe("a rule create whose answer was lost", () => {
  const servers: http.Server[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      s.close();
    }
  });

  it("does not take over an older rule that holds the CIDR, and says why; nothing is patched", async () => {
    const hits: string[] = [];
    const older = { id: "ipr_older", uri: "u", created_at: new Date(Date.now() - 3_600_000).toISOString(), cidr: "192.0.2.0/24", action: "deny", ip_policy: { id: "ipp_1", uri: "u" } };
    const server = http.createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      req.resume();
      req.on("end", () => {
        const status = req.method === "POST" ? 502 : 200;
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(req.method === "POST" ? { error_code: "ERR_GATEWAY", msg: "upstream" } : { ip_policy_rules: [older], uri: "u", next_page_uri: null }));
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    await config.configure(configureRequest({ "accessctl:apiUrl": `http://127.0.0.1:${(server.address() as AddressInfo).port}`, "accessctl:apiKey": "test-key-0123456789", "accessctl:maxRequestsPerMinute": "100000" }));
    const { provider } = await serializedProvider("ip-policy-rule");
    const err = await provider.create({ ipPolicyId: "ipp_1", cidr: "192.0.2.0/24", action: "deny" }).catch((e: Error) => e);
    expect(err.message).toMatch(/^create IP policy rule 192\.0\.2\.0\/24: HTTP 502 ERR_GATEWAY: upstream; rule ipr_older already holds this CIDR and was not created by this run \(it was created at [^,]+, not provably after this create was sent \(at the latest [^)]+ on the service's clock\)\)\. To manage it from this resource, declare adoptId: "ipr_older"\./);
    expect(hits.filter((h) => !h.startsWith("GET"))).toEqual(["POST /ip_policy_rules"]);
  });
});
