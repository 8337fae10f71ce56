// What every handler shares: the request context, reading and checking bodies, paging, and
// sending an answer. Errors come from errors.ts, the one factory.
import * as http from "node:http";
import { ListEnvelope, MAX_PAGE_SIZE, TEXT_LIMITS } from "../contract/common";
import { apiError, notFound, shown, shownName } from "./errors";
import type { Account, Lookup, Principal, Store } from "./store";

/** What a handler gets: the caller, its account, the parsed body and query, named path parameters. */
export interface Ctx {
  store: Store;
  account: Account;
  caller: Principal;
  body: Record<string, unknown>;
  query: URLSearchParams;
  params: Record<string, string>;
  /** Scheme, host and port the links in answers start with. */
  baseUrl: string;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export const MAX_BODY_BYTES = 1 << 20;
export const OPERATION_ID_HEADER = "x-operation-id";

export function send(res: http.ServerResponse, operationId: string, reply: Reply): void {
  const payload = reply.body === undefined ? "" : JSON.stringify(reply.body);
  res.statusCode = reply.status;
  res.setHeader(OPERATION_ID_HEADER, operationId);
  for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
  if (payload) {
    res.setHeader("content-type", "application/json");
    res.setHeader("content-length", Buffer.byteLength(payload));
  }
  res.end(payload);
}

/** Reads the body up to MAX_BODY_BYTES; past that it stops reading and answers 413. */
export function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const tooLarge = () => apiError(413, "ERR_BODY_TOO_LARGE", `request body is over ${MAX_BODY_BYTES} bytes`);
  if (Number(req.headers["content-length"]) > MAX_BODY_BYTES) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) return void chunks.push(chunk);
      req.off("data", onData);
      req.pause();
      reject(tooLarge());
    };
    req.on("data", onData);
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** Returns the body object, or undefined when the request has no body. */
export function parseJsonBody(raw: Buffer, contentType: string | undefined): Record<string, unknown> | undefined {
  if (raw.length === 0) return undefined;
  const mediaType = (contentType ?? "").split(";")[0].trim().toLowerCase();
  if (mediaType !== "application/json") {
    throw apiError(415, "ERR_UNSUPPORTED_MEDIA_TYPE", "request bodies must be sent with 'Content-Type: application/json'");
  }
  let text: string;
  try {
    // Buffer's toString would put U+FFFD in place of bytes that are not UTF-8, and store that.
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(raw);
  } catch {
    throw apiError(400, "ERR_INVALID_JSON", "request body is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // JSON.parse's own message quotes the body, which may hold a secret.
    throw apiError(400, "ERR_INVALID_JSON", "request body is not valid JSON");
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
 * Own properties only: `toString` or `__proto__` in a body is an unknown field like any other.
 */
export function checkFields(body: Record<string, unknown>, accepted: Record<string, FieldType>, refused: Record<string, string> = {}): void {
  for (const [field, value] of Object.entries(body)) {
    if (Object.hasOwn(refused, field)) throw apiError(400, "ERR_FIELD_NOT_UPDATABLE", `${field}: ${refused[field]}`);
    if (!Object.hasOwn(accepted, field)) throw apiError(400, "ERR_UNKNOWN_FIELD", `unknown field: ${shownName(field)}`);
    const type = accepted[field];
    const ok = type === "string[]" ? Array.isArray(value) && value.every((v) => typeof v === "string") : typeof value === type;
    if (!ok) throw apiError(400, "ERR_INVALID_FIELD_TYPE", `${field} must be ${type === "string[]" ? "an array of strings" : `a ${type}`}`);
  }
}

/** The contract's byte limits (UTF-8) on description and metadata. */
export function checkByteLimits(body: Record<string, unknown>): void {
  for (const [field, limit] of Object.entries(TEXT_LIMITS)) {
    const value = body[field];
    if (typeof value !== "string") continue;
    const size = Buffer.byteLength(value, "utf8");
    if (size > limit) throw apiError(400, "ERR_FIELD_TOO_LONG", `${field} is ${size} bytes; the limit is ${limit} bytes (UTF-8)`);
  }
}

/** The record the path's `id` names in the caller's account, or 404. */
export function found<T>(ctx: Ctx, table: Lookup<T>, what: string): T {
  const record = table.get(ctx.account, ctx.params.id);
  if (!record) throw notFound(what, ctx.params.id);
  return record;
}

/**
 * The list query: `limit` (1 to MAX_PAGE_SIZE) and `before_seq`, the position in creation order
 * the page ends before (next_page_uri carries the last item's). `before_id`, which older versions
 * put in their links, is still read: it names an object that must still exist.
 */
export function pageQuery(ctx: Ctx, table: Lookup<{ seq: number }>): { limit: number; beforeSeq?: number } {
  for (const name of ctx.query.keys()) {
    if (!["limit", "before_seq", "before_id"].includes(name)) throw apiError(400, "ERR_INVALID_QUERY", `unknown query parameter: ${shownName(name)}`);
  }
  const limitText = ctx.query.get("limit");
  const limit = limitText === null ? MAX_PAGE_SIZE : /^[0-9]{1,4}$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= MAX_PAGE_SIZE)) throw apiError(400, "ERR_INVALID_QUERY", `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  const seqText = ctx.query.get("before_seq");
  const beforeId = ctx.query.get("before_id");
  if (seqText !== null && beforeId !== null) throw apiError(400, "ERR_INVALID_QUERY", "give before_seq or before_id, not both");
  if (seqText !== null) {
    if (!/^[0-9]{1,15}$/.test(seqText)) throw apiError(400, "ERR_INVALID_QUERY", "before_seq must be a whole number (the one in next_page_uri)");
    return { limit, beforeSeq: Number(seqText) };
  }
  if (beforeId === null) return { limit };
  const before = table.get(ctx.account, beforeId);
  if (!before) throw apiError(400, "ERR_INVALID_QUERY", `before_id does not name an object of this list: ${shown(beforeId)}`);
  return { limit, beforeSeq: before.seq };
}

/** Newest-first paging: the page of `table` before `before_seq`, with its links. */
export function page<T extends { seq: number }>(ctx: Ctx, path: string, table: Lookup<T>): { items: T[] } & ListEnvelope {
  const { limit, beforeSeq } = pageQuery(ctx, table);
  const { items, more } = table.page(ctx.account, beforeSeq, limit);
  const link = (query: string[]) => `${ctx.baseUrl}${path}${query.length ? `?${query.join("&")}` : ""}`;
  // This page's link names what was understood, not what was sent (a repeated parameter is not echoed).
  const self = link([...(ctx.query.has("limit") ? [`limit=${limit}`] : []), ...(beforeSeq !== undefined ? [`before_seq=${beforeSeq}`] : [])]);
  const next = more ? link([`limit=${limit}`, `before_seq=${items[items.length - 1].seq}`]) : null;
  return { items, uri: self, next_page_uri: next };
}

/** The description/metadata pair of a checked body, as the store takes it. */
export function textFields(body: Record<string, unknown>): { description?: string; metadata?: string } {
  return { description: body.description as string | undefined, metadata: body.metadata as string | undefined };
}

/** Fields of a description/metadata pair as answers show them: omitted when unset. */
export function optionalText(record: { description: string; metadata: string }): { description?: string; metadata?: string } {
  return {
    ...(record.description ? { description: record.description } : {}),
    ...(record.metadata ? { metadata: record.metadata } : {}),
  };
}
