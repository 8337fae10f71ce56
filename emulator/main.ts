#!/usr/bin/env node
// `npm run --silent emulator -- [flags]`: starts the emulator in the foreground. The first line on
// stdout is one JSON object (url, tokens, fixture ids); every later line goes to stderr.
import * as path from "node:path";
import { createEmulator } from "./server";
import { Store } from "./store";

const USAGE = `usage: emulator [--port N] [--host H] [--public-url URL] [--data FILE] [--rate-limit N/SECONDS|off]
                [--rate-limit-model window|bucket] [--latency MS] [--fail-rate F] [--admin-token T]
                [--seed-rules N]`;

interface Flags {
  port: number;
  host: string;
  publicUrl?: string;
  data?: string;
  rateLimit?: { requests: number; seconds: number };
  rateLimitModel: "window" | "bucket";
  latencyMs: number;
  failRate: number;
  adminToken?: string;
  seedRules: number;
}

function parseFlags(argv: string[], env: NodeJS.ProcessEnv): Flags {
  const flags: Flags = {
    port: 8787,
    host: "127.0.0.1",
    rateLimit: { requests: 120, seconds: 60 },
    rateLimitModel: "window",
    latencyMs: 0,
    failRate: 0,
    seedRules: 0,
  };
  flags.adminToken = env.ACCESSCTL_EMULATOR_ADMIN_TOKEN || undefined;
  for (let i = 0; i < argv.length; i++) {
    const [name, inline] = argv[i].split(/=(.*)/s, 2);
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${name} needs a value\n${USAGE}`);
      return v;
    };
    const number = (min: number, max: number): number => {
      const text = value();
      const n = Number(text);
      if (text.trim() === "" || !Number.isFinite(n) || n < min || n > max)
        throw new Error(`${name}: expected a number from ${min} to ${max}, got ${JSON.stringify(text)}`);
      return n;
    };
    switch (name) {
      case "--port":
        flags.port = number(0, 65535);
        break;
      case "--host":
        flags.host = value();
        break;
      case "--public-url":
        flags.publicUrl = publicUrl(value());
        break;
      case "--data":
        flags.data = path.resolve(value());
        break;
      case "--latency":
        flags.latencyMs = number(0, 60_000);
        break;
      case "--fail-rate":
        flags.failRate = number(0, 1);
        break;
      case "--admin-token":
        flags.adminToken = value();
        break;
      case "--seed-rules":
        flags.seedRules = number(0, 1_000_000);
        break;
      case "--rate-limit": {
        const text = value();
        const m = /^([1-9][0-9]*)\/([1-9][0-9]*)$/.exec(text);
        if (text === "off") flags.rateLimit = undefined;
        else if (m) flags.rateLimit = { requests: Number(m[1]), seconds: Number(m[2]) };
        else throw new Error(`--rate-limit: expected N/SECONDS (e.g. 120/60) or off, got ${JSON.stringify(text)}`);
        break;
      }
      case "--rate-limit-model": {
        const text = value();
        if (text !== "window" && text !== "bucket")
          throw new Error(`--rate-limit-model: expected window or bucket, got ${JSON.stringify(text)}`);
        flags.rateLimitModel = text;
        break;
      }
      case "--help":
      case "-h":
        throw new Error(USAGE);
      default:
        throw new Error(`unknown flag ${name}\n${USAGE}`);
    }
  }
  if (flags.adminToken !== undefined && !/^[\x21-\x7e]{16,}$/.test(flags.adminToken)) {
    throw new Error("--admin-token: expected at least 16 printable characters without spaces");
  }
  return flags;
}

/** The scheme, host, port (and path prefix) the links in answers start with. */
function publicUrl(text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (!url || !/^https?:$/.test(url.protocol) || url.search || url.hash || url.username || url.password) {
    throw new Error(
      `--public-url: expected an http:// or https:// URL without query, e.g. https://emulator.example:8443, got ` +
        `${JSON.stringify(text)}`,
    );
  }
  return url.href.replace(/\/$/, "");
}

async function main(): Promise<void> {
  let flags: Flags;
  try {
    flags = parseFlags(process.argv.slice(2), process.env);
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(2);
  }
  const store = new Store(flags.data);
  const tokens = store.issueFixtureTokens(flags.adminToken);
  if (flags.seedRules) store.seedRules(flags.seedRules);
  const emulator = createEmulator({
    store,
    rateLimit: flags.rateLimit && { ...flags.rateLimit, model: flags.rateLimitModel },
    latencyMs: flags.latencyMs,
    failRate: flags.failRate,
    publicUrl: flags.publicUrl,
    log: (line) => process.stderr.write(`${new Date().toISOString()} ${line}\n`),
  });
  const stop = (signal: string) => {
    process.stderr.write(`emulator: ${signal}, shutting down\n`);
    emulator.close().then(() => {
      store.close();
      process.exit(0);
    });
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
  const url = await emulator.listen(flags.port, flags.host);
  const [main, other] = store.accounts;
  const startup = {
    url,
    adminToken: tokens.admin,
    memberToken: tokens.member,
    otherAccountToken: tokens.other,
    fixtures: {
      users: main.users,
      bots: main.bots,
      ipPolicies: main.ipPolicies,
      certificateAuthorities: main.certificateAuthorities,
      tlsEdges: main.tlsEdges,
    },
    otherAccountFixtures: {
      users: other.users,
      ipPolicies: other.ipPolicies,
      certificateAuthorities: other.certificateAuthorities,
      tlsEdges: other.tlsEdges,
    },
  };
  process.stdout.write(`${JSON.stringify(startup)}\n`);
  const rate = flags.rateLimit
    ? `${flags.rateLimit.requests}/${flags.rateLimit.seconds}s, ` +
      `${flags.rateLimitModel === "window" ? "rolling window" : "token bucket"}`
    : "off";
  process.stderr.write(`emulator listening on ${url} (rate limit ${rate}, data ${flags.data ?? "in memory"})\n`);
}

if (require.main === module) {
  main().catch((e) => {
    process.stderr.write(`emulator failed to start: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
