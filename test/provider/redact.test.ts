// No credential in any encoding (issue 39): a key echoed by a server base64-, base64url- or
// hex-encoded, %xx-encoded, in any case, split anywhere (every 8 to 64 characters, by newline, space,
// `/`, `-`), never leaves scrub() with a decodable trace of it (test/helpers/leaks.ts decodes what is
// left as a reader would); the client shows of a server's error answer only its known fields, each
// checked and bounded. The property is seeded afresh each run (REDACT_SEED replays one; the seed is
// printed).
import * as http from "node:http";
import { AddressInfo } from "node:net";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { traces } from "../helpers/leaks";
import { compiled, configureRequest } from "../helpers/provider";

const redact = compiled("provider/http/redact.js");
const errors = compiled("provider/errors.js");
const client = compiled("provider/http/api.js");
const config = compiled("provider/config.js");

const SEED = Number(process.env.REDACT_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.REDACT_RUNS ?? 1500);

const ID_CHARS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const SECRET_CHARS = `${ID_CHARS}-_`;
/** Shaped as the emulator makes them: 24 characters of the key's id, "_", 32 random ones (57 in all). */
const keyOf = (seed: number) => {
  let x = seed;
  const pick = (abc: string) => abc[((x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 16) % abc.length];
  const run = (n: number, abc: string) => Array.from({ length: n }, () => pick(abc)).join("");
  return `${run(24, ID_CHARS)}_${run(32, SECRET_CHARS)}`;
};
const KEY = keyOf(39);

const base64 = (s: string) => Buffer.from(s).toString("base64");
const base64url = (s: string) => Buffer.from(s).toString("base64url");
const hex = (s: string) => Buffer.from(s).toString("hex");
const percent = (s: string) => [...s].map((c) => `%${hex(c).toUpperCase()}`).join("");
const split = (s: string, every: number, sep: string) => s.match(new RegExp(`.{1,${every}}`, "gs"))!.join(sep);

/** An encoding of a text (what a server that echoes the key may do to it before it prints it). */
const ENCODINGS: Record<string, (s: string) => string> = {
  raw: (s) => s,
  "raw, upper case": (s) => s.toUpperCase(),
  "raw, lower case": (s) => s.toLowerCase(),
  base64,
  base64url,
  "base64 of it in upper case": (s) => base64(s.toUpperCase()),
  "base64url of it in lower case": (s) => base64url(s.toLowerCase()),
  hex,
  "hex, upper case": (s) => hex(s).toUpperCase(),
  percent,
  "percent, lower case": (s) => percent(s).toLowerCase(),
  "percent of its base64": (s) => percent(base64(s)),
};
const SEPARATORS = ["\n", " ", "/", "-", "\r\n  ", '" "'];

describe("reproduction 3 (issue 39): the key base64-encoded and wrapped", () => {
  redact.holdSecret(KEY);
  const shapes: [string, string][] = [
    ["base64 wrapped every 32 characters", `invalid credential:\n${split(base64(KEY), 32, "\n")}\nend`],
    ["base64url split by / every 39 characters", `seen ${split(base64url(KEY), 39, "/")} here`],
  ];
  for (const [name, text] of shapes) {
    it(`${name}: its pieces decode to the key before, to nothing of it after scrub`, () => {
      expect(traces(text, KEY).length).toBeGreaterThan(0); // the check reads the key in the pieces
      const out = redact.scrub(text);
      expect(traces(out, KEY)).toEqual([]);
      expect(out).toContain("[redacted]");
      expect(traces(errors.plainError(`create API key: ${text}`).message, KEY)).toEqual([]);
      expect(traces(redact.quote(text, []), KEY)).toEqual([]);
    });
  }

  it("around a redacted run, the text stays as it was", () => {
    const wrapped = `invalid credential:\n${split(base64(KEY), 32, "\n")}\nend`;
    expect(redact.scrub(wrapped)).toBe("invalid credential:\n[redacted]\nend");
    expect(redact.scrub(`seen ${split(base64url(KEY), 39, "/")} here`)).toBe("seen [redacted] here");
    expect(redact.scrub(`a ${hex(KEY)} b`)).toBe("a [redacted] b");
    expect(redact.scrub(`api_key=${percent(base64(KEY))}&x=1`)).toBe("api_key=[redacted]&x=1");
    const other = `other ${base64("something else entirely, of 57 characters or so......")} ak_123`;
    expect(redact.scrub(other)).toBe(other);
  });
});

describe("the key in each encoding, split every 8 to 64 characters by each separator, never survives scrub", () => {
  it(`property (seed ${SEED}, ${RUNS} runs)`, () => {
    console.log(`redact property: REDACT_SEED=${SEED}`);
    const held = new Set<number>();
    const shape = fc.record({
      keySeed: fc.integer({ min: 1, max: 64 }), // (64 keys held at most: a process holds a few)
      encoding: fc.constantFrom(...Object.keys(ENCODINGS)),
      // What the server put before the key inside the encoded text: every alignment of base64 and hex.
      inside: fc.constantFrom("", "k", "ke", "key: ", "Bearer "),
      every: fc.integer({ min: 8, max: 64 }),
      separator: fc.constantFrom(...SEPARATORS),
      before: fc.constantFrom("error: ", "HTTP 401 ", "<pre>", '{"msg":"'),
    });
    fc.assert(
      fc.property(shape, ({ keySeed, encoding, inside, every, separator, before }) => {
        const key = keyOf(keySeed);
        if (!held.has(keySeed)) redact.holdSecret(key);
        held.add(keySeed);
        const text = `${before}${split(ENCODINGS[encoding](`${inside}${key}`), every, separator)} end`;
        expect(traces(text, key).length).toBeGreaterThan(0); // the check is real: it reads the key in the text
        const out = redact.scrub(text);
        expect(traces(out, key)).toEqual([]);
        expect(out.startsWith(before) && out.endsWith(" end")).toBe(true); // and nothing but the run is taken
        expect(traces(redact.quote(text, []), key)).toEqual([]);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });
});

describe("scrub stays fast and takes nothing else", () => {
  it("8 MiB of text with 20 keys held: only the key's run is taken (its time is printed; speed is the bench's)", () => {
    for (let i = 0; i < 20; i++) redact.holdSecret(keyOf(1000 + i));
    const text = `${"0123456789abcdef QUJDREVGR0hJSktMTU5PUFFS ".repeat(200_000)}${split(base64(KEY), 32, "\n")}`;
    const started = performance.now();
    const out = redact.scrub(text);
    console.log(`scrub: ${(text.length / 2 ** 20).toFixed(1)} MiB in ${(performance.now() - started).toFixed(0)} ms`);
    expect(out.endsWith("[redacted]")).toBe(true);
    expect(out.length).toBe(text.length - split(base64(KEY), 32, "\n").length + "[redacted]".length);
  });

  it("ordinary text, ids, digests and other base64 are left as they are", () => {
    const texts = [
      "nothing secret here: ak_123, ipr_456, op_0123456789abcdef01234567",
      `sha256:${"ab12".repeat(16)} ${base64("an unrelated payload of some length, not a key at all")}`,
      "IP policy rule 10.0.0.0/8 allow: HTTP 404 ERR_NOT_FOUND: IP policy not found: ipp_x",
    ];
    for (const text of texts) expect(redact.scrub(text)).toBe(text);
  });
});

describe("a server's error answer: only its known fields, each checked and bounded", () => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });
  async function answering(status: number, type: string, body: string) {
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(status, { "content-type": type });
        res.end(body);
      });
    });
    closers.push(() => {
      server.closeAllConnections();
      server.close();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const settings = { "accessctl:apiUrl": url, "accessctl:apiKey": KEY, "accessctl:maxRetries": "0" };
    await config.configure(configureRequest(settings));
    return client.api("GET", "/api_keys/ak_1", { what: "read API key ak_1" }).catch((e: Error) => e);
  }

  it("a body that is not the service's error is not shown: its status and size are", async () => {
    const page = `<html><body><pre>\n${split(base64(KEY), 32, "\n")}\n</pre>proxy error</body></html>`;
    const err = await answering(502, "text/html", page);
    const shown = `an answer that is not the service's error (${page.length} bytes, not shown)`;
    expect(err.message).toBe(`read API key ak_1: HTTP 502: ${shown}`);
  });

  it("no field but error_code, msg and details.operation_id is shown; a malformed code or id is left out", async () => {
    const body = {
      error_code: `ERR ${base64url(KEY)}`,
      msg: `bad key ${split(hex(KEY), 16, "-")}`,
      details: { operation_id: "op_1", echo: KEY },
      debug: base64(KEY),
    };
    const err = await answering(400, "application/json", JSON.stringify(body));
    expect(err.message).toBe("read API key ak_1: HTTP 400: bad key [redacted] (operation op_1)");
    expect(traces(err.message, KEY)).toEqual([]);
  });

  it("a 2 MB msg is read up to its bound, redacted, then cut", async () => {
    const msg = `refused ${split(base64(KEY), 32, "\n")} ${"and so on ".repeat(200_000)}`;
    const err = await answering(500, "application/json", JSON.stringify({ error_code: "ERR_INTERNAL", msg }));
    expect(err.message).toMatch(/^read API key ak_1: HTTP 500 ERR_INTERNAL: refused \[redacted\] and so on .*…$/);
    expect(err.message.length).toBeLessThan(400);
  });
});
