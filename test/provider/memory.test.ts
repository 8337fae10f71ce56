// provider/memory.ts: an operation that grew the heap by GROWTH_BYTES collects when it ends (and again
// after the host's answer); a small one costs nothing.
import * as http from "node:http";
import { describe, expect, it, vi } from "vitest";
import v8 from "node:v8";
import { compiled } from "../helpers/provider";

const memory = compiled("provider/memory.js");
const { inOperation } = compiled("provider/operation.js");
const { processState } = compiled("provider/state.js");

const used = () => v8.getHeapStatistics().used_heap_size;
type Collector = { base: number; pending?: boolean; oldBase?: number };
const record = () => processState("memory", () => ({ base: 0 })) as Collector;
/** About `mb` MB of objects, alive until the caller lets go. */
const junk = (mb: number) => Array.from({ length: mb * 8_000 }, (_, i) => ({ i, text: `rule ${i} `.repeat(8) }));

describe("collecting after a large operation", () => {
  it("collects when an operation grew the heap by GROWTH_BYTES (what it read is garbage once it ends)", async () => {
    expect(memory.GROWTH_BYTES).toBe(32 * 2 ** 20);
    memory.collectIfGrown();
    const before = record().base;
    await inOperation(async () => {
      const read = junk(40);
      return read.length; // garbage from here on
    });
    expect(record().base).not.toBe(before); // collected
    expect(used()).toBeLessThan(record().base + memory.GROWTH_BYTES);
  });

  it("collects again once the host has made and sent its answer (what it made of the result is garbage then)", async () => {
    await inOperation(async () => 1);
    const base = record().base;
    let answer: unknown[] | undefined = junk(40); // the host's messages of the result, in the same turn
    expect(answer.length).toBeGreaterThan(0);
    // eslint-disable-next-line no-useless-assignment -- dropping the reference is the point: it becomes garbage
    answer = undefined;
    await new Promise((r) => setImmediate(r));
    expect(record().pending).toBe(false);
    expect(record().base).not.toBe(base);
    expect(used()).toBeLessThan(record().base + memory.GROWTH_BYTES);
  });

  it("leaves a small operation alone (no collection: the base stays)", async () => {
    memory.collectIfGrown();
    const base = record().base;
    await inOperation(async () => void junk(1));
    await new Promise((r) => setImmediate(r));
    expect(record().base).toBe(base);
  });
});

describe("collecting within an operation of many requests", () => {
  it("collects once the old generation grew by WITHIN_BYTES since the last collection, not before", () => {
    expect(memory.WITHIN_BYTES).toBe(8 * 2 ** 20);
    record().oldBase = undefined;
    memory.collectWithin(); // the first look: counted from here
    const first = record().oldBase;
    expect(first).toBeGreaterThan(0);
    const small = junk(1);
    memory.collectWithin();
    expect(record().oldBase).toBe(first); // under WITHIN_BYTES: no collection
    const kept = [junk(12), junk(12)]; // alive through young collections: promoted to the old generation
    memory.collectWithin();
    expect(record().oldBase).not.toBe(first); // collected, and counted from what it kept
    expect(kept.length + small.length).toBeGreaterThan(0);
  });
});

describe("WebAssembly by Liftoff only", () => {
  it("sets V8's --liftoff-only once a process", () => {
    const wasm = processState("wasm", () => ({})) as { liftoffOnly?: true };
    delete wasm.liftoffOnly;
    const set = vi.spyOn(v8, "setFlagsFromString");
    try {
      memory.liftoffOnly();
      memory.liftoffOnly();
      expect(set.mock.calls.filter(([flag]) => flag === "--liftoff-only")).toHaveLength(1);
    } finally {
      set.mockRestore();
    }
  });

  it("is set by the HTTP client before its first connection (undici compiles its parser then)", async () => {
    const wasm = processState("wasm", () => ({})) as { liftoffOnly?: true };
    delete wasm.liftoffOnly;
    processState("http-transport", () => ({ silent: {} })).agent = undefined;
    const server = http.createServer((_req, res) => res.end("{}"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const { attempt } = compiled("provider/http/transport.js");
      const url = new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
      const got = await attempt("GET", url, {}, undefined, { what: "read" }, 10_000, []);
      expect(got.response?.status).toBe(200);
      expect(wasm.liftoffOnly).toBe(true);
    } finally {
      server.close();
    }
  });
});
