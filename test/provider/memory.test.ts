// provider/memory.ts: an operation that grew the heap by GROWTH_BYTES collects when it ends (and again
// after the host's answer); a small one costs nothing.
import { describe, expect, it } from "vitest";
import { compiled } from "../helpers/provider";

const memory = compiled("provider/memory.js");
const { inOperation } = compiled("provider/operation.js");
const { processState } = compiled("provider/state.js");
const v8 = require("node:v8") as typeof import("node:v8");

const used = () => v8.getHeapStatistics().used_heap_size;
const record = () => processState("memory", () => ({ base: 0 })) as { base: number; pending?: boolean };
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
