// No run of 12 characters of a credential the provider holds leaves it, whatever a server echoes:
// the API key, each profile's key, ACCESSCTL_*API_KEY, the tokens of keys created in the process,
// whole, cut, wrapped, URL-encoded, escaped or quoted (provider/http/redact.ts scrub), in errors
// (plainError, setMessage, the client's), in messages (report, stderr) and in the plugin's errors.
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { REPO } from "../helpers/emulator";
import { compiled, configureRequest } from "../helpers/provider";

const redact = compiled("provider/http/redact.js");
const errors = compiled("provider/errors.js");
const engine = compiled("provider/engine.js");
const client = compiled("provider/http/api.js");
const config = compiled("provider/config.js");
const apiKey = compiled("provider/api-key.js");

/** Shaped as the emulator makes them: 24 characters of the key's id, "_", 32 random ones (57 in all). */
const random = (n: number, seed: number) => {
  const abc = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
  let out = "";
  for (let i = 0, x = seed; i < n; i++) out += abc[((x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 16) % 64];
  return out;
};
const KEY = `${random(24, 1).replace(/[-_]/g, "x")}_${random(32, 2)}`;
const PROFILE_KEY = `${random(24, 3).replace(/[-_]/g, "y")}_${random(32, 4)}`;

/** Every run of 12 characters of `secret` that `text` holds, in any case. */
function leaks(text: string, secret: string): string[] {
  const found: string[] = [];
  for (let i = 0; i + 12 <= secret.length; i++) {
    const run = secret.slice(i, i + 12);
    if (text.includes(run) || text.toLowerCase().includes(run.toLowerCase())) found.push(run);
  }
  return found;
}

const wrap = (s: string, width: number, sep = "\n") => s.match(new RegExp(`.{1,${width}}`, "gs"))!.join(sep);
const percentAll = (s: string) =>
  [...s].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`).join("");
const unicodeEscaped = (s: string) => [...s].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
const after = KEY.slice(KEY.indexOf("_") + 1); // the 32 random characters

/** The shapes an echo takes: name → text holding the key (or a part of it). */
const SHAPES: [string, string][] = [
  ["whole", `invalid API key ${KEY} for this account`],
  ["split over two lines at its 20th character", `invalid API key ${KEY.slice(0, 20)}\n${KEY.slice(20)}`],
  ["split at its 20th character, CRLF and indent", `key: ${KEY.slice(0, 20)}\r\n    ${KEY.slice(20)}`],
  ["the part after the first _ alone", `secret part <${after}> refused`],
  ["a run of 12 characters", `saw <${KEY.slice(30, 42)}> only`],
  ["a run of 12 characters of the part before _", `saw <${KEY.slice(3, 15)}>`],
  ["in another case", `INVALID ${KEY.toUpperCase()}`],
  ["URL-encoded with encodeURIComponent", `GET /x?api_key=${encodeURIComponent(KEY)}&a=1`],
  ["every character %xx-encoded", `q=${percentAll(KEY)}`],
  ["double URL-encoded", `q=${percentAll(KEY).replace(/%/g, "%25")}`],
  ["URL-encoded, split at its 20th character", `${percentAll(KEY.slice(0, 20))}%0A${percentAll(KEY.slice(20))}`],
  ["JSON-escaped (\\u) in a JSON body", JSON.stringify({ msg: unicodeEscaped(KEY) })],
  ["JSON-escaped twice", JSON.stringify(JSON.stringify({ key: KEY.slice(0, 20) + "\n" + KEY.slice(20) }))],
  ["backslash-escaped (\\xHH)", [...KEY].map((c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("")],
  ["HTML entities", [...KEY].map((c) => `&#${c.charCodeAt(0)};`).join("")],
  ["double-quoted", `"key": "${KEY}"`],
  ["quoted in two pieces", `'${KEY.slice(0, 20)}' '${KEY.slice(20)}'`],
  ["concatenated", `"${KEY.slice(0, 20)}" +\n  "${KEY.slice(20)}"`],
  ["with zero-width spaces", [...KEY].join("\u200b")],
  ["JSON escape \\n at its 20th character", `{"msg":"${KEY.slice(0, 20)}\\n${KEY.slice(20)}"}`],
  ...[5, 8, 13, 16, 19, 31, 40].map((w): [string, string] => [
    `wrapped at ${w} characters`,
    `echo:\n${wrap(KEY, w)}\nend`,
  ]),
  ...[7, 20].map((w): [string, string] => [`wrapped at ${w}, quoted lines`, wrap(KEY, w, "\n> ")]),
];

describe("scrub: every run of 12 characters of a held credential, in any shape", () => {
  redact.holdSecret(KEY);
  for (const [name, text] of SHAPES) {
    it(name, () => {
      const out = redact.scrub(text);
      expect(leaks(out, KEY)).toEqual([]);
      expect(leaks(out, after)).toEqual([]);
      expect(out).toContain("[redacted]");
      // Through what an error quotes of a server, and an error's message, the same.
      expect(leaks(redact.quote(text, []), KEY)).toEqual([]);
      expect(leaks(errors.plainError(text).message, KEY)).toEqual([]);
    });
  }

  it("a run of 11 characters is left as it is, and so is text around a redacted run", () => {
    expect(redact.scrub(`saw <${KEY.slice(30, 41)}> only`)).toBe(`saw <${KEY.slice(30, 41)}> only`);
    expect(redact.scrub(`before ${KEY} after`)).toBe("before [redacted] after");
    expect(redact.scrub(`a ${KEY.slice(0, 20)}\n${KEY.slice(20)} b`)).toBe("a [redacted] b");
    expect(redact.scrub("nothing secret here: ak_123, ipr_456")).toBe("nothing secret here: ak_123, ipr_456");
  });

  it("before cutting: a key at the limit of what an error quotes leaves nothing of 12 characters", () => {
    for (let at = 260; at <= 300; at += 4) {
      const out = redact.quote(`${"x ".repeat(at / 2)}${wrap(KEY, 20)}`, []);
      expect(out.length).toBeLessThanOrEqual(301);
      expect(leaks(out, KEY)).toEqual([]);
    }
  });

  it("8 MiB of text: the key at its end is taken, nothing else", () => {
    const text = `${"0123456789abcdef ".repeat(1 << 19)}${KEY}`;
    expect(redact.scrub(text)).toBe(`${"0123456789abcdef ".repeat(1 << 19)}[redacted]`);
  });
});

describe("what the process holds", () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it("the stack config's key and each profile's, once configured (used or not)", async () => {
    const own = `cfg${random(40, 5)}`;
    await config.configure(
      configureRequest({
        "accessctl:apiUrl": "http://127.0.0.1:1",
        "accessctl:apiKey": own,
        "accessctl:profiles": JSON.stringify({ staging: { apiUrl: "http://127.0.0.1:2", apiKey: PROFILE_KEY } }),
      }),
    );
    for (const secret of [own, PROFILE_KEY]) expect(leaks(redact.scrub(`x ${wrap(secret, 20)} y`), secret)).toEqual([]);
  });

  it("ACCESSCTL_API_KEY and ACCESSCTL_<PROFILE>_API_KEY, from the environment", () => {
    const envKey = `env${random(40, 6)}`;
    const profileEnvKey = `penv${random(40, 7)}`;
    process.env.ACCESSCTL_API_KEY = envKey;
    process.env.ACCESSCTL_OTHER_TEAM_API_KEY = profileEnvKey;
    for (const secret of [envKey, profileEnvKey])
      expect(leaks(redact.scrub(`[${secret.slice(5, 17)}]`), secret)).toEqual([]);
  });

  it("the token of a key created in this process, its id (which the token begins with) aside", async () => {
    const id = `ak_${random(24, 8).replace(/[-_]/g, "z")}`;
    const token = `${id.slice(3)}_${random(32, 9)}`;
    const server = await serve((req, res) => {
      if (req.method === "POST")
        return json(res, 201, {
          id,
          uri: `/api_keys/${id}`,
          created_at: "2026-01-01T00:00:00Z",
          owner_id: "usr_1",
          description: "",
          metadata: "",
          token,
        });
      json(res, 500, {
        error_code: "ERR_INTERNAL",
        msg: `token ${token.slice(0, 20)}\n${token.slice(20)} / ${token.slice(token.indexOf("_") + 1)} of ${id}`,
      });
    });
    await useApi(server.url, `k${random(30, 10)}`);
    const created = await apiKey.create({ description: "ci" });
    expect(created.outs.token).toBe(token);
    const err = await apiKey.update(id, created.outs, { description: "changed" }).catch((e: Error) => e);
    expect(err.message).toMatch(/^update API key ak_\w+: HTTP 500 ERR_INTERNAL: /);
    expect(leaks(err.message.split(id).join(""), token.slice(23))).toEqual([]); // nothing with a character of its secret part
    expect(err.message).toContain(`of ${id}`); // its id is no secret
  });
});

describe("every way out", () => {
  const held = `way${random(45, 11)}`;

  it("a server's error answer, whatever it echoes, and the attempts' errors", async () => {
    const statuses = [400, 401, 403, 404, 500, 502];
    for (const [i, [name, shape]] of SHAPES.entries()) {
      const status = statuses[i % statuses.length];
      const text = shape.split(KEY).join(held).split(after).join(held.slice(10));
      const server = await serve((_req, res) =>
        json(res, status, i % 2 ? { error_code: "ERR_X", msg: text } : `{"not json": ${text}`),
      );
      await useApi(server.url, held, "0");
      const err = await client
        .api("GET", "/ip_policy_rules/ipr_1", { what: "read IP policy rule ipr_1" })
        .catch((e: Error) => e);
      expect(err.message, name).toMatch(/HTTP \d{3}/);
      expect(leaks(err.message, held), name).toEqual([]);
    }
    const page = await serve((_req, res) => {
      res.writeHead(503, { "content-type": "text/html" });
      res.end(`<pre>${wrap(held, 20)}</pre>`);
    });
    await useApi(page.url, held, "0");
    const err = await client.api("GET", "/api_keys", { what: "list API keys" }).catch((e: Error) => e);
    expect(leaks(err.message, held)).toEqual([]);
  });

  it("report(), on stderr, and the host's log of an error of any other kind", () => {
    const written: string[] = [];
    const write = process.stderr.write;
    const error = console.error;
    console.error = (...args: unknown[]) => void written.push(args.map(String).join(" "));
    // (configure installed the hook over vitest's console.error already: install it again over ours)
    delete (globalThis as unknown as Record<symbol, Record<string, unknown>>)[Symbol.for("@accessctl/pulumi/state/v1")][
      "quiet-host-errors"
    ];
    errors.quietHostErrorLog();
    process.stderr.write = ((chunk: string) => written.push(String(chunk))) as typeof process.stderr.write;
    try {
      engine.report(undefined, `plan: ${wrap(held, 20)}`);
      engine.toStderr(`accessctl: ${held}\n`);
      const foreign = new TypeError(`bad ${held}`);
      console.error(`${foreign}: ${foreign.stack}`);
      console.error(foreign);
    } finally {
      process.stderr.write = write;
      console.error = error;
    }
    expect(written.length).toBe(4);
    for (const line of written) expect(leaks(line, held)).toEqual([]);
  });

  it("setMessage", () => {
    const err = errors.setMessage(new Error("x"), `y ${percentAll(held)}`);
    expect(leaks(err.message, held)).toEqual([]);
    expect(leaks(err.stack, held)).toEqual([]);
  });

  it("the plugin's error of any kind (unary)", async () => {
    const { providerService } = compiled("plugin/server.js");
    const provproto = compiled("../node_modules/@pulumi/pulumi/proto/provider_pb.js");
    const schema = fs.readFileSync(path.join(REPO, "schema/schema.json"), "utf8");
    const service = providerService({ version: "0.0.0", schema });
    const details = await new Promise<string>((resolve) =>
      service.invoke(
        { request: new provproto.InvokeRequest().setTok(`accessctl:index:${held}`) },
        (e: { details: string }) => resolve(e.details),
      ),
    );
    expect(details).toMatch(/^unknown function accessctl:index:\[redacted\]/);
    expect(leaks(details, held)).toEqual([]);
  });
});

// access.ts is pure and loads no I/O (not errors.ts, which loads http/redact.ts): its one error names a CIDR text
// its caller gave, and the provider's callers (set, rule, export) hand it only CIDRs the service or check accepted.
const PURE = [path.join("provider", "errors.ts"), path.join("provider", "access.ts")];

describe("provider/ makes every error through plainError (which scrubs it)", () => {
  it("no `new Error(` outside provider/errors.ts (and the pure access.ts)", () => {
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(p);
        else if (
          p.endsWith(".ts") &&
          !PURE.some((f) => p.endsWith(f)) &&
          /new (Type|Range)?Error\(/.test(fs.readFileSync(p, "utf8"))
        )
          offenders.push(path.relative(REPO, p));
      }
    };
    walk(path.join(REPO, "provider"));
    expect(offenders).toEqual([]);
  });
});

// A small server on loopback.
const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

async function serve(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => handler(req, res));
  });
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(typeof body === "string" ? body : JSON.stringify(body));
};

function useApi(apiUrl: string, key: string, maxRetries = "8") {
  return config.configure(
    configureRequest({
      "accessctl:apiUrl": apiUrl,
      "accessctl:apiKey": key,
      "accessctl:maxRequestsPerMinute": "100000",
      "accessctl:maxRetries": maxRetries,
    }),
  );
}
