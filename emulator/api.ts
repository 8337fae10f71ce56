// What every handler shares of the API: the request context, the checks of a body's fields, the
// record an id names in the caller's account, newest-first pages with their links, and the
// description/metadata pair. The transport (bodies, answers) is in http.ts.
import { ListEnvelope, MAX_PAGE_SIZE, TEXT_LIMITS } from "../contract/common";
import { apiError, notFound, shown, shownName } from "./errors";
import type { Account, Principal } from "./records";
import type { Lookup, Store } from "./store";

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

type FieldType = "string" | "boolean" | "string[]";

/**
 * Checks the body against the fields an operation accepts: unknown fields and wrong types are
 * 400s naming the field. `refused` names fields that exist but cannot be set here, with why.
 * Own properties only: `toString` or `__proto__` in a body is an unknown field like any other.
 */
export function checkFields(
  body: Record<string, unknown>,
  accepted: Record<string, FieldType>,
  refused: Record<string, string> = {},
): void {
  for (const [field, value] of Object.entries(body)) {
    if (Object.hasOwn(refused, field)) throw apiError(400, "ERR_FIELD_NOT_UPDATABLE", `${field}: ${refused[field]}`);
    if (!Object.hasOwn(accepted, field)) throw apiError(400, "ERR_UNKNOWN_FIELD", `unknown field: ${shownName(field)}`);
    const type = accepted[field];
    const ok =
      type === "string[]" ? Array.isArray(value) && value.every((v) => typeof v === "string") : typeof value === type;
    if (!ok)
      throw apiError(
        400,
        "ERR_INVALID_FIELD_TYPE",
        `${field} must be ${type === "string[]" ? "an array of strings" : `a ${type}`}`,
      );
  }
}

/** The contract's byte limits (UTF-8) on description and metadata. */
export function checkByteLimits(body: Record<string, unknown>): void {
  for (const [field, limit] of Object.entries(TEXT_LIMITS)) {
    const value = body[field];
    if (typeof value !== "string") continue;
    const size = Buffer.byteLength(value, "utf8");
    if (size > limit)
      throw apiError(400, "ERR_FIELD_TOO_LONG", `${field} is ${size} bytes; the limit is ${limit} bytes (UTF-8)`);
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
function pageQuery(ctx: Ctx, table: Lookup<{ seq: number }>): { limit: number; beforeSeq?: number } {
  for (const name of ctx.query.keys()) {
    if (!["limit", "before_seq", "before_id"].includes(name))
      throw apiError(400, "ERR_INVALID_QUERY", `unknown query parameter: ${shownName(name)}`);
  }
  const limitText = ctx.query.get("limit");
  const limit = limitText === null ? MAX_PAGE_SIZE : /^[0-9]{1,4}$/.test(limitText) ? Number(limitText) : NaN;
  if (!(limit >= 1 && limit <= MAX_PAGE_SIZE))
    throw apiError(400, "ERR_INVALID_QUERY", `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`);
  const seqText = ctx.query.get("before_seq");
  const beforeId = ctx.query.get("before_id");
  if (seqText !== null && beforeId !== null)
    throw apiError(400, "ERR_INVALID_QUERY", "give before_seq or before_id, not both");
  if (seqText !== null) {
    if (!/^[0-9]{1,15}$/.test(seqText))
      throw apiError(400, "ERR_INVALID_QUERY", "before_seq must be a whole number (the one in next_page_uri)");
    return { limit, beforeSeq: Number(seqText) };
  }
  if (beforeId === null) return { limit };
  const before = table.get(ctx.account, beforeId);
  if (!before)
    throw apiError(400, "ERR_INVALID_QUERY", `before_id does not name an object of this list: ${shown(beforeId)}`);
  return { limit, beforeSeq: before.seq };
}

/** Newest-first paging: the page of `table` before `before_seq`, with its links. */
export function page<T extends { seq: number }>(
  ctx: Ctx,
  path: string,
  table: Lookup<T>,
): { items: T[] } & ListEnvelope {
  const { limit, beforeSeq } = pageQuery(ctx, table);
  const { items, more } = table.page(ctx.account, beforeSeq, limit);
  const link = (query: string[]) => `${ctx.baseUrl}${path}${query.length ? `?${query.join("&")}` : ""}`;
  // This page's link names what was understood, not what was sent (a repeated parameter is not echoed).
  const self = link([
    ...(ctx.query.has("limit") ? [`limit=${limit}`] : []),
    ...(beforeSeq !== undefined ? [`before_seq=${beforeSeq}`] : []),
  ]);
  const next = more ? link([`limit=${limit}`, `before_seq=${items[items.length - 1].seq}`]) : null;
  return { items, uri: self, next_page_uri: next };
}

/** The description/metadata pair of a checked body, as the store takes it. */
export function textFields(body: Record<string, unknown>): { description?: string; metadata?: string } {
  return { description: body.description as string | undefined, metadata: body.metadata as string | undefined };
}

/**
 * A description/metadata pair as answers show it: "" when unset in the answer about one object (the
 * service's own clients read both as present), and in a list item an unset metadata left out (as the
 * contract says of a listed key).
 */
export function answerText(
  record: { description: string; metadata: string },
  listed: boolean,
): { description: string; metadata?: string } {
  return { description: record.description, ...(record.metadata || !listed ? { metadata: record.metadata } : {}) };
}
