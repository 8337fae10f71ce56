// Collecting after a large operation. Each call of a host carries the resource's inputs and outputs
// both ways: for a set of 5,000 rules, the dynamic-provider host (Pulumi's code, which we do not
// choose) makes 40 MB of google-protobuf messages of a request and as much of its response, and
// about as much garbage again for each, in one synchronous run each. V8 collects the old generation
// only when it reaches a limit set from what the last full collection kept (up to 4 times that), so
// the garbage of one call stayed through the next ones: a `preview --refresh` of 5,000 rules (Read,
// the engine's Diff after it, Check, Diff) peaked at 478 MB, though no call holds more than about
// 60 MB that it needs. So an operation that grew the heap by more than GROWTH_BYTES since the last
// collection here collects (a full collection: 50 to 200 ms at these sizes), twice: when it ends,
// before the host turns its result into messages (what it read and decoded is garbage by then), and
// once the host has sent the answer, before the next request (what the host made of it is garbage
// then). Smaller operations (every other resource, a set of a few hundred rules) never reach it and
// cost nothing. docs/performance.md ("Memory of a set of 5,000 rules") has the figures.
// V8 exposes a collection to scripts only with --expose-gc, which a host's node (Pulumi's launcher
// for the dynamic host) is not given: the flag is set when first needed, and the function taken
// from a new context, where it then exists (the main context's globals are as they were).
import * as v8 from "node:v8";
import * as vm from "node:vm";
import { processState } from "./state";

/** What an operation must have grown the heap by, since the last collection here, to collect. */
export const GROWTH_BYTES = 32 * 2 ** 20;
/** What the old generation must have grown by, since the last collection here, to collect within an operation. */
export const WITHIN_BYTES = 8 * 2 ** 20;

interface Collector {
  gc?: () => void;
  /**
   * Bytes of heap in use after the last collection here (none yet: 0,
   * so that the first operation over GROWTH_BYTES of heap collects).
   */
  base: number;
  /** A collection is set for when the host has sent an answer. */
  pending?: boolean;
  /** Bytes of the old generation in use after the last collection here (none yet: counted from the first look). */
  oldBase?: number;
}

function collector(): Collector {
  return processState<Collector>("memory", () => ({ base: 0 }));
}

const used = () => v8.getHeapStatistics().used_heap_size;
/** Bytes in use of the old generation: what outlived two young collections, and stays until a full one. */
const oldUsed = () =>
  v8
    .getHeapSpaceStatistics()
    .filter((s) => s.space_name === "old_space" || s.space_name === "large_object_space")
    .reduce((n, s) => n + s.space_used_size, 0);

function collect(c: Collector): void {
  if (!c.gc) {
    v8.setFlagsFromString("--expose-gc");
    c.gc = vm.runInNewContext("gc") as () => void;
  }
  c.gc();
  c.base = used();
  c.oldBase = oldUsed();
}

/** Collects now if the heap grew by GROWTH_BYTES since the last collection here. */
export function collectIfGrown(): void {
  const c = collector();
  if (used() - c.base < GROWTH_BYTES) return;
  collect(c);
}

/**
 * Within an operation of many requests (a set's apply: 5,000 creates or deletes), after each: collects
 * if the old generation grew by WITHIN_BYTES since the last collection here. What each request leaves
 * (its answer's text, the parsed body, the promise chain) outlives the young collections of a long
 * run and stayed until the operation ended: 18 MB of old generation over 5,000 creates, on top of
 * the host's messages of the request. Young garbage is not counted (it costs no new memory), so a
 * collection (tens of ms) comes once per 8 MB of old growth at most.
 */
export function collectWithin(): void {
  const c = collector();
  const old = oldUsed();
  if (c.oldBase === undefined) c.oldBase = old;
  else if (old - c.oldBase >= WITHIN_BYTES) collect(c);
}

/**
 * After an operation: collect now if it grew the heap enough, and
 * again once the host has turned its result into an answer and sent it.
 */
export function afterOperation(): void {
  collectIfGrown();
  const c = collector();
  if (c.pending) return;
  c.pending = true;
  // The host's answer is made in the continuation of the operation's promise (microtasks) and written
  // in the same turn: an immediate runs after it.
  setImmediate(() => {
    c.pending = false;
    collectIfGrown();
  });
}

/**
 * WebAssembly compiled by Liftoff only, set before the HTTP client's first connection (transport.ts).
 * undici parses HTTP with llhttp compiled to WebAssembly, and V8 recompiles its hot functions with
 * TurboFan on background threads; what those threads take from malloc stays in the process's resident
 * memory: 10 to 14 MB after the 50 pages of a 5,000-rule listing (issue 40; docs/performance.md, "Memory
 * of a set of 5,000 rules"). Liftoff's code parses the few MB a command reads fast enough. The flag is
 * V8's, for the whole process: no other WebAssembly runs in a provider process.
 */
export function liftoffOnly(): void {
  const wasm = processState<{ liftoffOnly?: true }>("wasm", () => ({}));
  if (wasm.liftoffOnly) return;
  v8.setFlagsFromString("--liftoff-only");
  wasm.liftoffOnly = true;
}
