// The HTTP front of the emulator: operation ids, injected faults, authentication (on the headers,
// before any body is read), the version header, rate limits, links, then routes.ts.
import * as http from "node:http";
import { AddressInfo } from "node:net";
import * as os from "node:os";
import { randomBytes } from "node:crypto";
import { SERVICE_VERSION } from "../contract/common";
import { ApiError, apiError, errorBody, isIdShaped } from "./errors";
import { Ctx, OPERATION_ID_HEADER, parseJsonBody, readBody, Reply, send } from "./http";
import { PATH_WORDS, route } from "./routes";
import { Store } from "./store";

export interface EmulatorOptions {
  store: Store;
  /** Per account. "window" (the default, as the service documents it): at most N requests in any rolling window of S seconds; "bucket": a token bucket, a burst of N refilled at N per S seconds. Undefined: no limit. */
  rateLimit?: { requests: number; seconds: number; model?: "window" | "bucket" };
  /** The clock of the rate limit, in ms (tests inject one); Date.now by default. */
  now?: () => number;
  latencyMs?: number;
  failRate?: number;
  /** Where clients reach the emulator, when not at the address it listens on (a proxy, a tunnel). */
  publicUrl?: string;
  log?: (line: string) => void;
  /** How long a request may take to arrive (default 60 s; the headers: 20 s at most). Tests shorten it. */
  requestTimeoutMs?: number;
}

export interface Stats {
  requests: number;
  byStatus: Record<string, number>;
  /** Answered requests by method and status class: "PATCH 2xx" (tests count what a plan sent). */
  byMethod: Record<string, number>;
}

export interface Emulator {
  server: http.Server;
  stats: Stats;
  listen(port: number, host: string): Promise<string>;
  close(): Promise<void>;
}

const CLIENT_ERROR_LINGER_MS = 1000;
const newOperationId = () => `op_${randomBytes(12).toString("hex")}`;

export function createEmulator(options: EmulatorOptions): Emulator {
  const store = options.store;
  const log = options.log ?? (() => {});
  const stats: Stats = { requests: 0, byStatus: {}, byMethod: {} };
  const faults = { failRate: options.failRate ?? 0, latencyMs: options.latencyMs ?? 0 };
  const buckets = new Map<string, { tokens: number; updated: number }>();
  const windows = new Map<string, { times: number[]; next: number }>();
  const clock = options.now ?? Date.now;
  let baseUrl = "";
  let knownHosts = new Set<string>();

  /** Takes a slot of the account's rate limit: undefined, or the whole seconds until one frees (at least 1). */
  function takeRateToken(accountId: string): number | undefined {
    const limit = options.rateLimit;
    if (!limit) return undefined;
    return limit.model === "bucket" ? takeBucketToken(accountId, limit) : takeWindowSlot(accountId, limit);
  }

  // Rolling window: a ring of the last N accepted times per account. The oldest of them is the one
  // that must have left the window (S seconds) before another request is accepted.
  function takeWindowSlot(accountId: string, limit: { requests: number; seconds: number }): number | undefined {
    const now = clock();
    const windowMs = limit.seconds * 1000;
    let ring = windows.get(accountId);
    if (!ring) windows.set(accountId, (ring = { times: [], next: 0 }));
    if (ring.times.length < limit.requests) {
      ring.times.push(now);
      return undefined;
    }
    const oldest = ring.times[ring.next];
    if (now - oldest >= windowMs) {
      ring.times[ring.next] = now;
      ring.next = (ring.next + 1) % limit.requests;
      return undefined;
    }
    return Math.max(1, Math.ceil((oldest + windowMs - now) / 1000));
  }

  // Token bucket: a burst of N, refilled at N per window.
  function takeBucketToken(accountId: string, limit: { requests: number; seconds: number }): number | undefined {
    const now = clock();
    const perMs = limit.requests / (limit.seconds * 1000);
    const bucket = buckets.get(accountId) ?? { tokens: limit.requests, updated: now };
    bucket.tokens = Math.min(limit.requests, bucket.tokens + (now - bucket.updated) * perMs);
    bucket.updated = now;
    buckets.set(accountId, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
  }

  /** Links start with --public-url, else with the Host the client used when it names this server. */
  function linkBase(req: http.IncomingMessage): string {
    if (options.publicUrl) return options.publicUrl;
    const host = req.headers.host?.toLowerCase();
    return host && knownHosts.has(host) ? `http://${host}` : baseUrl;
  }

  function count(status: number): void {
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
  }

  function errorReply(e: unknown, operationId: string): Reply {
    if (!(e instanceof ApiError)) log(`internal error ${operationId}: ${e instanceof Error ? e.stack : String(e)}`);
    const err = e instanceof ApiError ? e : apiError(500, "ERR_INTERNAL", "internal error");
    return { status: err.status, body: errorBody(err, operationId), headers: err.headers };
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const started = Date.now();
    const operationId = newOperationId();
    const method = req.method ?? "GET";
    const url = parseTarget(req.url);
    if (url?.pathname === "/_emulator/stats" && method === "GET") {
      // Emulator-only, not part of the contract: request counts for tests and benchmarks.
      return send(res, operationId, { status: 200, body: stats });
    }
    stats.requests++;
    const body = { read: false };
    let reply = await answer(req, url, method, body).catch((e) => errorReply(e, operationId));
    // Nothing is answered, success or not, before every change it could reflect is on disk.
    reply = await store.durable().then(() => reply, (e) => errorReply(e, operationId));
    // A body left unread (refused before reading, or too large) is not read at all: close instead.
    const declaresBody = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
    if (!body.read && declaresBody) reply.headers = { ...reply.headers, connection: "close" };
    count(reply.status);
    const byMethod = `${method} ${Math.floor(reply.status / 100)}xx`;
    stats.byMethod[byMethod] = (stats.byMethod[byMethod] ?? 0) + 1;
    send(res, operationId, reply);
    log(`${method} ${url ? shownPath(url.pathname) : "(invalid target)"} ${reply.status} ${operationId} ${Date.now() - started}ms`);
  }

  async function answer(req: http.IncomingMessage, url: URL | undefined, method: string, body: { read: boolean }): Promise<Reply> {
    if (!url) throw apiError(400, "ERR_INVALID_REQUEST_TARGET", "the request target is not a valid path or URL");
    if (faults.latencyMs > 0) await new Promise((r) => setTimeout(r, faults.latencyMs));
    if (faults.failRate > 0 && Math.random() < faults.failRate) {
      throw apiError(503, "ERR_SERVICE_UNAVAILABLE", "the service is temporarily unavailable (injected fault); retry later");
    }
    const { headers } = req;
    const match = /^Bearer (\S+)$/.exec(headers.authorization ?? "");
    if (!match) throw apiError(401, "ERR_UNAUTHORIZED", "missing or malformed Authorization header; send 'Authorization: Bearer <API key token>'");
    const callerKey = store.authenticate(match[1]);
    if (!callerKey) throw apiError(401, "ERR_UNAUTHORIZED", "the API key in the Authorization header is not valid");
    const account = store.accountOf(callerKey.accountId);
    const caller = store.principal(account, callerKey.ownerId);
    if (!caller) throw apiError(401, "ERR_UNAUTHORIZED", "the owner of this API key no longer exists");

    if (headers["service-version"] !== SERVICE_VERSION) {
      throw apiError(400, "ERR_INVALID_SERVICE_VERSION", `${headers["service-version"] === undefined ? "the Service-Version header is required" : "unsupported Service-Version header"}; send 'Service-Version: ${SERVICE_VERSION}'`);
    }
    const retryAfter = takeRateToken(account.id);
    if (retryAfter !== undefined) {
      throw apiError(429, "ERR_RATE_LIMITED", `rate limit exceeded for this account; retry after ${retryAfter} s`, { "retry-after": String(retryAfter) });
    }
    const { handler, params } = route(method, url.pathname, shownPath(url.pathname));
    const raw = await readBody(req);
    body.read = true;
    const parsed = parseJsonBody(raw, headers["content-type"]);
    const ctx: Ctx = {
      store,
      account,
      caller,
      body: parsed ?? {},
      query: url.searchParams,
      params,
      baseUrl: linkBase(req),
    };
    return handler(ctx);
  }

  const requestTimeout = options.requestTimeoutMs ?? 60_000; // a stalled upload holds a connection this long at most
  // Checked every 5 s (Node's default is 30 s), so a late request is answered close to its limit.
  const timeouts = { requestTimeout, headersTimeout: Math.min(20_000, requestTimeout), connectionsCheckingInterval: Math.min(5_000, requestTimeout / 2) };
  const server = http.createServer(timeouts, (req, res) => {
    handle(req, res).catch((e) => {
      log(`unhandled: ${e instanceof Error ? e.stack : String(e)}`);
      res.destroy();
    });
  });
  server.keepAliveTimeout = 30_000;

  // Requests Node's parser refuses (headers too large, malformed) never reach `handle`: answer
  // them in the same error shape, where the socket can still take an answer.
  server.on("clientError", (err: NodeJS.ErrnoException, socket) => {
    const pending = (socket as { _httpMessage?: http.ServerResponse })._httpMessage;
    if (err.code === "ECONNRESET" || !socket.writable || pending?.headersSent) return void socket.destroy();
    const [status, code, msg] =
      err.code === "HPE_HEADER_OVERFLOW" ? [431, "ERR_HEADERS_TOO_LARGE", "the request headers are too large"] :
      err.code === "ERR_HTTP_REQUEST_TIMEOUT" ? [408, "ERR_REQUEST_TIMEOUT", "the request took too long to arrive"] :
      [400, "ERR_MALFORMED_REQUEST", "the request is not valid HTTP/1.1"];
    const operationId = newOperationId();
    const payload = JSON.stringify(errorBody(apiError(status, code, msg), operationId));
    stats.requests++;
    count(status);
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nconnection: close\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(payload)}\r\n${OPERATION_ID_HEADER}: ${operationId}\r\n\r\n${payload}`,
    );
    // end() only half-closes: a client that neither reads nor closes would keep the socket (and its
    // descriptor) for ever. It gets a moment to read the answer and close; then the socket goes.
    const gone = setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
    socket.once("close", () => clearTimeout(gone));
    log(`(unparsed request) ${status} ${operationId} ${err.code ?? ""}`);
  });

  return {
    server,
    stats,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          const address = server.address() as AddressInfo;
          knownHosts = hostsOf(host, address);
          baseUrl = `http://${hostPort(address.address, address.port)}`;
          resolve(baseUrl);
        });
      });
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

/** The path and query of a request target (origin-form or absolute-form); undefined when it is not a URL. */
function parseTarget(target = "/"): URL | undefined {
  try {
    return new URL(target, "http://emulator.invalid");
  } catch {
    return undefined;
  }
}

const hostPort = (host: string, port: number) => `${host.includes(":") ? `[${host}]` : host}:${port}`.toLowerCase();

/** The Host header values that name this server: the --host given, the address, and on loopback or all interfaces, their names. */
function hostsOf(host: string, address: AddressInfo): Set<string> {
  const names = [host, address.address];
  const everywhere = address.address === "0.0.0.0" || address.address === "::";
  if (everywhere || /^(127\.|::1$|::ffff:127\.)/.test(address.address)) names.push("localhost", "127.0.0.1", "::1");
  if (everywhere) for (const i of Object.values(os.networkInterfaces()).flat()) if (i) names.push(i.address);
  return new Set(names.map((n) => hostPort(n, address.port)));
}

/** A path as logs and messages show it: route words and ids as they are, anything else as "…". */
function shownPath(pathname: string): string {
  const shown = pathname
    .split("/")
    .map((segment) => (PATH_WORDS.has(segment) || isIdShaped(segment) ? segment : "…"))
    .join("/");
  return shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
}
