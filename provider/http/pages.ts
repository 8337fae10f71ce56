// The one page walker: the pages of a list, following next_page_uri, within a page cap and a time
// budget that grows with the pages read at the pace (walkLimits).
import { ConfigSource, connection } from "../config";
import { rateWindowMs } from "../limiter";
import { currentOperation, growBound, operationBoundMs } from "../operation";
import { api } from "./api";
import { failure } from "./failures";
import { redact } from "./redact";
import { ApiResponse } from "./transport";
import { proveBase } from "./trust";

// A walk follows at most this many pages (100 objects each: 500,000 objects).
export const UNLIMITED_PAGES = 5000;

/**
 * The limits of one walk, in one place: at most UNLIMITED_PAGES pages, and no page started after its
 * time budget, the bound of one operation (../operation: 10 minutes by default), which grows with
 * each page read by that page's time at the pace (`pageMs`: 60 s / maxRequestsPerMinute, 0.5 s at
 * the default 120 a minute). So a walk that keeps the pace goes on to the end of the list, however
 * long (100,000 rules: 1,000 pages, about 8.5 minutes at 120 a minute), and one that falls behind it
 * (the service slower than the pace, 429s) ends within the bound it has earned; never later than
 * the bound + UNLIMITED_PAGES × pageMs + one attempt.
 */
export function walkLimits(source?: ConfigSource): { maxPages: number; budgetMs: number; pageMs: number } {
  const budgetMs = currentOperation()?.boundMs ?? operationBoundMs();
  const perMinute = connection(source).maxRequestsPerMinute;
  return { maxPages: UNLIMITED_PAGES, budgetMs, pageMs: perMinute > 0 ? rateWindowMs() / perMinute : 0 };
}

export interface WalkLimits {
  /** Pages followed at most (walkLimits). */
  maxPages?: number;
  /** No page is started after this long (walkLimits); tests set less. A budget given here does not grow. */
  budgetMs?: number;
  /** See RequestOptions.unseen. */
  unseen?: boolean;
}

/**
 * The pages of a list, following next_page_uri. A 404 or any answer without the list is an error,
 * never an empty list. It throws, with `partial: true` (what was yielded is right, only incomplete),
 * at a next_page_uri seen before, at a page that brings no new id (the same page under another
 * URI), after `maxPages` pages, and when its time budget is spent. Each page read grows the budget,
 * and the bound of the operation reading it, by the page's time at the pace (walkLimits).
 */
export async function* listPages<T>(
  path: string,
  field: string,
  what: string,
  source?: ConfigSource,
  limits: WalkLimits = {},
): AsyncGenerator<{ items: T[]; fallbackKey?: string; keyUsed?: string }> {
  const { apiUrl, apiKey } = connection(source);
  const paced = walkLimits(source);
  const maxPages = limits.maxPages ?? paced.maxPages;
  const budgetMs = limits.budgetMs ?? paced.budgetMs;
  const pageMs = limits.budgetMs === undefined ? paced.pageMs : 0; // a budget given does not grow
  const op = currentOperation();
  const started = Date.now();
  let grownMs = 0;
  const absolute = (uri: string) => new URL(uri.startsWith("/") ? apiUrl + uri : uri).href;
  const partial = (message: string) =>
    failure(redact(`${what}: ${message}; giving up on the list`, [apiKey]), { partial: true });
  const seen: string[] = [];
  const ids = Object.create(null) as Record<string, boolean>; // ids come from the server: no prototype
  let next: string | null = path;
  while (next) {
    if (seen.length >= maxPages) {
      throw partial(`more than ${maxPages} pages${maxPages >= UNLIMITED_PAGES ? ", the most one walk follows" : ""}`);
    }
    const left = started + budgetMs + grownMs - Date.now();
    const earned = grownMs ? ` + ${Math.round(grownMs / 1000)} s they earned at the pace` : "";
    if (left <= 0) throw partial(`${seen.length} pages read in ${budgetMs / 1000} s${earned} and the list goes on`);
    seen.push(absolute(next));
    const page: ApiResponse<Record<string, unknown>> = await api("GET", next, {
      what,
      source,
      budgetMs: left,
      unseen: limits.unseen,
    });
    const items = page.body?.[field];
    if (!Array.isArray(items)) throw failure(`${what}: the answer has no ${field} list`, { status: page.status });
    proveBase(apiUrl);
    grownMs += pageMs;
    if (op && pageMs) growBound(op, pageMs, 1);
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
    // Named by its place in the walk, not by the server's URI (server text, which could carry a key in pieces).
    const back = next ? seen.indexOf(absolute(next)) : -1;
    if (back >= 0) throw partial(`next_page_uri leads back to a page already read (page ${back + 1} of this walk)`);
  }
}

/** Every item of a list (see listPages). */
export async function* listAll<T>(
  path: string,
  field: string,
  what: string,
  source?: ConfigSource,
  limits?: WalkLimits,
): AsyncGenerator<T> {
  for await (const page of listPages<T>(path, field, what, source, limits)) yield* page.items;
}
