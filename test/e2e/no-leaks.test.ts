// Secrets in plain text: nowhere that our code writes, and nowhere in the state, its backups or the
// emulator's log, even with Pulumi's most verbose logging and a gRPC dump. Pulumi's own debug
// channels are the exception, and this test pins down exactly what they show (see
// docs/design/reliability.md): the gRPC dump carries decrypted stack config (so an API key given as
// `accessctl:apiKey`) and every token, and @pulumi/pulumi's debug log prints RegisterResource
// answers, secret outputs included. Neither can be changed by a provider.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { RunningEmulator, startEmulator } from "../helpers/emulator";
import { startFaultProxy } from "../helpers/fault-proxy";
import { traces } from "../helpers/leaks";
import { packedPlugin, RunResult, Spec, testStack } from "../helpers/stack";

let emu: RunningEmulator;
let dumpDir: string;

beforeAll(async () => {
  emu = await startEmulator();
  dumpDir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-leaks-"));
});
afterAll(async () => {
  await emu?.stop();
  fs.rmSync(dumpDir, { recursive: true, force: true });
});

/** Runs up, preview --refresh and destroy; returns what each place holds, and the tokens made. */
async function runAll(credentials: "config" | "env", verbose: boolean) {
  const stack = testStack({
    project: inject("e2e"),
    emulator: emu,
    name: `leaks-${credentials}-${verbose ? "v11" : "quiet"}`,
    credentials,
  });
  const grpcDump = path.join(dumpDir, `grpc-${credentials}-${verbose}.log`);
  const extra = verbose ? { verbose: 11, env: { PULUMI_DEBUG_GRPC: grpcDump } } : {};
  const spec: Spec = {
    keys: { a: { description: "one" }, b: { description: "two" } },
    rules: { r: { ipPolicyId: emu.fixtures.ipPolicies[0], cidr: "192.0.2.0/24", action: "allow" } },
  };
  const runs: RunResult[] = [];
  try {
    for (const [op, more] of [
      ["up", {}],
      ["preview", { refresh: true }],
      ["destroy", {}],
    ] as const) {
      const result = await stack.run(op, spec, { ...extra, ...more });
      if (!result.ok) throw new Error(`${op} failed: ${result.error}\n${result.output.slice(-3000)}`);
      runs.push(result);
    }
    const tokens = ["a", "b"].map((k) => runs[0].outputs![`token_${k}`].value as string);
    expect(tokens.every((t) => t.length > 20)).toBe(true);
    const places: Record<string, string> = {
      // What Pulumi printed, and the stack outputs with the secret values (returned on purpose) left out.
      output: runs
        .map((r) => r.output + JSON.stringify(r.outputs ?? {}).replace(/"value":"[^"]*","secret":true/g, ""))
        .join("\n"),
      state: stack.backendText(), // checkpoint, its backups and history
      emulatorLog: emu.stderr(),
      ...(verbose ? { grpcDump: fs.readFileSync(grpcDump, "utf8") } : {}),
    };
    return { places, tokens };
  } finally {
    stack.cleanup();
  }
}

function where(places: Record<string, string>, secret: string): string[] {
  return Object.entries(places)
    .filter(([, text]) => text.includes(secret))
    .map(([place]) => place);
}

// Lines that Pulumi itself writes at -v=9 and above with property values in them: the engine's
// marshaling traces, and @pulumi/pulumi's "RPC finished" debug lines (printed across lines).
const PULUMI_DEBUG_LINE = /(Marshaling|Unmarshaling) property for RPC|RPC finished: |eventSink::Debug|^\s*,createdAt,/;

/** Every line of the output holding the secret is one of Pulumi's own debug lines. */
function expectOnlyInPulumiDebugLines(output: string, secret: string) {
  const lines = output.split("\n").filter((l) => l.includes(secret));
  expect(lines.length).toBeGreaterThan(0);
  for (const line of lines) expect(line.slice(0, 200)).toMatch(PULUMI_DEBUG_LINE);
}

describe("at normal verbosity", () => {
  it("no API key and no token in the output, the state or the emulator's log", async () => {
    const { places, tokens } = await runAll("config", false);
    for (const secret of [emu.adminToken, ...tokens]) expect(where(places, secret)).toEqual([]);
  });
});

describe("at -v=11 with PULUMI_DEBUG_GRPC", () => {
  it("with credentials from the environment: the API key appears nowhere; tokens only in Pulumi's own traces", async () => {
    const { places, tokens } = await runAll("env", true);
    expect(places.output.length).toBeGreaterThan(100_000); // the verbose logs were captured
    expect(where(places, emu.adminToken)).toEqual([]);
    for (const token of tokens) {
      expect(where(places, token)).toEqual(["output", "grpcDump"]);
      expectOnlyInPulumiDebugLines(places.output, token);
    }
  });

  it("with credentials in stack config: the API key appears only in Pulumi's traces of Configure and in the gRPC dump", async () => {
    const { places, tokens } = await runAll("config", true);
    expect(where(places, emu.adminToken)).toEqual(["output", "grpcDump"]);
    expectOnlyInPulumiDebugLines(places.output, emu.adminToken);
    for (const token of tokens) expectOnlyInPulumiDebugLines(places.output, token);
  });
});

// A gateway that echoes the key it was sent in its error answers, cut, wrapped, encoded (base64,
// base64url, hex, %xx), escaped, quoted and split (each failed create gets the next shape): our errors,
// messages and -v=9 logs hold no decodable trace of it (test/helpers/leaks.ts: 12 characters of the
// key as they stand, joined across separators, or in a decoding of the base64- and hex-looking runs),
// on either host (provider/http/redact.ts scrub); nor does the state or any file under PULUMI_HOME or
// the run's TMPDIR. The key comes from ACCESSCTL_API_KEY, so that Pulumi's own traces (which print
// Configure's inputs) cannot hold it.
describe("a gateway that echoes the API key in its error answers", () => {
  const cleanups: (() => unknown)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  /** Every file under `dir` (but Pulumi's plugins: our own package's code), concatenated. */
  function filesUnder(dir: string): string {
    const texts: string[] = [];
    const walk = (d: string) => {
      for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, entry.name);
        if (entry.isDirectory() && !(d === dir && entry.name === "plugins")) walk(p);
        else if (entry.isFile()) texts.push(`${p}\n${fs.readFileSync(p, "latin1")}`);
      }
    };
    walk(dir);
    return texts.join("\n");
  }

  /** The echoes: the key in each shape (issue 39, reproduction 3: base64 wrapped at 32, base64url split by / at 39). */
  function shapesOf(key: string): string[] {
    const after = key.slice(key.indexOf("_") + 1);
    const split = (s: string, width: number, sep = "\n") => s.match(new RegExp(`.{1,${width}}`, "gs"))!.join(sep);
    const percent = (s: string) => [...s].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("");
    const b64 = (s: string) => Buffer.from(s).toString("base64");
    return [
      `invalid key ${key.slice(0, 20)}\n${key.slice(20)}`, // split over two lines at its 20th character
      `secret part ${after} refused`, // its part after the first _
      `"Bearer" "${key.slice(0, 30)}" + "${key.slice(30)}"`, // quoted in pieces
      `api_key=${percent(key)}`, // URL-encoded
      `seen ${[...key].map((c) => `\\u00${c.charCodeAt(0).toString(16)}`).join("")}`, // JSON-escaped
      `<pre>\n${split(key, 16)}\n</pre>`, // wrapped
      `${key.toUpperCase()}`,
      `invalid credential:\n${split(b64(key), 32)}`, // base64 wrapped every 32 characters
      `seen ${split(Buffer.from(key).toString("base64url"), 39, "/")} here`, // base64url split by / every 39
      `key ${split(Buffer.from(key).toString("hex").toUpperCase(), 16, "-")}`, // hex, split by -
      `Authorization: ${split(b64(`Bearer ${key}`), 8, " ")}`, // base64 at another alignment, split by spaces
      `q=${split(percent(b64(key)), 20)}`, // %xx-encoded base64, split inside its escapes
      ...rendered(key),
    ];
  }

  /**
   * The insider's two shapes that pass scrub's window of 12 (issue 39; provider/http/render-msg.ts shows words,
   * not them): the key as decimal byte codes, and in 11-character pieces between words.
   */
  const rendered = (key: string) => [
    `invalid key ${[...Buffer.from(key)].map((b) => b.toString(10)).join(" ")}`,
    `seen ${key.match(/.{1,11}/g)!.join(" and ")} here`,
  ];

  /**
   * Where `text` holds 8 letters and digits of `key` in a row (all else taken out), or 4 of its codes in a row
   * (each within 8 characters of the last: -v=9 logs hold many numbers).
   */
  function shortTraces(text: string, key: string): string[] {
    const found: string[] = [];
    const letters = key.replace(/[^A-Za-z0-9]/g, "");
    const joined = text.replace(/[^A-Za-z0-9]/g, "");
    for (let i = 0; i + 8 <= letters.length; i++) {
      if (joined.includes(letters.slice(i, i + 8))) found.push(letters.slice(i, i + 8));
    }
    const codes = `,${[...Buffer.from(key)].join(",")},`;
    for (const m of text.matchAll(/(?<![0-9])(?=([0-9]{2,3}(?:[^0-9]{1,8}[0-9]{2,3}){3})(?![0-9]))/g)) {
      const numbers = m[1].match(/[0-9]+/g)!;
      if (codes.includes(`,${numbers.join(",")},`)) found.push(`codes ${numbers}`);
    }
    return found;
  }

  for (const host of ["dynamic", "plugin"] as const) {
    it(`${host}: no decodable trace of the key in the output, -v=9 logs, state or files written`, async () => {
      const proxy = await startFaultProxy(emu.url);
      cleanups.push(() => proxy.close());
      const key = emu.adminToken;
      const shapes = shapesOf(key);
      // Each shape as the service's error (its msg); every third time also a page that is not (never shown).
      let n = 0;
      const echo = () => {
        const shape = shapes[n++ % shapes.length];
        return n % 3 ? JSON.stringify({ error_code: "ERR_GATEWAY", msg: shape }) : `<html>${shape}</html>`;
      };
      proxy.fail({ method: "POST", path: /^\/api_keys$/, when: "before", status: 400, times: 5, answer: echo });
      proxy.fail({ method: "POST", path: /^\/ip_policy_rules$/, when: "before", status: 500, times: 9, answer: echo });
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-leaks-tmp-"));
      cleanups.push(() => fs.rmSync(tmp, { recursive: true, force: true }));
      const dynamic = { project: inject("e2e"), home: { env: { PULUMI_HOME: tmp } } };
      const { project, home } = host === "plugin" ? packedPlugin(cleanups) : dynamic;
      const pulumiHome = home.env.PULUMI_HOME;
      const env = { ...home.env, TMPDIR: tmp };
      const emulator = { ...emu, url: proxy.url };
      const stack = testStack({ project, emulator, name: `echo-${host}`, credentials: "env", env });
      cleanups.push(() => stack.cleanup());
      const policy = emu.fixtures.ipPolicies[1];
      const spec: Spec = {
        plugin: host === "plugin",
        keys: Object.fromEntries([1, 2, 3, 4, 5].map((i) => [`k${i}`, { description: `echo ${i}` }])),
        rules: Object.fromEntries(
          [1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => [
            `r${i}`,
            { ipPolicyId: policy, cidr: `192.0.2.${i}`, action: "allow" },
          ]),
        ),
      };
      // Every create is tried, so that every shape is echoed (Pulumi starts no step after a failure otherwise).
      const result = await stack.run("up", spec, { verbose: 9, env: { PULUMI_CONTINUE_ON_ERROR: "true" } });
      expect(result.ok).toBe(false);
      expect(proxy.failed.length).toBe(shapes.length); // each shape was echoed
      expect(result.output.length).toBeGreaterThan(100_000); // the -v=9 logs were captured
      // The check is real: it reads the key in each echo as the gateway sent it.
      for (const shape of shapes.slice(0, -2)) expect(traces(shape, key).length, shape).toBeGreaterThan(0);
      // The last two (each sent as the service's error: echoes 13 and 14): read by a window of 8, or as codes.
      for (const shape of rendered(key)) expect(shortTraces(shape, key).length, shape).toBeGreaterThan(0);
      const files = { home: filesUnder(pulumiHome), tmp: host === "plugin" ? filesUnder(tmp) : "" };
      const places = { output: result.output, state: stack.backendText(), ...files };
      for (const [place, text] of Object.entries(places)) expect(traces(text, key), place).toEqual([]);
      for (const [place, text] of Object.entries(places)) expect(shortTraces(text, key), place).toEqual([]);
      expect(result.output).toMatch(/HTTP (400|500) ERR_GATEWAY: invalid key (\d+ )*\[…\]/);
      expect(result.output).toMatch(/HTTP (400|500) ERR_GATEWAY: seen [^\n]*\[…\] and [^\n]* here/);
      expect(result.output).toMatch(/create API key: HTTP 400 ERR_GATEWAY: /);
      expect(result.output).toMatch(/create IP policy rule 192\.0\.2\.\d(\/32)?: HTTP 500 ERR_GATEWAY: /);
      expect(result.output).toMatch(
        /HTTP (400|500): an answer that is not the service's error \(\d+ bytes, not shown\)/,
      );
      expect(result.output).toContain("[redacted]");
    });
  }
});
