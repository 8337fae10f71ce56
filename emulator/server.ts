// The HTTP front of the emulator. A request goes down one chain of small steps, in this order (see
// answer()): a valid target, injected faults, authentication (on the headers, before any body is
// read), the Service-Version header, the account's rate limit, the route, the body (size-limited
// JSON), then the handler. Any step may refuse with an ApiError, which becomes the answer. Around
// the chain (serve()): the operation id, durability before any answer, closing a connection whose
// body was left unread, stats and the log line. Requests Node's parser refuses (header limits,
// timeouts) never reach the chain: answerUnparsed() answers them.
import * as http from "node:http";
import { AddressInfo } from "node:net";
import * as os from "node:os";
import type { Duplex } from "node:stream";
import { randomBytes } from "node:crypto";
import { SERVICE_VERSION } from "../contract/common";
import { ApiError, apiError, errorBody, isIdShaped } from "./errors";
import { OPERATION_ID_HEADER, parseJsonBody, readBody, Reply, send } from "./http";
import { RateLimit, rateLimiter, TakeSlot } from "./rate-limit";
import type { Account, Principal } from "./records";
import { PATH_WORDS, route } from "./routes";
import { Store } from "./store";

export interface EmulatorOptions {
  store: Store;
  /** Per account; the "window" model by default (rate-limit.ts). Undefined: no limit. */
  rateLimit?: RateLimit;
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

/** What the steps share: one emulator's store, settings and counters. */
interface Front {
  store: Store;
  stats: Stats;
  log: (line: string) => void;
  faults: { failRate: number; latencyMs: number };
  takeRateSlot: TakeSlot;
  publicUrl?: string;
  /** Set by listen(): the address, and the Host header values that name this server. */
  baseUrl: string;
  knownHosts: Set<string>;
}

const CLIENT_ERROR_LINGER_MS = 1000;
const newOperationId = () => `op_${randomBytes(12).toString("hex")}`;

export function createEmulator(options: EmulatorOptions): Emulator {
  const front: Front = {
    store: options.store,
    stats: { requests: 0, byStatus: {}, byMethod: {} },
    log: options.log ?? (() => {}),
    faults: { failRate: options.failRate ?? 0, latencyMs: options.latencyMs ?? 0 },
    takeRateSlot: rateLimiter(options.rateLimit, options.now ?? Date.now),
    publicUrl: options.publicUrl,
    baseUrl: "",
    knownHosts: new Set(),
  };
  const requestTimeout = options.requestTimeoutMs ?? 60_000; // a stalled upload holds a connection this long at most
  // Checked every 5 s (Node's default is 30 s), so a late request is answered close to its limit.
  const timeouts = {
    requestTimeout,
    headersTimeout: Math.min(20_000, requestTimeout),
    connectionsCheckingInterval: Math.min(5_000, requestTimeout / 2),
  };
  const server = http.createServer(timeouts, (req, res) => {
    serve(front, req, res).catch((e) => {
      front.log(`unhandled: ${e instanceof Error ? e.stack : String(e)}`);
      res.destroy();
    });
  });
  server.keepAliveTimeout = 30_000;
  server.on("clientError", (err: NodeJS.ErrnoException, socket) => answerUnparsed(front, err, socket));

  return {
    server,
    stats: front.stats,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          const address = server.address() as AddressInfo;
          front.knownHosts = hostsOf(host, address);
          front.baseUrl = `http://${hostPort(address.address, address.port)}`;
          resolve(front.baseUrl);
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

/** One request, from its arrival to its log line. */
async function serve(front: Front, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const started = Date.now();
  const operationId = newOperationId();
  const method = req.method ?? "GET";
  const url = parseTarget(req.url);
  if (url?.pathname === "/_emulator/stats" && method === "GET") {
    // Emulator-only, not part of the contract: request counts for tests and benchmarks.
    return send(res, operationId, { status: 200, body: front.stats });
  }
  front.stats.requests++;
  const body = { read: false };
  let reply = await answer(front, req, url, method, body).catch((e) => errorReply(front, e, operationId));
  // Nothing is answered, success or not, before every change it could reflect is on disk.
  reply = await front.store.durable().then(
    () => reply,
    (e) => errorReply(front, e, operationId),
  );
  // A body left unread (refused before reading, or too large) is not read at all: close instead.
  const declaresBody = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
  if (!body.read && declaresBody) reply.headers = { ...reply.headers, connection: "close" };
  countStatus(front.stats, reply.status);
  const byMethod = `${method} ${Math.floor(reply.status / 100)}xx`;
  front.stats.byMethod[byMethod] = (front.stats.byMethod[byMethod] ?? 0) + 1;
  send(res, operationId, reply);
  // A query shows as "?…" (its values unshown): a list's first
  // page ("GET /ip_policy_rules") is told from its next ones.
  front.log(
    `${method} ${url ? shownPath(url.pathname) + (url.search ? "?…" : "") : "(invalid target)"} ${reply.status} ` +
      `${operationId} ${Date.now() - started}ms`,
  );
}

/** The chain, in order. Every step before readJsonBody works on the request line and headers only. */
async function answer(
  front: Front,
  req: http.IncomingMessage,
  url: URL | undefined,
  method: string,
  body: { read: boolean },
): Promise<Reply> {
  const target = validTarget(url);
  await injectFaults(front.faults);
  const { account, caller } = authenticate(front.store, req.headers.authorization);
  checkServiceVersion(req.headers["service-version"]);
  limitRate(front.takeRateSlot, account);
  const { handler, params } = route(method, target.pathname, shownPath(target.pathname));
  const parsed = await readJsonBody(req, body);
  return handler({
    store: front.store,
    account,
    caller,
    body: parsed,
    query: target.searchParams,
    params,
    baseUrl: linkBase(front, req),
  });
}

function validTarget(url: URL | undefined): URL {
  if (!url) throw apiError(400, "ERR_INVALID_REQUEST_TARGET", "the request target is not a valid path or URL");
  return url;
}

async function injectFaults(faults: Front["faults"]): Promise<void> {
  if (faults.latencyMs > 0) await new Promise((r) => setTimeout(r, faults.latencyMs));
  if (faults.failRate > 0 && Math.random() < faults.failRate) {
    throw apiError(
      503,
      "ERR_SERVICE_UNAVAILABLE",
      "the service is temporarily unavailable (injected fault); retry later",
    );
  }
}

function authenticate(store: Store, authorization: string | undefined): { account: Account; caller: Principal } {
  const match = /^Bearer (\S+)$/.exec(authorization ?? "");
  if (!match)
    throw apiError(
      401,
      "ERR_UNAUTHORIZED",
      "missing or malformed Authorization header; send 'Authorization: Bearer <API key token>'",
    );
  const callerKey = store.authenticate(match[1]);
  if (!callerKey) throw apiError(401, "ERR_UNAUTHORIZED", "the API key in the Authorization header is not valid");
  const account = store.accountOf(callerKey.accountId);
  const caller = store.principal(account, callerKey.ownerId);
  if (!caller) throw apiError(401, "ERR_UNAUTHORIZED", "the owner of this API key no longer exists");
  return { account, caller };
}

function checkServiceVersion(version: string | string[] | undefined): void {
  if (version !== SERVICE_VERSION) {
    throw apiError(
      400,
      "ERR_INVALID_SERVICE_VERSION",
      `${version === undefined ? "the Service-Version header is required" : "unsupported Service-Version header"}; ` +
        `send 'Service-Version: ${SERVICE_VERSION}'`,
    );
  }
}

function limitRate(takeRateSlot: TakeSlot, account: Account): void {
  const retryAfter = takeRateSlot(account.id);
  if (retryAfter !== undefined) {
    throw apiError(429, "ERR_RATE_LIMITED", `rate limit exceeded for this account; retry after ${retryAfter} s`, {
      "retry-after": String(retryAfter),
    });
  }
}

/** The body as a JSON object ({} when there is none); `body.read` tells serve() it was read whole. */
async function readJsonBody(req: http.IncomingMessage, body: { read: boolean }): Promise<Record<string, unknown>> {
  const raw = await readBody(req);
  body.read = true;
  return parseJsonBody(raw, req.headers["content-type"]) ?? {};
}

function errorReply(front: Front, e: unknown, operationId: string): Reply {
  if (!(e instanceof ApiError)) front.log(`internal error ${operationId}: ${e instanceof Error ? e.stack : String(e)}`);
  const err = e instanceof ApiError ? e : apiError(500, "ERR_INTERNAL", "internal error");
  return { status: err.status, body: errorBody(err, operationId), headers: err.headers };
}

function countStatus(stats: Stats, status: number): void {
  stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
}

/**
 * Requests Node's parser refuses (headers too large, malformed, too slow) never reach serve():
 * they are answered here in the same error shape, where the socket can still take an answer.
 */
function answerUnparsed(front: Front, err: NodeJS.ErrnoException, socket: Duplex): void {
  const pending = (socket as { _httpMessage?: http.ServerResponse })._httpMessage;
  if (err.code === "ECONNRESET" || !socket.writable || pending?.headersSent) return void socket.destroy();
  const [status, code, msg] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "ERR_HEADERS_TOO_LARGE", "the request headers are too large"]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "ERR_REQUEST_TIMEOUT", "the request took too long to arrive"]
        : [400, "ERR_MALFORMED_REQUEST", "the request is not valid HTTP/1.1"];
  const operationId = newOperationId();
  const payload = JSON.stringify(errorBody(apiError(status, code, msg), operationId));
  front.stats.requests++;
  countStatus(front.stats, status);
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nconnection: close\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(payload)}\r\n${OPERATION_ID_HEADER}: ${operationId}\r\n\r\n${payload}`,
  );
  // end() only half-closes: a client that neither reads nor closes would keep the socket (and its
  // descriptor) for ever. It gets a moment to read the answer and close; then the socket goes.
  const gone = setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
  socket.once("close", () => clearTimeout(gone));
  front.log(`(unparsed request) ${status} ${operationId} ${err.code ?? ""}`);
}

/** Links start with --public-url, else with the Host the client used when it names this server. */
function linkBase(front: Front, req: http.IncomingMessage): string {
  if (front.publicUrl) return front.publicUrl;
  const host = req.headers.host?.toLowerCase();
  return host && front.knownHosts.has(host) ? `http://${host}` : front.baseUrl;
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

/**
 * The Host header values that name this server: the --host given,
 * the address, and on loopback or all interfaces, their names.
 */
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
