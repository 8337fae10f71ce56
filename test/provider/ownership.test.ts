// Issue 17: "could this attempt have made it?", the judgement that recovery after a lost create
// answer rests on (provider/ownership.ts), and the server clock it reads (provider/http/clock.ts).
import * as http from "node:http";
import { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { client as emuClient, RunningEmulator, startEmulator } from "../helpers/emulator";
import { FaultProxy, startFaultProxy } from "../helpers/fault-proxy";
import { compiled, configureRequest, newRun, serializedProvider } from "../helpers/provider";

const ownership = compiled("provider/ownership.js");
const client = compiled("provider/http/api.js");
const clock = compiled("provider/http/clock.js");
const config = compiled("provider/config.js");

const SENT_AT = Date.parse("2026-11-23T08:00:00.700Z"); // our clock, when the request went out
const attempt = (sent: Record<string, string | undefined> = { cidr: "192.0.2.0/24", action: "deny" }) => ({
  kind: "test rule",
  sentAt: SENT_AT,
  sent,
});
const found = (
  createdAt: string,
  fields: Record<string, string> = { cidr: "192.0.2.0/24", action: "deny" },
  id = "ipr_x",
) => ({ id, createdAt, fields });

describe("whyNotMadeBy", () => {
  it("accepts an object created at or after the latest moment the request can have been sent on the service's clock, with every field sent", () => {
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:00.700Z"), 0)).toBeUndefined();
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:01.000Z"), 0)).toBeUndefined();
    // The service's clock runs an hour ahead of ours: its timestamps are judged on its clock.
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T09:00:01.000Z"), 3_600_000)).toBeUndefined();
  });

  it("refuses what is not provably later: the upper bound of the service's clock counts, not the lower one", () => {
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:00.699Z"), 0)).toMatch(
      /created at 2026-11-23T08:00:00.699Z, not provably after this create was sent \(at the latest 2026-11-23T08:00:00.700Z on the service's clock\)/,
    );
    // Known only from whole-second Date headers, the clock may be up to a second ahead: an identical
    // rule made 400 ms before the send (another stack's) is not taken; neither is a whole-second time.
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:00.300Z"), 1000)).toMatch(/not provably after/);
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:01Z"), 1000)).toMatch(/not provably after/);
    // On our clock it is after the sending, but the service's clock is an hour ahead: it is older.
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:30:00Z"), 3_600_000)).toMatch(
      /not provably after this create was sent/,
    );
  });

  it("refuses what was made after the failure came back (another stack's identical rule), on the service's clock at the earliest", () => {
    const failed = { ...attempt(), failedAt: SENT_AT + 2000 }; // the 502 came back 2 s after sending
    expect(ownership.whyNotMadeBy(failed, found("2026-11-23T08:00:02.123Z"), 0, 0)).toBeUndefined();
    // A time in whole seconds names any moment of that second: 08:00:02 may be 08:00:02.900, after the failure.
    expect(ownership.whyNotMadeBy(failed, found("2026-11-23T08:00:02Z"), 0, 0)).toMatch(
      /after this create's failure came back/,
    );
    expect(ownership.whyNotMadeBy(failed, found("2026-11-23T08:00:01Z"), 0, 0)).toBeUndefined();
    expect(ownership.whyNotMadeBy(failed, found("2026-11-23T08:00:04.200Z"), 0, 0)).toMatch(
      /created at 2026-11-23T08:00:04.200Z, after this create's failure came back \(2026-11-23T08:00:02.700Z on the service's clock at the earliest\)/,
    );
    // The service's clock may be a second behind ours (whole-second Date headers): judged by its earliest.
    expect(ownership.whyNotMadeBy(failed, found("2026-11-23T08:00:02.500Z"), 0, -1000)).toMatch(
      /after this create's failure came back/,
    );
    expect(ownership.whyNotMadeBy(failed, found("2026-11-23T08:00:02.123Z"), 0, undefined)).toMatch(
      /clock is unknown, so nothing proves it was created before/,
    );
  });

  it("refuses an object that differs in any field sent, or whose field cannot be checked", () => {
    expect(
      ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:05Z", { cidr: "192.0.2.0/24", action: "allow" }), 0),
    ).toMatch(/its action is "allow", not "deny"/);
    const withDescription = attempt({ cidr: "192.0.2.0/24", action: "deny", description: "ours" });
    expect(
      ownership.whyNotMadeBy(
        withDescription,
        found("2026-11-23T08:00:05Z", { cidr: "192.0.2.0/24", action: "deny", description: "theirs" }),
        0,
      ),
    ).toMatch(/its description is "theirs", not "ours"/);
    const unknownOwner = attempt({ description: "ci deploy", ownerId: undefined });
    expect(
      ownership.whyNotMadeBy(
        unknownOwner,
        found("2026-11-23T08:00:05Z", { description: "ci deploy", ownerId: "usr_other" }),
        0,
      ),
    ).toMatch(/ownerId cannot be checked/);
  });

  it("proves nothing without the service's clock, or from a created_at that is not a time", () => {
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:05Z"), undefined)).toMatch(/clock is unknown/);
    expect(ownership.whyNotMadeBy(attempt(), found("yesterday"), 0)).toMatch(/not a time/);
  });

  it("refuses an object another resource of this run manages", () => {
    ownership.claim("test rule", "ipr_claimed", "test");
    expect(ownership.whyNotMadeBy(attempt(), found("2026-11-23T08:00:05Z", undefined, "ipr_claimed"), 0)).toMatch(
      /another resource of this stack manages it/,
    );
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
    const err = ownership.objectExists(
      new Error("update IP policy rule ipr_1: HTTP 502"),
      "ipr_1",
      { cidr: "192.0.2.0/24" },
      { __provider: "exports.handler = …", cidr: "x" },
    );
    expect(err).toMatchObject({
      id: "ipr_1",
      properties: { cidr: "192.0.2.0/24", __provider: "exports.handler = …" },
      reasons: ["update IP policy rule ipr_1: HTTP 502"],
    });
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
      res.writeHead(req.method === "POST" ? 201 : 200, {
        "content-type": "application/json",
        date: new Date(now).toUTCString(),
      });
      res.end(req.method === "POST" ? JSON.stringify({ id: "ak_1", created_at: new Date(now).toISOString() }) : "{}");
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const source = {
      apiUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      apiKey: "test-key-0123456789",
    };
    // The bounds' width is the header's second plus the request's round trip (measured: a loaded
    // machine stretches it, not the logic).
    let t0 = Date.now();
    await client.api("GET", "/api_keys", { what: "list", source });
    const listTook = Date.now() - t0;
    const coarse = clock.serverClock(source);
    expect(coarse.lower).toBeLessThanOrEqual(ahead); // the header is in whole seconds
    expect(coarse.upper).toBeGreaterThanOrEqual(ahead); // never less than the truth: nobody else's object is taken for ours
    expect(coarse.upper - coarse.lower).toBeLessThanOrEqual(1000 + listTook);
    t0 = Date.now();
    await client.api("POST", "/api_keys", { what: "create", body: {}, source });
    const createTook = Date.now() - t0;
    const fine = clock.serverClock(source);
    expect(fine.upper).toBeGreaterThanOrEqual(ahead);
    // A created_at to the millisecond tightens both: the width is the create's round trip, not a second.
    expect(fine.upper - fine.lower).toBeLessThanOrEqual(createTook);
    expect(fine.upper - fine.lower).toBeLessThan(coarse.upper - coarse.lower);
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
    const older = {
      id: "ipr_older",
      uri: "u",
      created_at: new Date(Date.now() - 3_600_000).toISOString(),
      cidr: "192.0.2.0/24",
      action: "deny",
      ip_policy: { id: "ipp_1", uri: "u" },
    };
    const server = http.createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      req.resume();
      req.on("end", () => {
        const status = req.method === "POST" ? 502 : 200;
        res.writeHead(status, { "content-type": "application/json" });
        res.end(
          JSON.stringify(
            req.method === "POST"
              ? { error_code: "ERR_GATEWAY", msg: "upstream" }
              : { ip_policy_rules: [older], uri: "u", next_page_uri: null },
          ),
        );
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    await config.configure(
      configureRequest({
        "accessctl:apiUrl": `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        "accessctl:apiKey": "test-key-0123456789",
        "accessctl:maxRequestsPerMinute": "100000",
      }),
    );
    const { provider } = await serializedProvider("ip-policy-rule");
    const err = await provider
      .create({ ipPolicyId: "ipp_1", cidr: "192.0.2.0/24", action: "deny" })
      .catch((e: Error) => e);
    expect(err.message).toMatch(
      /^create IP policy rule 192\.0\.2\.0\/24: HTTP 502 ERR_GATEWAY: upstream; rule ipr_older already holds this CIDR and was not made by this resource \(it carries no marker of this provider's: made by hand, or by another tool\)\. To manage it from this resource, declare adoptId: "ipr_older"\./,
    );
    expect(hits.filter((h) => !h.startsWith("GET"))).toEqual(["POST /ip_policy_rules"]);
  });
});

describe("the marker: whose object this is, by what the provider wrote (issue 35)", () => {
  const dynamicUrn = "urn:pulumi:dev::shop::pulumi-nodejs:dynamic/accessctl:IpPolicyRuleSet::office";
  it.each([
    ["a dynamic resource", dynamicUrn, { stack: "shop/dev", resource: "IpPolicyRuleSet::office" }],
    [
      "the same on the plugin",
      "urn:pulumi:dev::shop::accessctl:index:IpPolicyRuleSet::office",
      { stack: "shop/dev", resource: "IpPolicyRuleSet::office" },
    ],
    [
      "a child of a component",
      "urn:pulumi:prod::shop::my:Component$accessctl:index:IpPolicyRule::a::b",
      { stack: "shop/prod", resource: "IpPolicyRule::a::b" },
    ],
    ["no URN (no engine)", undefined, {}],
  ])("who %s is", (_, urn, who) => {
    expect(ownership.ownerOf(urn)).toEqual(who);
  });

  it("reads back what it writes; other metadata is no marker; a marker is no metadata of the program's", () => {
    const m = ownership.newMarker(dynamicUrn);
    expect(m.attempt).toMatch(/^[0-9a-f]{16}$/);
    const text = ownership.markerText(m);
    expect(text).toBe(
      `{"managed-by":"pulumi-accessctl","stack":"shop/dev","resource":"IpPolicyRuleSet::office","attempt":"${m.attempt}"}`,
    );
    expect(ownership.readMarker(text)).toEqual(m);
    for (const other of [
      "",
      "team=blue",
      '{"managed-by":"someone-else","attempt":"x"}',
      '{"managed-by":"pulumi-accessctl"',
      undefined,
    ])
      expect(ownership.readMarker(other)).toBeUndefined();
    expect(ownership.visibleMetadata(text)).toBe("");
    expect(ownership.visibleMetadata("team=blue")).toBe("team=blue");
    expect(ownership.newMarker(dynamicUrn).attempt).not.toBe(m.attempt);
  });

  it("marks a create that leaves metadata unset, and an update that clears it; never one that sets it", () => {
    expect(ownership.readMarker(ownership.marked({ cidr: "x" }, dynamicUrn).body.metadata)).toMatchObject({
      stack: "shop/dev",
    });
    expect(ownership.marked({ metadata: "mine" }, dynamicUrn)).toEqual({ body: { metadata: "mine" } });
    expect(ownership.marked({ description: "d" }, dynamicUrn, true)).toEqual({ body: { description: "d" } }); // metadata not changed
    expect(ownership.readMarker(ownership.marked({ metadata: "" }, dynamicUrn, true).body.metadata)).toMatchObject({
      resource: "IpPolicyRuleSet::office",
    });
  });

  it("another stack's: a marker naming another stack; not a marker of this stack, nor one without a stack to compare", () => {
    const theirs = ownership.newMarker("urn:pulumi:prod::shop::accessctl:index:IpPolicyRule::b");
    expect(ownership.othersMarker(theirs, dynamicUrn)).toBe(theirs);
    expect(
      ownership.othersMarker(ownership.newMarker("urn:pulumi:dev::shop::accessctl:index:IpPolicyRule::b"), dynamicUrn),
    ).toBeUndefined();
    expect(ownership.othersMarker(theirs, undefined)).toBeUndefined();
    expect(ownership.othersMarker(undefined, dynamicUrn)).toBeUndefined();
    expect(ownership.makerName(theirs)).toBe("IpPolicyRule b of stack shop/prod");
  });

  it("a marker's names are shown without control, format or bidi characters, cut at 100 (an insider's fake lines)", () => {
    const forged = {
      "managed-by": "pulumi-accessctl",
      resource: "IpPolicyRule::p\u202eartner",
      stack: `shop/b\r\x1b[2K  ok: no drift\n${"x".repeat(300)}`,
    };
    const name = ownership.makerName(forged);
    // eslint-disable-next-line no-control-regex -- the control characters a forged marker must not carry through
    expect(name).not.toMatch(/[\r\n\x1b\u202e]/);
    expect(name).toMatch(/^IpPolicyRule p\?artner of stack shop\/b\?\?\[2K {2}ok: no drift\?x+…$/);
    expect(name.length).toBeLessThan(240);
  });
});

describe("a signed marker (issue 39): proof only when it verifies with the team key on that very rule", () => {
  const KEY = "team-key-0123456789abcdef";
  const urn = "urn:pulumi:b::shop::accessctl:index:IpPolicyRule::partner";
  const on = ownership.ruleIdentity("ipp_1", "10.7.0.0/16", "allow");
  const withTeamKey = <T>(key: string | undefined, fn: () => T): T => {
    const before = process.env.ACCESSCTL_TEAM_KEY;
    if (key === undefined) delete process.env.ACCESSCTL_TEAM_KEY;
    else process.env.ACCESSCTL_TEAM_KEY = key;
    try {
      return fn();
    } finally {
      if (before === undefined) delete process.env.ACCESSCTL_TEAM_KEY;
      else process.env.ACCESSCTL_TEAM_KEY = before;
    }
  };

  it("verifies what it signed; any other key, rule, policy, action, field or signature does not", () => {
    const m = { stack: "shop/b", resource: "IpPolicyRule::partner", attempt: "0123456789abcdef" };
    const sig = ownership.markerMac(KEY, m, on);
    expect(sig).toMatch(/^[A-Za-z0-9_-]{22}$/); // 128 bits, base64url
    const signed = { ...m, sig };
    expect(ownership.markerVerifies(KEY, signed, on)).toBe(true);
    expect(ownership.markerVerifies(`${KEY}x`, signed, on)).toBe(false);
    expect(ownership.markerVerifies(undefined, signed, on)).toBe(false);
    expect(ownership.markerVerifies(KEY, m, on)).toBe(false); // unsigned
    for (const other of [
      ["ipp_2", "10.7.0.0/16", "allow"],
      ["ipp_1", "0.0.0.0/0", "allow"],
      ["ipp_1", "10.7.0.0/16", "deny"],
    ]) {
      expect(ownership.markerVerifies(KEY, signed, ownership.ruleIdentity(...other))).toBe(false); // copied onto another rule
    }
    for (const field of ["stack", "resource", "attempt"] as const)
      expect(ownership.markerVerifies(KEY, { ...signed, [field]: `${m[field]}x` }, on)).toBe(false);
    expect(ownership.markerVerifies(KEY, { ...signed, sig: sig.slice(0, 21) }, on)).toBe(false);
    // Fields are not run together: "a","bc" and "ab","c" differ.
    expect(ownership.markerMac(KEY, { stack: "a", resource: "bc", attempt: "x" }, on)).not.toBe(
      ownership.markerMac(KEY, { stack: "ab", resource: "c", attempt: "x" }, on),
    );
  });

  it("writes a signed marker with a team key (and reads it back), an unsigned one without; a short key is refused, naming the setting and the limit", () => {
    const signed = withTeamKey(KEY, () => ownership.newMarker(urn, on));
    expect(ownership.readMarker(ownership.markerText(signed))).toEqual(signed);
    const rule = { id: "ipr_1", createdAt: new Date().toISOString() };
    expect(withTeamKey(KEY, () => ownership.ruleMarkerVerdict(signed, on, rule)).kind).toBe("pending"); // id-less: not proof yet
    const bound = withTeamKey(KEY, () => ownership.idBoundMarker(signed, on, "ipr_1"));
    expect(ownership.readMarker(ownership.markerText(bound))).toEqual(bound);
    expect(withTeamKey(KEY, () => ownership.ruleMarkerVerdict(bound, on, rule))).toEqual({ kind: "verified" });
    expect(withTeamKey(undefined, () => ownership.ruleMarkerVerdict(bound, on, rule))).toEqual({
      kind: "unverified",
      because: "no-team-key",
    });
    expect(withTeamKey(undefined, () => ownership.newMarker(urn, on)).sig).toBeUndefined();
    expect(withTeamKey(KEY, () => ownership.newMarker(urn)).sig).toBeUndefined(); // an API key's: nothing to sign onto
    expect(() => withTeamKey("short", () => ownership.newMarker(urn, on))).toThrow(
      "ACCESSCTL_TEAM_KEY must be at least 16 characters long (it has 5)",
    );
  });

  it("stays within metadata's 4096 bytes, however long the stack and resource names", () => {
    const long = `urn:pulumi:${"s".repeat(3000)}::${"p".repeat(3000)}::accessctl:index:IpPolicyRule::${"n".repeat(5000)}`;
    const m = withTeamKey(KEY, () => ownership.newMarker(long, on));
    expect(Buffer.byteLength(ownership.markerText(m))).toBeLessThanOrEqual(4096);
    expect(ownership.markerVerifies(KEY, ownership.readMarker(ownership.markerText(m)), on)).toBe(true);
  });

  it("says why a claim is not verified", () => {
    expect(ownership.unverifiedWhy("no-team-key")).toBe("no team key is set (accessctl:teamKey or ACCESSCTL_TEAM_KEY)");
    expect(ownership.unverifiedWhy("unsigned")).toBe("it is not signed");
    expect(ownership.unverifiedWhy("bad-signature")).toBe("its signature does not match this rule and the team key");
    expect(ownership.unverifiedWhy("other-rule")).toBe("its signature is bound to another rule");
    expect(ownership.unverifiedWhy("never-bound")).toBe(
      "it was signed before its rule id was known and never bound to it",
    );
  });

  it("verdict: only a signature bound to the rule's id verifies; an id-less one is pending for the grace after the rule's creation, then proves nothing", () => {
    const m = { stack: "shop/b", resource: "IpPolicyRule::partner", attempt: "0123456789abcdef" };
    const created = "2026-11-27T10:00:00.000Z";
    const idLess = { ...m, at: created, sig: ownership.markerMac(KEY, { ...m, at: created }, on) };
    const bound = { ...m, idSig: ownership.markerIdMac(KEY, m, on, "ipr_1") };
    const at = (ms: number) => Date.parse(created) + ms;
    const grace = ownership.ID_SIGNING_GRACE_MS;
    const verdict = (mk: object, id = "ipr_1", now = at(1000), key: string | undefined = KEY) =>
      ownership.markerVerdict(key, mk, on, { id, createdAt: created }, now);
    expect(verdict(bound)).toEqual({ kind: "verified" });
    expect(verdict(bound, "ipr_1", at(grace * 100))).toEqual({ kind: "verified" }); // no grace needed
    // A copy onto another rule (an identical one made after the first was deleted): never, not even pending.
    expect(verdict(bound, "ipr_2")).toEqual({ kind: "unverified", because: "other-rule" });
    expect(verdict({ ...bound, sig: idLess.sig }, "ipr_2")).toEqual({ kind: "unverified", because: "other-rule" });
    // The id-less signature cannot pass as the id-bound one (another domain).
    expect(verdict({ ...m, idSig: idLess.sig })).toEqual({ kind: "unverified", because: "other-rule" });
    expect(verdict(idLess)).toEqual({ kind: "pending", until: new Date(at(grace)).toISOString() });
    expect(verdict(idLess, "ipr_1", at(grace - 1)).kind).toBe("pending");
    expect(verdict(idLess, "ipr_1", at(grace))).toEqual({ kind: "unverified", because: "never-bound" });
    expect(ownership.markerVerdict(KEY, idLess, on, { id: "ipr_1", createdAt: "not a time" }, at(0))).toEqual({
      kind: "unverified",
      because: "never-bound",
    });
    expect(verdict({ ...m, sig: "x".repeat(22) })).toEqual({ kind: "unverified", because: "bad-signature" });
    expect(verdict(m)).toEqual({ kind: "unverified", because: "unsigned" });
    expect(ownership.markerVerdict(undefined, bound, on, { id: "ipr_1", createdAt: created }, at(0))).toEqual({
      kind: "unverified",
      because: "no-team-key",
    });
    expect(verdict(bound, "ipr_1", at(0), `${KEY}x`)).toEqual({ kind: "unverified", because: "other-rule" });
    for (const field of ["stack", "resource", "attempt"] as const)
      expect(verdict({ ...bound, [field]: `${m[field]}x` }).kind).toBe("unverified");
  });
});

describe("ACCESSCTL_ACCEPT_GONE (issue 39, reproduction 4): a say-so for a refresh's reads only", () => {
  const trust = compiled("provider/http/trust.js");
  it.each([
    ["GET", "read", "1", true],
    ["GET", "delete", "1", false],
    ["GET", "update", "1", false],
    ["GET", "create", "1", false],
    ["GET", undefined, "1", false],
    ["DELETE", "read", "1", false],
    ["DELETE", "delete", "1", false],
    ["GET", "read", undefined, false],
    ["GET", "read", "true", false],
  ])("%s in a %s operation, ACCESSCTL_ACCEPT_GONE=%s: %s", (method, kind, setting, applies) => {
    expect(trust.acceptGoneApplies(method, kind, setting)).toBe(applies);
  });
});

describe("a lost rule create takes exactly its own rule (issue 35, case 1)", () => {
  const URN_A = "urn:pulumi:a::shop::accessctl:index:IpPolicyRule::deny";
  const URN_B = "urn:pulumi:b::shop::accessctl:index:IpPolicyRule::deny";
  let emu: RunningEmulator;
  let proxy: FaultProxy;
  beforeAll(async () => {
    emu = await startEmulator(["--rate-limit", "off"]);
    proxy = await startFaultProxy(emu.url);
  });
  afterAll(async () => {
    await proxy.close();
    await emu.stop();
  });
  const through = (url: string) =>
    config.configure(
      configureRequest({
        "accessctl:apiUrl": url,
        "accessctl:apiKey": emu.adminToken,
        "accessctl:maxRequestsPerMinute": "100000",
      }),
    );
  const policy = async (p: string) =>
    ((await emuClient(emu.url, emu.adminToken).get("/ip_policy_rules")).body.ip_policy_rules as any[]).filter(
      (r) => r.ip_policy.id === p,
    );

  it("another stack makes the identical rule while this create is held and then lost: not taken, named", async () => {
    const p = emu.fixtures.ipPolicies[0];
    const rule = (await serializedProvider("ip-policy-rule")).provider;
    await through(proxy.url);
    proxy.fail({ method: "POST", path: /^\/ip_policy_rules$/, when: "before", status: 502, delayMs: 1500 });
    const lost = rule
      .create({ ipPolicyId: p, cidr: "198.51.100.0/24", action: "deny", __urn: URN_A })
      .catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 300)); // A's create is held at the gateway; B makes the same rule
    newRun();
    const theirs = (
      await emuClient(emu.url, emu.adminToken).post("/ip_policy_rules", {
        ip_policy_id: p,
        cidr: "198.51.100.0/24",
        action: "deny",
        metadata: ownership.markerText(ownership.newMarker(URN_B)),
      })
    ).body;
    const err = await lost;
    expect(String(err)).toContain(
      `rule ${theirs.id} already holds this CIDR and was made by IpPolicyRule deny of stack shop/b (its metadata says so)`,
    );
    expect((await policy(p)).map((r) => r.id)).toEqual([theirs.id]);
    await emuClient(emu.url, emu.adminToken).delete(`/ip_policy_rules/${theirs.id}`);
  });

  it("its own create, whose answer was lost after the service made it: taken (its marker names this attempt), at once", async () => {
    const p = emu.fixtures.ipPolicies[1];
    const rule = (await serializedProvider("ip-policy-rule")).provider;
    newRun();
    await through(proxy.url);
    proxy.fail({ method: "POST", path: /^\/ip_policy_rules$/, when: "after", status: 502 });
    const taken = await rule.create({ ipPolicyId: p, cidr: "203.0.113.0/24", action: "deny", __urn: URN_A });
    expect((await policy(p)).map((r) => r.id)).toEqual([taken.id]);
    expect(taken.outs.metadata).toBe(""); // the marker is no metadata of the program's
    // A program that declares its own metadata gets no marker: a lost create then takes nothing, and says what to do.
    newRun();
    proxy.fail({ method: "POST", path: /^\/ip_policy_rules$/, when: "after", status: 502 });
    const err = await rule
      .create({ ipPolicyId: p, cidr: "203.0.114.0/24", action: "deny", metadata: "team=blue", __urn: URN_A })
      .catch((e: Error) => e);
    expect(String(err)).toMatch(
      /nothing proves this resource made it: the program declares its own metadata, where the provider would have written its marker\. To manage it from this resource, declare adoptId: "ipr_\w+"\. If an interrupted `pulumi up` of this stack made it, run `ACCESSCTL_ADOPT_EXISTING=1 pulumi up` once/,
    );
    await through(emu.url);
    for (const r of await policy(p)) await emuClient(emu.url, emu.adminToken).delete(`/ip_policy_rules/${r.id}`);
  });
});
