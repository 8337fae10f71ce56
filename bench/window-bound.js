// The bound of a command's requests at the service's limit, exactly: the least time the rolling window
// (120 requests per 60 s) allows for the requests it accepted, from the first, given what the window
// still held of the requests before (another command's, which the new process's limiter cannot know).
// From the emulator's log: each line "<ISO time> <METHOD> <path> <status> <id> <ms>ms", logged when
// answered; the request arrived <ms> before. `node bench/window-bound.js <results-walks.json> <log>`
// recomputes the walks rows of a run whose JSON predates these fields from its emulator log
// (BENCH_EMULATOR_LOG): the rows' requests, in order, split the log; `--write` adds the fields to the JSON.
"use strict";
const fs = require("node:fs");

/** The requests of an emulator log, in order: arrival (ms), answer (ms), status, and whether a first page of the rules list. */
function requests(text) {
  const line = /^(\S+) (GET|POST|PUT|PATCH|DELETE) (\S+) (\d{3}) \S+ (\d+)ms$/;
  return text
    .split("\n")
    .map((l) => line.exec(l))
    .filter(Boolean)
    .map((m) => {
      const answered = Date.parse(m[1]);
      return { arrived: answered - Number(m[5]), answered, status: Number(m[4]), path: m[3], method: m[2] };
    });
}

/**
 * The least seconds from `start` to the last of `n` more accepted requests, at most `perWindow` in
 * any `windowMs`, given the arrival times `prior` of those accepted before.
 */
function windowBound(prior, n, start, perWindow = 120, windowMs = 60_000) {
  const ring = prior
    .filter((t) => t > start - windowMs && t <= start)
    .sort((a, b) => a - b)
    .slice(-perWindow);
  let t = start;
  for (let i = 0; i < n; i++) {
    if (ring.length >= perWindow) t = Math.max(t, ring[ring.length - perWindow] + windowMs);
    ring.push(t);
  }
  return (t - start) / 1000;
}

/** One command's requests (`op`, after `before`): the window's bound of those accepted, and their span (first arrival to last answer, s). */
function opBound(before, op) {
  const accepted = op.filter((r) => r.status !== 429);
  if (op.length === 0) return { boundSeconds: 0, spanSeconds: 0 };
  const start = Math.min(...op.map((r) => r.arrived));
  const prior = before.filter((r) => r.status !== 429).map((r) => r.arrived);
  const span = (Math.max(...op.map((r) => r.answered)) - start) / 1000;
  return { boundSeconds: windowBound(prior, accepted.length, start), spanSeconds: span };
}

module.exports = { requests, windowBound, opBound };

if (require.main === module) {
  const [json, log, write] = process.argv.slice(2);
  const results = JSON.parse(fs.readFileSync(json, "utf8"));
  // The log holds every session's lines one after another (appended when its emulator stopped).
  let all = requests(fs.readFileSync(log, "utf8"));
  for (const row of results.walks ?? []) {
    const session = all.slice(
      0,
      row.ops.reduce((sum, o) => sum + o.requests, 0),
    );
    all = all.slice(session.length);
    let at = 0;
    for (const o of row.ops) {
      const { boundSeconds, spanSeconds } = opBound(session.slice(0, at), session.slice(at, at + o.requests));
      at += o.requests;
      if (write === "--write" && o.emptyWindowBoundSeconds === undefined)
        Object.assign(o, { spanSeconds, boundSeconds, emptyWindowBoundSeconds: o.boundSeconds });
      console.log(
        `${row.size} rules, ${o.op}: ${o.requests} requests, ${o.seconds.toFixed(1)} s (span ${spanSeconds.toFixed(1)} s), bound ${boundSeconds.toFixed(1)} s: ${(o.seconds / boundSeconds).toFixed(2)} (span ${(spanSeconds / boundSeconds).toFixed(2)})`,
      );
    }
  }
  if (write === "--write") fs.writeFileSync(json, JSON.stringify(results, null, 2) + "\n");
}
