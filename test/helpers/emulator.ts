// Starts the real emulator (the compiled dist/emulator/main.js) as a child process on a free
// port and talks to it over HTTP, as every user and the providers do.
import { ChildProcess } from "node:child_process";
import * as net from "node:net";
import * as path from "node:path";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const emulatorProcess = require("../../scripts/emulator-process.js");

export const REPO = path.resolve(__dirname, "../..");

export interface Startup {
  url: string;
  adminToken: string;
  memberToken: string;
  otherAccountToken: string;
  fixtures: {
    users: { id: string; admin: boolean }[];
    bots: string[];
    ipPolicies: string[];
    certificateAuthorities: string[];
    tlsEdges: string[];
  };
  otherAccountFixtures: {
    users: { id: string; admin: boolean }[];
    ipPolicies: string[];
    certificateAuthorities: string[];
    tlsEdges: string[];
  };
}

export interface RunningEmulator extends Startup {
  process: ChildProcess;
  stderr: () => string;
  /** SIGTERM, and wait for the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL: no chance to clean up. */
  kill(): Promise<void>;
  stats(): Promise<{ requests: number; byStatus: Record<string, number>; byMethod: Record<string, number> }>;
}

export async function startEmulator(flags: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<RunningEmulator> {
  const { child, startup, stderr, exited } = (await emulatorProcess.startEmulator(flags, env)) as {
    child: ChildProcess;
    startup: Startup;
    stderr: () => string;
    exited: Promise<number | null>;
  };
  return {
    ...startup,
    process: child,
    stderr,
    async stop() {
      child.kill("SIGTERM");
      return exited;
    },
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
    async stats() {
      const res = await fetch(`${startup.url}/_emulator/stats`);
      return (await res.json()) as {
        requests: number;
        byStatus: Record<string, number>;
        byMethod: Record<string, number>;
      };
    },
  };
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** One request with the contract's headers (override or drop any with `headers`). */
export async function call(
  url: string,
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string | undefined> = {},
): Promise<ApiResponse> {
  const base: Record<string, string | undefined> = {
    authorization: token === undefined ? undefined : `Bearer ${token}`,
    "service-version": "2",
    ...(body !== undefined ? { "content-type": "application/json" } : {}),
    ...headers,
  };
  const sent: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined) sent[k] = v;
  const res = await fetch(path.startsWith("http") ? path : `${url}${path}`, {
    method,
    headers: sent,
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** An API client bound to one emulator and token. */
export function client(url: string, token: string) {
  return {
    get: (p: string, h?: Record<string, string | undefined>) => call(url, token, "GET", p, undefined, h),
    post: (p: string, b?: unknown, h?: Record<string, string | undefined>) => call(url, token, "POST", p, b, h),
    patch: (p: string, b?: unknown, h?: Record<string, string | undefined>) => call(url, token, "PATCH", p, b, h),
    put: (p: string, b?: unknown, h?: Record<string, string | undefined>) => call(url, token, "PUT", p, b, h),
    delete: (p: string, h?: Record<string, string | undefined>) => call(url, token, "DELETE", p, undefined, h),
  };
}

/** Follows next_page_uri to the end of a list. */
export async function listAll(url: string, token: string, path: string, field: string): Promise<any[]> {
  const items: any[] = [];
  let next: string | null = path;
  while (next) {
    const res = await call(url, token, "GET", next);
    if (res.status !== 200) throw new Error(`${next}: ${res.status} ${res.text}`);
    items.push(...res.body[field]);
    next = res.body.next_page_uri;
  }
  return items;
}

export interface RawResponse {
  status?: number;
  headers: Record<string, string>;
  body: any;
  text: string;
  /** Whether the server closed the connection within the wait. */
  closed: boolean;
}

/**
 * Writes bytes to the emulator over a plain socket (for what fetch cannot send: malformed
 * requests, absolute-form targets, stalled uploads) and reads what comes back within `waitMs`.
 */
export function raw(
  url: string,
  request: string | Buffer,
  waitMs = 3000,
  keepWriting?: (socket: net.Socket) => void,
): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname.replace(/^\[|\]$/g, ""));
    let received = "";
    let closed = false;
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const [head, ...rest] = received.split("\r\n\r\n");
      const lines = head.split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(":");
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const text = rest.join("\r\n\r\n");
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      const status = /^HTTP\/1\.1 (\d{3})/.exec(lines[0])?.[1];
      resolve({ status: status ? Number(status) : undefined, headers, body, text, closed });
    };
    let timer = setTimeout(finish, waitMs);
    socket.on("data", (d) => {
      received += d;
      // A whole answer: give the server a moment to close the connection, then stop waiting.
      const length = /\r\ncontent-length: (\d+)\r\n/i.exec(received)?.[1];
      const head = received.indexOf("\r\n\r\n");
      if (length !== undefined && head >= 0 && Buffer.byteLength(received.slice(head + 4)) >= Number(length)) {
        clearTimeout(timer);
        timer = setTimeout(finish, 500);
      }
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      closed = true;
      finish();
    });
    socket.write(request);
    keepWriting?.(socket);
  });
}
