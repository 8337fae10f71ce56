// HTTP front of the emulator: operation ids, faults, auth, the version header, rate limits,
// routing, body parsing and the one error shape. Handlers live in one file per resource.
import * as http from "node:http";
import { randomBytes } from "node:crypto";
import { Account, KeyRecord, Principal, Store } from "./store";
import * as apiKeys from "./api-keys";
import * as ipPolicyRules from "./ip-policy-rules";
import * as mutualTls from "./mutual-tls";

export interface EmulatorOptions {
  store: Store;
  rateLimit?: { requests: number; seconds: number }; // undefined: no limit
  latencyMs?: number;
  failRate?: number;
  log?: (line: string) => void;
}

/** What a handler gets: the caller, its account, the parsed body and query. */
export interface Ctx {
  store: Store;
  account: Account;
  caller: Principal;
  callerKey: KeyRecord;
  body: Record<string, unknown>;
  hasBody: boolean;
  query: URLSearchParams;
  params: string[];
  baseUrl: string;
}

export interface Reply {
  status: number;
  body?: unknown;
}

type Handler = (ctx: Ctx) => Reply;

export interface Route {
  pattern: RegExp;
  methods: Partial<Record<string, Handler>>;
}

/** An error that becomes the API's error body. */
export interface ApiError {
  apiError: true;
  status: number;
  code: string;
  msg: string;
  headers?: Record<string, string>;
}

export function apiError(status: number, code: string, msg: string, headers?: Record<string, string>): ApiError {
  return { apiError: true, status, code, msg, headers };
}

function isApiError(e: unknown): e is ApiError {
  return typeof e === "object" && e !== null && (e as ApiError).apiError === true;
}

const MAX_BODY_BYTES = 1 << 20;
export const OPERATION_ID_HEADER = "x-operation-id";

export interface Stats {
  requests: number;
  byStatus: Record<string, number>;
}

export interface Emulator {
  server: http.Server;
  stats: Stats;
  setFaults(faults: { failRate?: number; latencyMs?: number }): void;
  listen(port: number, host: string): Promise<string>;
  close(): Promise<void>;
}

export function createEmulator(options: EmulatorOptions): Emulator {
  const store = options.store;
  const log = options.log ?? (() => {});
  const stats: Stats = { requests: 0, byStatus: {} };
  const faults = { failRate: options.failRate ?? 0, latencyMs: options.latencyMs ?? 0 };
  const buckets = new Map<string, { tokens: number; updated: number }>();
  // Built here rather than at module load: the handler files import helpers from this one.
  const routes: Route[] = [...apiKeys.routes, ...ipPolicyRules.routes, ...mutualTls.routes];
  let baseUrl = "";

  // Token bucket per account: a burst of N, refilled at N per window.
  function takeRateToken(accountId: string): number | undefined {
    const limit = options.rateLimit;
    if (!limit) return undefined;
    const now = Date.now();
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

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const started = Date.now();
    const operationId = `op_${randomBytes(12).toString("hex")}`;
    const url = new URL(req.url ?? "/", baseUrl);
    const method = req.method ?? "GET";
    let reply: Reply;
    let headers: Record<string, string> = {};

    if (url.pathname === "/_emulator/stats" && method === "GET") {
      // Emulator-only, not part of the contract: request counts for tests and benchmarks.
      send(res, operationId, { status: 200, body: stats }, {});
      return;
    }
    stats.requests++;
    try {
      const body = await readBody(req);
      if (faults.latencyMs > 0) await new Promise((r) => setTimeout(r, faults.latencyMs));
      if (faults.failRate > 0 && Math.random() < faults.failRate) {
        throw apiError(503, "ERR_SERVICE_UNAVAILABLE", "the service is temporarily unavailable (injected fault); retry later");
      }
      reply = dispatch(method, url, req.headers, body);
    } catch (e) {
      const err = isApiError(e) ? e : apiError(500, "ERR_INTERNAL", "internal error");
      if (!isApiError(e)) log(`internal error ${operationId}: ${e instanceof Error ? e.stack : String(e)}`);
      headers = err.headers ?? {};
      reply = {
        status: err.status,
        body: { error_code: err.code, status_code: err.status, msg: err.msg, details: { operation_id: operationId } },
      };
    }
    stats.byStatus[reply.status] = (stats.byStatus[reply.status] ?? 0) + 1;
    send(res, operationId, reply, headers);
    log(`${method} ${shownPath(url.pathname)} ${reply.status} ${operationId} ${Date.now() - started}ms`);
  }

  function dispatch(method: string, url: URL, headers: http.IncomingHttpHeaders, raw: Buffer): Reply {
    const auth = headers.authorization ?? "";
    const match = /^Bearer (\S+)$/.exec(auth);
    if (!match) throw apiError(401, "ERR_UNAUTHORIZED", "missing or malformed Authorization header; send 'Authorization: Bearer <API key token>'");
    const callerKey = store.authenticate(match[1]);
    if (!callerKey) throw apiError(401, "ERR_UNAUTHORIZED", "the API key in the Authorization header is not valid");
    const account = store.accountOf(callerKey.accountId);
    const caller = store.principal(account, callerKey.ownerId);
    if (!caller) throw apiError(401, "ERR_UNAUTHORIZED", "the owner of this API key no longer exists");

    const version = headers["service-version"];
    if (version !== "2") {
      throw apiError(400, "ERR_INVALID_SERVICE_VERSION", version === undefined
        ? "the Service-Version header is required; send 'Service-Version: 2'"
        : `unsupported Service-Version header ${JSON.stringify(version)}; send 'Service-Version: 2'`);
    }

    const retryAfter = takeRateToken(account.id);
    if (retryAfter !== undefined) {
      throw apiError(429, "ERR_RATE_LIMITED", `rate limit exceeded for this account; retry after ${retryAfter} s`, {
        "retry-after": String(retryAfter),
      });
    }

    const route = routes.find((r) => r.pattern.test(url.pathname));
    if (!route) throw apiError(404, "ERR_NOT_FOUND", `no such path: ${shownPath(url.pathname)}`);
    const handler = route.methods[method];
    if (!handler) {
      throw apiError(405, "ERR_METHOD_NOT_ALLOWED", `method ${method} is not allowed on ${shownPath(url.pathname)}`, {
        allow: Object.keys(route.methods).join(", "),
      });
    }
    const params = (route.pattern.exec(url.pathname) ?? []).slice(1).map(decodeURIComponent);
    const parsed = parseJsonBody(raw, headers["content-type"]);
    return handler({
      store,
      account,
      caller,
      callerKey,
      body: parsed ?? {},
      hasBody: parsed !== undefined,
      query: url.searchParams,
      params,
      baseUrl,
    });
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((e) => {
      log(`unhandled: ${e instanceof Error ? e.stack : String(e)}`);
      res.destroy();
    });
  });
  server.keepAliveTimeout = 30_000;

  return {
    server,
    stats,
    setFaults(next) {
      if (next.failRate !== undefined) faults.failRate = next.failRate;
      if (next.latencyMs !== undefined) faults.latencyMs = next.latencyMs;
    },
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          const address = server.address();
          if (!address || typeof address === "string") return reject(new Error("no address"));
          const hostPart = address.family === "IPv6" ? `[${address.address}]` : address.address;
          baseUrl = `http://${hostPart}:${address.port}`;
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

function send(res: http.ServerResponse, operationId: string, reply: Reply, headers: Record<string, string>): void {
  const payload = reply.body === undefined ? "" : JSON.stringify(reply.body);
  res.statusCode = reply.status;
  res.setHeader(OPERATION_ID_HEADER, operationId);
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  if (payload) {
    res.setHeader("content-type", "application/json");
    res.setHeader("content-length", Buffer.byteLength(payload));
  }
  res.end(payload);
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(apiError(413, "ERR_BODY_TOO_LARGE", `request body is over ${MAX_BODY_BYTES} bytes`));
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** Returns the body object, or undefined when the request has no body. */
function parseJsonBody(raw: Buffer, contentType: string | undefined): Record<string, unknown> | undefined {
  if (raw.length === 0) return undefined;
  const mediaType = (contentType ?? "").split(";")[0].trim().toLowerCase();
  if (mediaType !== "application/json") {
    throw apiError(415, "ERR_UNSUPPORTED_MEDIA_TYPE", `request bodies must be sent with 'Content-Type: application/json', got ${JSON.stringify(contentType ?? "")}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw.toString("utf8"));
  } catch (e) {
    throw apiError(400, "ERR_INVALID_JSON", `request body is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw apiError(400, "ERR_INVALID_BODY", "request body must be a JSON object");
  }
  return value as Record<string, unknown>;
}

type FieldType = "string" | "boolean" | "string[]";

/**
 * Checks the body against the fields an operation accepts: unknown fields and wrong types are
 * 400s naming the field. `refused` names fields that exist but cannot be set here, with why.
 */
export function checkFields(body: Record<string, unknown>, accepted: Record<string, FieldType>, refused: Record<string, string> = {}): void {
  for (const [field, value] of Object.entries(body)) {
    if (field in refused) throw apiError(400, "ERR_FIELD_NOT_UPDATABLE", `${field}: ${refused[field]}`);
    const type = accepted[field];
    if (!type) throw apiError(400, "ERR_UNKNOWN_FIELD", `unknown field: ${field}`);
    const ok =
      type === "string[]" ? Array.isArray(value) && value.every((v) => typeof v === "string") : typeof value === type;
    if (!ok) throw apiError(400, "ERR_INVALID_FIELD_TYPE", `${field} must be ${type === "string[]" ? "an array of strings" : `a ${type}`}`);
  }
}

/** The contract's byte limits (UTF-8) on description and metadata. */
export function checkByteLimits(body: Record<string, unknown>): void {
  for (const [field, limit] of [["description", 255], ["metadata", 4096]] as const) {
    const value = body[field];
    if (typeof value !== "string") continue;
    const size = Buffer.byteLength(value, "utf8");
    if (size > limit) {
      throw apiError(400, "ERR_FIELD_TOO_LONG", `${field} is ${size} bytes; the limit is ${limit} bytes (UTF-8)`);
    }
  }
}

// Values from the request are echoed in messages and logs only when they have the shape of an id,
// so that a token pasted into the wrong place is never written back or logged.
const ID_SHAPE = /^(ak|ipr|ipp|ca|usr|bot|edgtls)_[A-Za-z0-9]{1,64}$/;
const PATH_WORDS = new Set(["", "api_keys", "ip_policy_rules", "edges", "tls", "mutual_tls", "_emulator", "stats"]);

export function shown(id: string): string {
  return ID_SHAPE.test(id) ? id : "(a value that is not an id)";
}

function shownPath(pathname: string): string {
  return pathname
    .split("/")
    .map((segment) => (PATH_WORDS.has(segment) || ID_SHAPE.test(segment) ? segment : "…"))
    .join("/");
}

export function notFound(what: string, id: string): ApiError {
  return apiError(404, "ERR_NOT_FOUND", `${what} not found: ${shown(id)}`);
}

/** Newest-first paging with `limit` and `before_id`; `next_page_uri` fetches the next page. */
export function page<T extends { id: string; seq: number }>(ctx: Ctx, path: string, items: T[]): { page: T[]; uri: string; next_page_uri: string | null } {
  for (const name of ctx.query.keys()) {
    if (name !== "limit" && name !== "before_id") throw apiError(400, "ERR_INVALID_QUERY", `unknown query parameter: ${name}`);
  }
  const limitText = ctx.query.get("limit");
  const limit = limitText === null ? 100 : /^[0-9]+$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= 100)) {
    throw apiError(400, "ERR_INVALID_QUERY", `limit must be an integer from 1 to 100, got ${JSON.stringify(limitText)}`);
  }
  const sorted = [...items].sort((a, b) => b.seq - a.seq);
  const beforeId = ctx.query.get("before_id");
  let start = 0;
  if (beforeId !== null) {
    const index = sorted.findIndex((item) => item.id === beforeId);
    if (index < 0) throw apiError(400, "ERR_INVALID_QUERY", `before_id does not name an object of this list: ${shown(beforeId)}`);
    start = index + 1;
  }
  const slice = sorted.slice(start, start + limit);
  const more = start + limit < sorted.length;
  const next = more ? `${ctx.baseUrl}${path}?limit=${limit}&before_id=${encodeURIComponent(slice[slice.length - 1].id)}` : null;
  const self = `${ctx.baseUrl}${path}${ctx.query.size ? `?${ctx.query.toString()}` : ""}`;
  return { page: slice, uri: self, next_page_uri: next };
}

/** Fields of a description/metadata pair as responses show them: omitted when unset. */
export function optionalText(record: { description: string; metadata: string }): { description?: string; metadata?: string } {
  return {
    ...(record.description ? { description: record.description } : {}),
    ...(record.metadata ? { metadata: record.metadata } : {}),
  };
}
