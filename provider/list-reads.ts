// `read` answered from the list endpoints. A refresh reads every object of a stack at once; one GET
// each costs N requests of the account's budget, a walk of the list ⌈N/100⌉. The reads of one
// provider process that arrive together share one walk: an object found there is answered from it;
// one missing from it is confirmed with its own GET before it is reported gone (the list may be
// older than a create of this run, or cut short). A write by this process makes the walk stale.
// ACCESSCTL_READ_MODE=get reads each object with its own GET (for comparison, or as a way out).
import { api, checkAnswer, RequestOptions } from "./client";
import { ConfigSource, connection } from "./config";
import { accountOf } from "./limiter";

const MAX_PAGES = 200; // 20,000 objects at the service's 100 a page; past that, GETs
const REUSE_MS = 60_000; // a walk answers the reads that arrive within a minute of its start

interface Walk {
  generation: number;
  startedAt: number;
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
  if (cached && cached.generation === state.generation && Date.now() - cached.startedAt < REUSE_MS) return cached.found;
  const found = listPages(r).catch(() => undefined); // a failed walk costs GETs, never a failed read
  state.walks[key] = { generation: state.generation, startedAt: Date.now(), found };
  return found;
}

/** Up to MAX_PAGES pages; stops early at a page seen before (a loop). Items without the fields a read needs are left out. */
async function listPages(r: ListRead): Promise<Record<string, unknown>> {
  const found: Record<string, unknown> = {};
  const seen: string[] = [];
  let next: string | null = r.list;
  while (next && seen.length < MAX_PAGES && !seen.includes(next)) {
    seen.push(next);
    const page: { body: Record<string, unknown> } = await api("GET", next, { what: `list for ${r.what}`, source: r.source });
    const items = page.body?.[r.field];
    if (!Array.isArray(items)) break;
    for (const item of items) {
      try {
        checkAnswer(item, r.expect, r.what);
        found[(item as { id: string }).id] = item;
      } catch {
        // its own GET will tell
      }
    }
    const nextUri = page.body.next_page_uri;
    next = typeof nextUri === "string" && nextUri ? nextUri : null;
  }
  return found;
}
