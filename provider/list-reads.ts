// `read` answered from the list endpoints. A refresh reads every object of a stack at once; one GET
// each costs N requests of the account's budget, a walk of the list ⌈N/100⌉. The reads of one
// provider process that arrive together share one walk: an object found there is answered from it;
// one missing from it is confirmed with its own GET before it is reported gone (the list may be
// older than a create of this run, or cut short). A write by this process makes the walk stale.
// ACCESSCTL_READ_MODE=get reads each object with its own GET (for comparison, or as a way out).
import { api, checkAnswer, RequestOptions } from "./client";
import { ConfigSource, connection } from "./config";
import { plainError } from "./errors";
import { accountOf } from "./limiter";

const MAX_PAGES = 200; // 20,000 objects at the service's 100 a page; past that, GETs
// Reads "arrive together" while a walk runs and until none has come for this long: a refresh
// issues its reads in one burst, a read after a pause gets a fresh walk.
const QUIET_MS = 10_000;

interface Walk {
  generation: number;
  running: boolean;
  lastUsed: number;
  /** id → object as listed; undefined when the walk failed (then every read does its GET). */
  found: Promise<Record<string, unknown> | undefined>;
}

interface Cache {
  generation: number; // bumped by every write of this process
  walks: Record<string, Walk>;
}

// On globalThis under a symbol made inside the function: module variables are not shared between
// the provider modules that Pulumi serializes by value in this repo.
function cache(): Cache {
  const global = globalThis as unknown as Record<symbol, Cache | undefined>;
  return (global[Symbol.for("@accessctl/pulumi/list-reads")] ??= { generation: 0, walks: {} });
}

/** Called after every create, update or delete: cached walks no longer tell the truth. */
export function listsChanged(): void {
  cache().generation++;
}

export interface ListRead {
  /** The list path ("/ip_policy_rules") and the field holding its items. */
  list: string;
  field: string;
  /** The object's own path, for the GET. */
  path: string;
  what: string;
  expect: NonNullable<RequestOptions["expect"]>;
  source?: ConfigSource;
}

/** The object with this id, or undefined when it is gone (404 to its own GET). */
export async function readObject<T>(id: string, r: ListRead): Promise<T | undefined> {
  if (process.env.ACCESSCTL_READ_MODE !== "get") {
    const listed = (await walk(r))?.[id];
    if (listed !== undefined) return listed as T;
  }
  const res = await api<T>("GET", r.path, { what: r.what, allow404: true, expect: r.expect, source: r.source });
  return res.status === 404 ? undefined : res.body;
}

function walk(r: ListRead): Promise<Record<string, unknown> | undefined> {
  const state = cache();
  const key = `${accountOf(connection(r.source))} ${r.list}`;
  const cached = state.walks[key];
  if (cached && cached.generation === state.generation && (cached.running || Date.now() - cached.lastUsed < QUIET_MS)) {
    cached.lastUsed = Date.now();
    return cached.found;
  }
  const walk: Walk = { generation: state.generation, running: true, lastUsed: Date.now(), found: Promise.resolve(undefined) };
  walk.found = listPages(r)
    .catch(() => undefined) // a failed walk costs GETs, never a failed read
    .finally(() => Object.assign(walk, { running: false, lastUsed: Date.now() }));
  state.walks[key] = walk;
  return walk.found;
}

/**
 * Up to MAX_PAGES pages; stops at a page seen before (a loop), so a walk may be partial: what it
 * misses gets a GET. Items without the fields a read needs are left out.
 */
async function listPages(r: ListRead): Promise<Record<string, unknown>> {
  const found: Record<string, unknown> = {};
  const seen: string[] = [];
  const apiUrl = connection(r.source).apiUrl;
  let next: string | null = r.list;
  while (next && seen.length < MAX_PAGES) {
    const absolute = new URL(next.startsWith("/") ? apiUrl + next : next).href;
    if (seen.includes(absolute)) break;
    seen.push(absolute);
    const page: { body: Record<string, unknown> } = await api("GET", next, { what: `list for ${r.what}`, source: r.source });
    const items = page.body?.[r.field];
    if (!Array.isArray(items)) break;
    let fresh = 0;
    for (const item of items) {
      try {
        checkAnswer(item, r.expect, r.what);
      } catch {
        continue; // its own GET will tell
      }
      const id = (item as { id: string }).id;
      if (!(id in found)) fresh++;
      found[id] = item;
    }
    if (items.length > 0 && fresh === 0) break; // the same page again under another URI: a loop
    const nextUri = page.body.next_page_uri;
    next = typeof nextUri === "string" && nextUri ? nextUri : null;
  }
  // Marks a walk that reached the last page (a symbol key: never taken for an object id).
  if (next === null) Object.defineProperty(found, Symbol.for("@accessctl/pulumi/list-complete"), { value: true });
  return found;
}

/**
 * Every object of the list, from the same shared walk as readObject (so a refresh of a rule set and
 * of single rules costs one walk). Throws unless the walk reached the last page: an authoritative
 * reader (IpPolicyRuleSet) must never take a missing page for missing objects.
 */
export async function listEverything<T>(r: ListRead): Promise<T[]> {
  // A failed shared walk keeps no error: walk again on our own, so that the failure names its cause.
  const found = (await walk(r)) ?? (await listPages(r));
  if (!(found as Record<symbol, unknown>)[Symbol.for("@accessctl/pulumi/list-complete")]) {
    throw plainError(`${r.what}: could not list ${r.list} to the last page (a page was unreadable or repeated, or there are more than ${MAX_PAGES} pages); nothing was changed`);
  }
  return Object.values(found) as T[];
}
