// The one page walker: the pages of a list, following next_page_uri, within a page cap and a time budget.
import { ConfigSource, connection } from "../config";
import { api } from "./api";
import { failure } from "./failures";
import { redact } from "./redact";
import { ApiResponse } from "./transport";
import { proveBase } from "./trust";

// One walk of a list follows at most this many pages (100 objects each), and starts no page after
// this long (each page's retries stop there too): a walk ends within WALK_BUDGET_MS + one attempt.
const MAX_PAGES = 1000;
const WALK_BUDGET_MS = 120_000;

export interface WalkLimits {
  /** Pages followed at most (MAX_PAGES). */
  maxPages?: number;
  /** No page is started after this long (WALK_BUDGET_MS); tests set less. */
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
export async function* listPages<T>(path: string, field: string, what: string, source?: ConfigSource, limits: WalkLimits = {}): AsyncGenerator<{ items: T[]; fallbackKey?: string }> {
  const { apiUrl, apiKey } = connection(source);
  const maxPages = limits.maxPages ?? MAX_PAGES;
  const budgetMs = limits.budgetMs ?? WALK_BUDGET_MS;
  const started = Date.now();
  const absolute = (uri: string) => new URL(uri.startsWith("/") ? apiUrl + uri : uri).href;
  const partial = (message: string) => failure(redact(`${what}: ${message}; giving up on the list`, [apiKey]), { partial: true });
  const seen: string[] = [];
  const ids = Object.create(null) as Record<string, boolean>; // ids come from the server: no prototype
  let next: string | null = path;
  while (next) {
    if (seen.length >= maxPages) throw partial(`more than ${maxPages} pages`);
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
    yield { items: items as T[], fallbackKey: page.fallbackKey };
    if (items.length > 0 && fresh === 0) throw partial("a page brought no new object (the same page again)");
    const nextUri = page.body.next_page_uri;
    next = typeof nextUri === "string" && nextUri ? nextUri : null;
    if (next && seen.includes(absolute(next))) throw partial(`next_page_uri leads back to a page already read (${next})`);
  }
}

/** Every item of a list (see listPages). */
export async function* listAll<T>(path: string, field: string, what: string, source?: ConfigSource, limits?: WalkLimits): AsyncGenerator<T> {
  for await (const page of listPages<T>(path, field, what, source, limits)) yield* page.items;
}
