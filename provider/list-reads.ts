// `read` answered from the list endpoints. A refresh reads every object of a stack at once; one GET
// each costs N requests of the account's budget, a walk of the list ⌈N/100⌉. The reads of one
// provider process that arrive together share one walk: an object found there is answered from it;
// one missing from it is confirmed with its own GET before it is reported gone (the list may be
// older than a create of this run, or cut short), and that GET's 404 is believed only as
// http/trust.ts believe404 allows (the API's answer, to a key of the account that holds the stack).
// A walk serves the reads of one burst: it is used for at most MAX_AGE_MS after it started, and
// never after a write of this process.
// ACCESSCTL_READ_MODE=get reads each object with its own GET (for comparison, or as a way out).
import { api } from "./http/api";
import { listPages } from "./http/pages";
import { checkAnswer, RequestOptions } from "./http/transport";
import { proveKey, underWay } from "./http/trust";
import { ConfigSource, connection } from "./config";
import { accountOf } from "./limiter";
import { processState } from "./state";

const MAX_PAGES = 200; // 20,000 objects at the service's 100 a page; past that, GETs
// A refresh issues its reads in one burst; a read that comes later than this after the walk began
// gets a fresh walk, however often reads come.
const MAX_AGE_MS = 10_000;

interface Found {
  /** id → object as listed (possibly a partial walk: what it misses gets a GET). */
  items: Record<string, unknown>;
  /**
   * By item id: the fallback key its page was read with (http/transport.ts ApiResponse.fallbackKey), if any.
   * Per page, not per walk: a key refused in the middle of a walk leaves pages read with each key.
   */
  keyOf: Record<string, string | undefined>;
  /** The walk reached the last page. */
  complete?: boolean;
}

interface Walk {
  generation: number;
  started: number;
  /** undefined when the walk failed (then every read does its GET). */
  found: Promise<Found | undefined>;
}

interface Cache {
  generation: number; // bumped by every write of this process
  walks: Record<string, Walk>;
}

function cache(): Cache {
  return processState<Cache>("list-reads", () => ({ generation: 0, walks: {} }));
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
  /** The walk's time budget (http/pages.ts WALK_BUDGET_MS); tests set less. */
  walkBudgetMs?: number;
}

/** The object with this id, or undefined when it is gone (a believed 404 to its own GET). */
export async function readObject<T>(id: string, r: ListRead): Promise<T | undefined> {
  if (process.env.ACCESSCTL_READ_MODE !== "get") {
    const found = await underWay(() => walk(r)); // a read under way until its walk is done: see http/trust.ts believe404
    const listed = found?.items[id];
    if (listed !== undefined) {
      proveKey(found!.keyOf[id]); // the key listed an object this stack holds: it is of that account
      return listed as T;
    }
  }
  const res = await api<T>("GET", r.path, { what: r.what, allow404: true, expect: r.expect, source: r.source });
  return res.status === 404 ? undefined : res.body;
}

function walk(r: ListRead): Promise<Found | undefined> {
  const state = cache();
  const key = `${accountOf(connection(r.source))} ${r.list}`;
  const cached = state.walks[key];
  if (cached && cached.generation === state.generation && Date.now() - cached.started < MAX_AGE_MS) return cached.found;
  const walk: Walk = { generation: state.generation, started: Date.now(), found: listed(r) };
  state.walks[key] = walk;
  return walk.found;
}

/** The walk: up to MAX_PAGES pages. Items without the fields a read needs are left out (their GET tells). */
async function listed(r: ListRead): Promise<Found | undefined> {
  const found: Found = { items: {}, keyOf: {} };
  try {
    for await (const page of listPages<Record<string, unknown>>(r.list, r.field, `list for ${r.what}`, r.source, { maxPages: MAX_PAGES, budgetMs: r.walkBudgetMs, unseen: true })) {
      for (const item of page.items) {
        try {
          checkAnswer(item, r.expect, r.what);
        } catch {
          continue;
        }
        found.items[(item as { id: string }).id] = item;
        found.keyOf[(item as { id: string }).id] = page.fallbackKey;
      }
    }
    found.complete = true;
  } catch (e) {
    // A walk stopped early still tells what it saw; a failed one costs GETs, never a failed read
    // (and nothing is concluded from it: a missing object's GET must answer 404 for it).
    if (!(e as { partial?: boolean }).partial) return undefined;
  }
  return found;
}

/**
 * Every object of the list, from the same shared walk as readObject (so a refresh of a rule set and
 * of single rules costs one walk). Throws unless the walk reached the last page: an authoritative
 * reader (IpPolicyRuleSet) must never take a missing page for missing objects.
 */
export async function listEverything<T>(r: ListRead, fresh = false): Promise<T[]> {
  const found = fresh ? undefined : await walk(r);
  if (found?.complete) return Object.values(found.items) as T[];
  // Fresh (what a write is checked against: the list as it is now, not a walk up to MAX_AGE_MS old),
  // or the shared walk failed or stopped early and keeps no error: walk on our own, so that a
  // failure is thrown with its cause (listPages throws rather than stop short).
  const items: T[] = [];
  for await (const page of listPages<T>(r.list, r.field, `list for ${r.what}`, r.source, { maxPages: MAX_PAGES, budgetMs: r.walkBudgetMs })) {
    for (const item of page.items) {
      try {
        checkAnswer(item, r.expect, r.what);
      } catch {
        continue;
      }
      items.push(item);
    }
  }
  return items;
}
