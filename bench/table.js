// The bench's printed tables: Markdown, each column padded to its widest cell, so that a table reads
// in a terminal and pastes into docs/performance.md as it is.
"use strict";

/** A number with `d` decimals; anything else as text. */
const fmt = (x, d = 1) => (typeof x === "number" ? x.toFixed(d) : String(x));

/** Prints `header` (the column titles) and `rows` (arrays of cells, one a column) as a Markdown table. */
function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(widths[i])).join(" | ")} |`;
  console.log([line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n"));
}

module.exports = { fmt, table };
