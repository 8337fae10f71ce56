// The bench's bound of a command's requests (bench/window-bound.js): the rolling window's least time,
// given what the window still held of the commands before.
import * as path from "node:path";
import { createRequire } from "node:module";
import { expect, it } from "vitest";
import { REPO } from "../helpers/emulator";

const { windowBound, opBound, requests } = createRequire(import.meta.url)(path.join(REPO, "bench/window-bound.js"));

it("from an empty window: 120 at once, then 120 a minute (60·⌊(N−1)/120⌋ s)", () => {
  expect(windowBound([], 120, 0)).toBe(0);
  expect(windowBound([], 121, 0)).toBe(60);
  expect(windowBound([], 502, 0)).toBe(240);
});

it("a window the command before filled at 2 a second: N more take N/2 s, not a burst", () => {
  const prior = Array.from({ length: 120 }, (_, i) => -60_000 + 500 * (i + 1));
  expect(windowBound(prior, 204, 0)).toBe(102);
  // Requests that left the window before the start do not count.
  expect(
    windowBound(
      prior.map((t) => t - 60_000),
      120,
      0,
    ),
  ).toBe(0);
});

it("reads the emulator's log: arrivals are answers less their ms; 429s are not counted by the window", () => {
  const log = [
    "2026-11-28T00:00:00.100Z GET /ip_policy_rules 200 op_1 100ms",
    "2026-11-28T00:00:00.300Z GET /ip_policy_rules?… 429 op_2 10ms",
    "emulator: SIGTERM, shutting down",
  ].join("\n");
  const all = requests(log);
  expect(all.map((r: { arrived: number }) => r.arrived - Date.parse("2026-11-28T00:00:00Z"))).toEqual([0, 290]);
  expect(opBound([], all)).toEqual({ boundSeconds: 0, spanSeconds: 0.3 });
});
