// Insider attacks on what integration2 built (issue 39, second round): each case reproduces a way an
// insider (console/API with the account's key, rules' metadata, a hostile server's answers) gets past
// the id-bound markers, the msg rendering or the plan hold. Each was an `it.fails` (the attack worked);
// each is a plain `it` with its fix ("fails before" says what it showed).
import * as http from "node:http";
import { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, RunningEmulator, startEmulator } from "../helpers/emulator";
import { compiled, configureRequest, newRun, serializedProvider } from "../helpers/provider";

const failures = compiled("provider/http/failures.js");

// A token as the service makes them ("<key id without ak_>_<secret>"), 57 characters, mixed case and digits.
const KEY = "2Qx7Lm9RtVbN_k4JpZ8wYcHs3FgD6aEuXo1TiK5nMqW0yBvCrP2jSdLhG";

/** Every `ipr_…`/`ak_…` id a text shows, without its prefix. */
const idBodies = (text: string) =>
  [...text.matchAll(/\b(?:ipr|ak|ipp|ca|usr|bot|op)_([A-Za-z0-9]+)/g)].map((m) => m[1]);

describe("msg rendering: the id shape carries key material (render-msg.ts kindOf 'id')", () => {
  // The window check joins the kept tokens' letters and digits: with the id's prefix between every 7
  // characters of the key no 8-character window of it is ever joined, and an id's digits are not counted
  // against MAX_DIGITS. Every character class of a key fits `ipr_[A-Za-z0-9]{1,64}`.
  const sevens = (s: string) => s.match(/.{1,7}/g)!;

  it("one error's msg of ids, 7 characters of the key each, shows the whole key (but its `_`)", () => {
    const alnum = KEY.replace(/_/g, "");
    const msg = `rules ${sevens(alnum)
      .map((p) => `ipr_${p}`)
      .join(", ")} conflict`;
    const what = "create IP policy rule 10.0.0.0/8";
    const err = failures.describeError(what, 409, { msg }, JSON.stringify({ msg }), [KEY]);
    const shown = idBodies(err.message).filter((b) => alnum.includes(b));
    expect(shown.join("").length).toBeLessThan(8); // fails: 49 of its 56 letters and digits, in order
  });

  it("words: letters only, split at case changes, with a filler word every 7 characters", () => {
    // A lower/Capitalized/UPPER run is a word; digits go in ids (not counted); `q` breaks every window.
    const letters = (p: string) => p.match(/[a-z]+|[A-Z][a-z]*|[0-9]+/g)!.map((r) => (/\d/.test(r) ? `op_${r}` : r));
    const alnum = KEY.replace(/_/g, "");
    const msg = sevens(alnum)
      .map((p) => letters(p).join("-"))
      .join(" q ");
    const err = failures.describeError("list IP policy rules", 400, { msg }, JSON.stringify({ msg }), [KEY]);
    const back = err.message
      .split(": HTTP 400: ")[1]
      .split(" q ")
      .map((p: string) => p.replace(/op_|-/g, ""));
    expect(back.filter((p: string) => alnum.includes(p)).join("").length).toBeLessThan(8); // fails: 49 of 56
  });
});

// describeError showed error_code (any 64 letters, digits, `_`, `.`) and details.operation_id (80) as they
// were, through scrub alone (12-character windows): the key's letters and digits in 11-character pieces
// with a letter between, in either field, showed whole in one error. Now each is shown only when
// renderMsg keeps it whole (a code of words, an id of the contract's shapes, no window of a credential).
describe("error_code and operation_id carry no key material", () => {
  /** Key characters shown: the pieces of at least 8 of the key's letters and digits, in a row, that `text` holds. */
  const runsOfKey = (text: string, alnum: string) => {
    const flat = text.replace(/[^A-Za-z0-9]/g, "");
    let longest = 0;
    for (let i = 0; i < alnum.length; i++) {
      for (let n = longest + 1; i + n <= alnum.length && flat.includes(alnum.slice(i, i + n)); n++) longest = n;
    }
    return longest;
  };
  const alnum = KEY.replace(/_/g, "");
  const pieces = alnum.match(/.{1,11}/g)!;

  it("the key in 11-character pieces, one letter between, as error_code or operation_id", () => {
    const code = `E${pieces.join("x")}`.slice(0, 64);
    const op = `op${pieces.join("x")}`.slice(0, 80);
    const body = { error_code: code, msg: "bad request", details: { operation_id: op } };
    const err = failures.describeError("list IP policy rules", 400, body, JSON.stringify(body), [KEY]);
    expect(runsOfKey(err.message, alnum)).toBeLessThan(8); // (fails before: 11, every piece)
    expect(err.errorCode).toBeUndefined();
    expect(err.operationId).toBeUndefined();
  });

  it("the service's own codes and operation ids still show", () => {
    const op = "op_a0915dcdccf818c61beb56d2";
    const body = { error_code: "ERR_MISSING_FIELD", msg: "ip_policy_id is required", details: { operation_id: op } };
    const err = failures.describeError("create IP policy rule", 400, body, JSON.stringify(body), [KEY]);
    const shown = `create IP policy rule: HTTP 400 ERR_MISSING_FIELD: ip_policy_id is required (operation ${op})`;
    expect(err.message).toBe(shown);
    expect([err.errorCode, err.operationId]).toEqual(["ERR_MISSING_FIELD", op]);
  });
});

// A list walk that a next_page_uri leads back to a page already read said so quoting that URI, the
// server's text, through scrub alone: the key's pieces between words of a query showed whole. Now the
// page is named by its number in the walk (pages.ts).
describe("a looping next_page_uri", () => {
  it("is not quoted: the key in 11-character pieces in its query does not show", async () => {
    const pieces = KEY.match(/.{1,11}/g)!;
    const loop = `/api_keys?${pieces.map((p, i) => `${i ? "and" : "a"}=${p}`).join("&")}`;
    const server = http.createServer((req, res) => {
      const first = req.url === "/api_keys";
      const page = { keys: [{ id: first ? "ak_1" : "ak_2" }], uri: "u", next_page_uri: loop };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(page));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      await config.configure(
        configureRequest({
          "accessctl:apiUrl": `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          "accessctl:apiKey": KEY,
          "accessctl:maxRequestsPerMinute": "100000",
        }),
      );
      newRun();
      const walked: unknown[] = [];
      const err = await (async () => {
        const pages = compiled("provider/http/pages.js");
        for await (const item of pages.listAll("/api_keys", "keys", "list API keys")) walked.push(item);
      })().catch((e: Error) => e);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/next_page_uri leads back to a page already read/);
      expect(pieces.filter((p) => (err as Error).message.includes(p))).toEqual([]); // (fails before: all 6)
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

// ---- id-bound ownership markers (provider/ownership.ts) --------------------------------------------

const ownership = compiled("provider/ownership.js");
const config = compiled("provider/config.js");
const TEAM_KEY = "team-key-of-shop-attack2-0123456789";
const URN_A = "urn:pulumi:a::shop::pulumi-nodejs:dynamic/accessctl:IpPolicyRuleSet::office";
const URN_B = "urn:pulumi:b::shop::pulumi-nodejs:dynamic/accessctl:IpPolicyRule::partner";

describe("a captured id-less marker was pending again on every re-creation (grace from created_at)", () => {
  // Stack B once made 0.0.0.0/0 allow on policy P (an incident, say); its id-less marker showed on the
  // console between B's create and its second signature (or stayed, the bind having failed). Long after,
  // the insider creates 0.0.0.0/0 allow on P with that marker: the grace counts from the new rule's
  // created_at, which the insider sets by creating it, so it is pending (left alone by every set of P:
  // refresh, gate, up, destroy), and stays so by re-creating it every ID_SIGNING_GRACE_MS. Now the
  // id-less signature covers when it was made (`at`), and the grace ends ID_SIGNING_GRACE_MS after the
  // earlier of that and the rule's created_at (fails before: pending).
  it("a marker signed a day ago is not pending on a rule created now; one without `at` never is", () => {
    const on = ownership.ruleIdentity("ipp_P", "0.0.0.0/0", "allow");
    const now = Date.now();
    const m = { stack: "shop/b", resource: "IpPolicyRule::partner", attempt: "0123456789abcdef" };
    const dayAgo = { ...m, at: new Date(now - 86_400_000).toISOString() };
    const replay = { id: "ipr_insider1", createdAt: new Date(now - 1000).toISOString() };
    const verdict = (mk: object) => ownership.markerVerdict(TEAM_KEY, mk, on, replay, now);
    const signedDayAgo = { ...dayAgo, sig: ownership.markerMac(TEAM_KEY, dayAgo, on) };
    expect(verdict(signedDayAgo)).toEqual({ kind: "unverified", because: "never-bound" });
    // An earlier version's (no `at`): never pending.
    expect(verdict({ ...m, sig: ownership.markerMac(TEAM_KEY, m, on) }).kind).toBe("unverified");
    // `at` moved to now by the copier: the signature no longer matches.
    const moved = { ...signedDayAgo, at: new Date(now).toISOString() };
    expect(verdict(moved)).toEqual({ kind: "unverified", because: "bad-signature" });
    // The honest case: signed as its rule was made, pending for the grace.
    const fresh = { ...m, at: replay.createdAt };
    expect(verdict({ ...fresh, sig: ownership.markerMac(TEAM_KEY, fresh, on) }).kind).toBe("pending");
  });
});

describe("against the emulator", () => {
  let emu: RunningEmulator;
  let set: any;
  beforeAll(async () => {
    process.env.ACCESSCTL_TEAM_KEY = TEAM_KEY;
    emu = await startEmulator(["--rate-limit", "off"]);
    set = (await serializedProvider("ip-policy-rule-set")).provider;
  });
  afterAll(async () => {
    delete process.env.ACCESSCTL_TEAM_KEY;
    await emu.stop();
  });
  const withKey = (key: string) =>
    config.configure(
      configureRequest({
        "accessctl:apiUrl": emu.url,
        "accessctl:apiKey": key,
        "accessctl:maxRequestsPerMinute": "1000000",
      }),
    );
  const api = () => client(emu.url, emu.adminToken);
  /** Set A's program: one allow on `cidr` (of the policy `p` of each test). */
  let p = "";
  const program = (cidr: string) => ({ ipPolicyId: p, rules: [{ cidr, action: "allow" }], __urn: URN_A });
  const fresh = () => {
    newRun();
    const all = (globalThis as any)[Symbol.for("@accessctl/pulumi/state/v1")];
    for (const what of ["http-trust", "list-reads", "http-hints"]) delete all?.[what];
  };

  const cleanUp = async (p: string) => {
    for (const r of (await api().get("/ip_policy_rules")).body.ip_policy_rules as any[]) {
      if (r.ip_policy.id === p) await api().delete(`/ip_policy_rules/${r.id}`);
    }
  };

  // The replay of a captured id-less marker (see above) through a set's refresh: the insider's 0.0.0.0/0
  // allow, made now with stack B's marker of an old rule of the same CIDR and action, is not recorded
  // (left to B, "pending"): `preview --refresh --expect-no-changes` passed. Re-made every 100 s, for good.
  it("a set's refresh records the insider's re-made 0.0.0.0/0 allow carrying a captured id-less marker", async () => {
    await withKey(emu.adminToken);
    p = emu.fixtures.ipPolicies[0];
    await cleanUp(p);
    fresh();
    const inputs = (await set.check({}, program("192.0.2.0/24"))).inputs;
    const made = await set.create(inputs);
    // What stack B's create wrote first (its attempt, signed without the id), long ago: the insider kept it.
    const on = ownership.ruleIdentity(p, "0.0.0.0/0", "allow");
    const at = new Date(Date.now() - 86_400_000).toISOString();
    const m = { stack: "shop/b", resource: "IpPolicyRule::partner", attempt: "0123456789abcdef", at };
    const metadata = ownership.markerText({ ...m, sig: ownership.markerMac(TEAM_KEY, m, on) });
    const body = { ip_policy_id: p, cidr: "0.0.0.0/0", action: "allow", metadata };
    expect((await api().post("/ip_policy_rules", body)).status).toBe(201);
    fresh();
    const refreshed = (await set.read(p, made.outs)).props;
    expect(Object.keys(refreshed.rules)).toContain("0.0.0.0/0"); // (fails before: left out, as B's pending rule)
  });

  // The plan hold binds sets only (docs/guides/rule-sets.md says so): a job holding to a reviewed plan
  // created an IpPolicyRule `0.0.0.0/0 allow` and deleted an IpPolicyRule deny that no preview showed it,
  // without reading the file at all (here it does not even exist). Now a rule's Delete is refused in the
  // hold role as a set's is (plan-hold.ts ruleDeleteUnderRole), before any request; its create is not (no
  // plan holds a rule resource: documented, still done).
  it("a job holding to a plan deletes no IpPolicyRule (its create is still done: no plan holds one)", async () => {
    await withKey(emu.adminToken);
    p = emu.fixtures.ipPolicies[1];
    await cleanUp(p);
    fresh();
    const rule = (await serializedProvider("ip-policy-rule")).provider;
    const denyInputs = { ipPolicyId: p, cidr: "203.0.113.0/24", action: "deny", __urn: URN_B };
    const deny = await rule.create((await rule.check({}, denyInputs)).inputs);
    process.env.ACCESSCTL_PLAN_HOLD = "/nonexistent/reviewed-plan.json";
    const tried: string[] = [];
    let refusal = "";
    try {
      fresh();
      const allow = (await rule.check({}, { ipPolicyId: p, cidr: "0.0.0.0/0", action: "allow", __urn: URN_B })).inputs;
      await rule.create(allow).then(
        () => tried.push("created 0.0.0.0/0 allow"),
        () => undefined,
      );
      await rule.delete(deny.id, deny.outs).then(
        () => tried.push("deleted 203.0.113.0/24 deny"),
        (e: Error) => (refusal = e.message),
      );
    } finally {
      delete process.env.ACCESSCTL_PLAN_HOLD;
    }
    expect(tried).toEqual(["created 0.0.0.0/0 allow"]); // (fails before: the deny deleted too)
    expect(refusal.split("\n")).toHaveLength(1);
    const named = `delete IP policy rule ${deny.id}: ACCESSCTL_PLAN_HOLD (/nonexistent/reviewed-plan.json)`;
    expect(refusal).toContain(named);
    const live = ((await api().get("/ip_policy_rules")).body.ip_policy_rules as any[]).map((r) => r.id);
    expect(live).toContain(deny.id);
  });

  // A rule's texts as the service lists them go to the state as they are, and to a refresh's drift line
  // through scrub only (12-character windows), not renderMsg: a server (or a gateway that sees the
  // Authorization header) that puts the caller's key into a rule's description, in 11-character pieces
  // between words, has it printed and stored whole. (Here the emulator's admin API writes it: what such
  // a server lists.)
  it("a rule's description, the key in 11-character pieces: printed by the refresh, in the state", async () => {
    await withKey(emu.adminToken);
    fresh();
    p = emu.fixtures.ipPolicies[0];
    await cleanUp(p);
    const inputs = (await set.check({}, program("10.30.0.0/16"))).inputs;
    const made = await set.create(inputs);
    const key: string = emu.adminToken;
    const pieces = key.match(/.{1,11}/g)!;
    const description = pieces.join(" and ");
    const body = { ip_policy_id: p, cidr: "10.31.0.0/16", action: "allow", description };
    expect((await api().post("/ip_policy_rules", body)).status).toBe(201);
    fresh();
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: any, ...rest: any[]) => {
      written.push(String(chunk));
      return write(chunk, ...rest);
    }) as any;
    let state: string;
    try {
      state = JSON.stringify((await set.read(p, made.outs)).props);
    } finally {
      process.stderr.write = write;
    }
    // (the key's last piece, of 2 characters, is left out: a random id of the state may hold it)
    const shown = (t: string) => pieces.filter((piece) => piece.length === 11 && t.includes(piece)).length;
    expect([shown(written.join("")), shown(state)]).toEqual([0, 0]); // (fails before: every piece, in both)
    // The read says so in one line, and a fixed placeholder stands for the text (server-text.ts).
    const said = written
      .join("")
      .split("\n")
      .filter((l) => l.includes("returned a text containing"));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/^read IP policy rule set of ipp_\w+: the service returned a text containing credential /);
    expect(said[0]).toMatch(/\(description of ipr_\w+\)/);
    expect(state).toContain(JSON.stringify(compiled("provider/server-text.js").WITHHELD_TEXT));
  });

  // bindOwnMarkers (ip-policy-rule-set/apply.ts) signed, onto its id, every rule of the set's result whose
  // marker names the set and does not verify. A rule of the state that the insider changed by hand since
  // (the `up` leaves it "as it is", changedByHand) has the set's marker (now bound to another rule: it
  // was on 10.20.0.0/16): the set signed the insider's 0.0.0.0/0 allow as its own, with the team key.
  // Now only a rule as the state recorded it is bound (fails before: verified).
  it("the set's up does not sign a rule an insider moved to 0.0.0.0/0 (its marker bound to the old CIDR)", async () => {
    await withKey(emu.adminToken);
    fresh();
    p = emu.fixtures.ipPolicies[1];
    await cleanUp(p);
    const inputs = (await set.check({}, program("10.20.0.0/16"))).inputs;
    const made = await set.create(inputs);
    const ruleId = made.outs.rules["10.20.0.0/16"].id;
    // The insider, on the console: the rule's CIDR only (its metadata, the set's marker, left as it is).
    expect((await api().patch(`/ip_policy_rules/${ruleId}`, { cidr: "0.0.0.0/0" })).status).toBe(200);
    fresh(); // the next `up` (no refresh), program unchanged
    const next = (await set.check(made.outs, program("10.20.0.0/16"))).inputs;
    await set.update(p, made.outs, next).catch(() => undefined);
    const now = (await api().get(`/ip_policy_rules/${ruleId}`)).body;
    const marker = ownership.readMarker(now.metadata);
    const on = ownership.ruleIdentity(p, "0.0.0.0/0", "allow");
    const rule = { id: ruleId, createdAt: now.created_at };
    const verdict = ownership.markerVerdict(TEAM_KEY, marker, on, rule, Date.now());
    expect(verdict.kind).not.toBe("verified");
  });
});

// An API key create whose answer was lost deletes "the key that names this create" (api-key.ts
// deleteOwnLostKey): the last key listed whose marker holds its attempt. The insider, watching the
// console, copies that attempt into the metadata of another key (one a service of theirs uses, or a
// colleague's): the pipeline deletes it. Now a key is deleted only when exactly one names the attempt.
describe("a lost API key create and an attempt two keys name", () => {
  it("deletes neither key, and names both", async () => {
    const deleted: string[] = [];
    let marker = "";
    let madeAt = "";
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        const json = (status: number, v: unknown) =>
          res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(v));
        if (req.method === "POST") {
          marker = JSON.parse(body).metadata;
          madeAt = new Date().toISOString();
          const details = { operation_id: "op_g" };
          const lost = { error_code: "ERR_GATEWAY", status_code: 502, msg: "upstream", details };
          return json(502, lost);
        }
        if (req.method === "DELETE") return (deleted.push(req.url!), res.writeHead(204).end());
        const key = (id: string, created_at: string) => ({
          id,
          uri: "u",
          created_at,
          token: null,
          owner_id: "usr_a",
          description: "ci",
          metadata: marker,
        });
        const keys = [key("ak_lost", madeAt), key("ak_victim", "2026-01-01T00:00:00.000Z")];
        json(200, { keys, uri: "u", next_page_uri: null });
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      await config.configure(
        configureRequest({
          "accessctl:apiUrl": `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          "accessctl:apiKey": "k".repeat(20),
          "accessctl:maxRequestsPerMinute": "100000",
        }),
      );
      newRun();
      const key = (await serializedProvider("api-key")).provider;
      const err = await key.create({ description: "ci", ownerId: "usr_a" }).catch((e: Error) => e);
      expect(deleted).toEqual([]); // (fails before: ["/api_keys/ak_victim"])
      expect(err.message).toContain("ak_lost");
      expect(err.message).toContain("ak_victim");
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }, 60_000);
});
