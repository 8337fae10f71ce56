// The one page walker: the pages of a list, following next_page_uri, within a page cap and a time
// budget that follow the pace (walkLimits).
import { ConfigSource, connection } from "../config";
import { rateWindowMs } from "../limiter";
import { boundText, currentOperation, operationBoundMs } from "../operation";
import { api } from "./api";
import { failure } from "./failures";
import { redact } from "./redact";
import { ApiResponse } from "./transport";
import { proveBase } from "./trust";

// A walk at an unlimited pace follows at most this many pages (100 objects each: 500,000 objects).
const UNLIMITED_PAGES = 5000;

/**
 * The limits of one walk, in one place: it starts no page after the bound of one operation
 * (../operation: 10 minutes by default), and follows at most the pages the rate limiter lets
 * through in that time: maxRequestsPerMinute × bound / 60 s (at the default 120 a minute and 10
 * minutes: 1,200 pages, 120,000 objects), and never more than UNLIMITED_PAGES. A walk ends within
 * its time budget + one attempt; within an operation, the operation's bound ends it too.
 */
export function walkLimits(source?: ConfigSource): { maxPages: number; budgetMs: number } {
  const budgetMs = currentOperation()?.boundMs ?? operationBoundMs();
  const paced = Math.floor((connection(source).maxRequestsPerMinute * budgetMs) / rateWindowMs());
  return { maxPages: Math.max(1, Math.min(UNLIMITED_PAGES, paced)), budgetMs };
}

export interface WalkLimits {
  /** Pages followed at most (walkLimits). */
  maxPages?: number;
  /** No page is started after this long (walkLimits); tests set less. */
  budgetMs?: number;
  /** See RequestOptions.unseen. */
  unseen?: boolean;
}

/**
 * The pages of a list, following next_page_uri. A 404 or any answer without the list is an error,
 * never an empty list. It throws, with `partial: true` (what was yielded is right, only incomplete),
 * at a next_page_uri seen before, at a page that brings no new id (the same page under another
 * URI), after `maxPages` pages, and when its time budget is spent.
 */
export async function* listPages<T>(path: string, field: string, what: string, source?: ConfigSource, limits: WalkLimits = {}): AsyncGenerator<{ items: T[]; fallbackKey?: string; keyUsed?: string }> {
  const { apiUrl, apiKey, maxRequestsPerMinute } = connection(source);
  const paced = limits.maxPages === undefined || limits.budgetMs === undefined ? walkLimits(source) : undefined;
  const maxPages = limits.maxPages ?? paced!.maxPages;
  const budgetMs = limits.budgetMs ?? paced!.budgetMs;
  const started = Date.now();
  const absolute = (uri: string) => new URL(uri.startsWith("/") ? apiUrl + uri : uri).href;
  const partial = (message: string) => failure(redact(`${what}: ${message}; giving up on the list`, [apiKey]), { partial: true });
  const seen: string[] = [];
  const ids = Object.create(null) as Record<string, boolean>; // ids come from the server: no prototype
  let next: string | null = path;
  while (next) {
    if (seen.length >= maxPages) throw partial(`more than ${maxPages} pages${limits.maxPages === undefined ? capNote(maxPages, maxRequestsPerMinute, budgetMs) : ""}`);
    const left = budgetMs - (Date.now() - started);
    if (left <= 0) throw partial(`${seen.length} pages read in ${budgetMs / 1000} s and the list goes on`);
    seen.push(absolute(next));
    const page: ApiResponse<Record<string, unknown>> = await api("GET", next, { what, source, budgetMs: left, unseen: limits.unseen });
    const items = page.body?.[field];
    if (!Array.isArray(items)) throw failure(`${what}: the answer has no ${field} list`, { status: page.status });
    proveBase(apiUrl);
    let fresh = 0;
    for (const item of items) {
      const id = String((item as { id?: unknown })?.id);
      if (!ids[id]) fresh++;
      ids[id] = true;
    }
    yield { items: items as T[], fallbackKey: page.fallbackKey, keyUsed: page.keyUsed };
    if (items.length > 0 && fresh === 0) throw partial("a page brought no new object (the same page again)");
    const nextUri = page.body.next_page_uri;
    next = typeof nextUri === "string" && nextUri ? nextUri : null;
    if (next && seen.includes(absolute(next))) throw partial(`next_page_uri leads back to a page already read (${next})`);
  }
}

/** Where a walk's page cap came from (walkLimits), for its error. */
function capNote(maxPages: number, perMinute: number, budgetMs: number): string {
  if (maxPages >= UNLIMITED_PAGES) return ", the most one walk follows";
  return ` (what ${perMinute} requests a minute allow in ${boundText(currentOperation() ?? { boundMs: budgetMs })}); raise accessctl:maxRequestsPerMinute if the account's limit is higher`;
}

/** Every item of a list (see listPages). */
export async function* listAll<T>(path: string, field: string, what: string, source?: ConfigSource, limits?: WalkLimits): AsyncGenerator<T> {
  for await (const page of listPages<T>(path, field, what, source, limits)) yield* page.items;
}
