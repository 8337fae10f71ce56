#!/usr/bin/env node
// `npm run format` (before `prettier --write .`): brings the lines of the shipped code under prettier's 120 columns
// where prettier leaves them long, since it wraps neither comments nor strings. Each file is formatted with prettier,
// then, for each line still over 120 characters:
//   - a `//` comment block or a JSDoc line is re-wrapped (words carried into the next line of the same paragraph;
//     a one-line `/** … */` becomes a block);
//   - a `//` comment after code moves to its own line above that code;
//   - a string or template literal is split at a space (or at a `${`) into a concatenation, which prettier then
//     breaks over lines;
// and the file is formatted again, until nothing changes. Deterministic: the same text in gives the same text out,
// and a file with no long line is only formatted. What it cannot shorten (code, a word over 120) it prints, for a
// hand fix. Usage: node scripts/wrap-long.js [dir-or-file ...] (default: the shipped code's folders).
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const prettier = require("prettier");
const ts = require("typescript");

const REPO = path.resolve(__dirname, "..");
const MAX = 120;
const DIRS = ["provider", "plugin", "sdk", "emulator", "contract", "policy", "tools"];
const PASSES = 12;

function files(target) {
  const full = path.resolve(REPO, target);
  if (fs.statSync(full).isFile()) return [full];
  return fs
    .readdirSync(full, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) =>
      e.isDirectory() ? files(path.join(full, e.name)) : /\.[cm]?[jt]s$/.test(e.name) ? [path.join(full, e.name)] : [],
    );
}

/** Every comment of a source file, as [start, end, kind], found through the parser (never inside a string). */
function comments(source) {
  const text = source.text;
  const seen = new Map();
  const add = (ranges) => ranges?.forEach((r) => seen.set(r.pos, [r.pos, r.end, r.kind]));
  const visit = (node) => {
    add(ts.getLeadingCommentRanges(text, node.pos));
    add(ts.getTrailingCommentRanges(text, node.end));
    node.getChildren(source).forEach(visit);
  };
  visit(source);
  return [...seen.values()].sort((a, b) => a[0] - b[0]);
}

const DIRECTIVE = /^(eslint-|@ts-|prettier-ignore|\/ <reference)/;
const ITEM = /^([-*]|\d+[.)])\s+/;

/** Re-wraps a run of comment lines (one marker and indent): a line over 120 is cut at its last space that fits, and
 * the words cut off go to the start of the next line when that line goes on the same paragraph, else on a line of
 * their own (the paragraph's last two lines then balanced, rather than a word left alone). Directives
 * (eslint-disable…) are never cut, and list items, tags and fences start paragraphs. */
function wrapLines(lines) {
  const out = [];
  const put = (prefix, lead, text) => {
    if (prefix.length + lead.length + text.length <= MAX) return void out.push(prefix + lead + text);
    const item = ITEM.exec(text);
    let rest = text;
    let at = lead;
    const first = out.length;
    for (;;) {
      const room = MAX - prefix.length - at.length;
      let cut = rest.lastIndexOf(" ", room);
      if (cut <= 0) cut = rest.indexOf(" ", room);
      const after = out.length > first ? out.length - 1 : -1;
      if (prefix.length + at.length + rest.length <= MAX || cut <= 0) return { prefix, lead: at, rest, after };
      out.push(prefix + at + rest.slice(0, cut).trimEnd());
      rest = rest.slice(cut + 1).trimStart();
      if (item && at === lead) at = lead + " ".repeat(item[0].length);
    }
  };
  let carry;
  for (const line of lines) {
    const [, prefix, lead, text] = /^(\s*(?:\/\/|\*))(\s*)(.*)$/.exec(line);
    const plain = text && !ITEM.test(text) && !DIRECTIVE.test(text) && !text.startsWith("```") && !text.startsWith("@");
    if (carry && plain && carry.prefix === prefix && carry.lead === lead) {
      carry = put(prefix, lead, `${carry.rest} ${text}`);
      continue;
    }
    if (carry) flush(carry);
    carry = line.length <= MAX || DIRECTIVE.test(text) ? void out.push(line) : put(prefix, lead, text);
  }
  if (carry) flush(carry);
  return out;

  /** The words left over, on a line of their own: balanced with the line before when they are few. */
  function flush(c) {
    const m = c.after === out.length - 1 && /^(\s*(?:\/\/|\*))(\s*)(.*)$/.exec(out[c.after]);
    if (m && c.rest.length < (MAX - c.prefix.length - c.lead.length) / 3) {
      const words = `${m[3]} ${c.rest}`;
      let best;
      for (let i = words.indexOf(" "); i > 0; i = words.indexOf(" ", i + 1)) {
        const a = m[1] + m[2] + words.slice(0, i).trimEnd();
        const b = c.prefix + c.lead + words.slice(i + 1).trimStart();
        const d = Math.abs(a.length - b.length);
        if (a.length <= MAX && b.length <= MAX && (!best || d < best.d)) best = { a, b, d };
      }
      if (best) return void out.splice(c.after, 1, best.a, best.b);
    }
    out.push(c.prefix + c.lead + c.rest);
  }
}

/** The literal kinds a split applies to, and the places where a concatenation cannot stand. */
function splittable(node) {
  if (!ts.isStringLiteral(node) && !ts.isNoSubstitutionTemplateLiteral(node) && !ts.isTemplateExpression(node))
    return false;
  const p = node.parent;
  if (!p) return false;
  if (ts.isImportDeclaration(p) || ts.isExportDeclaration(p) || ts.isExternalModuleReference(p)) return false;
  if (
    ts.isLiteralTypeNode(p) ||
    ts.isModuleDeclaration(p) ||
    ts.isImportTypeNode(p) ||
    ts.isTaggedTemplateExpression(p)
  )
    return false;
  if (ts.isExpressionStatement(p)) return false;
  if (
    (ts.isPropertyAssignment(p) ||
      ts.isPropertySignature(p) ||
      ts.isEnumMember(p) ||
      ts.isPropertyDeclaration(p) ||
      ts.isMethodDeclaration(p)) &&
    p.name === node
  )
    return false;
  if (ts.isElementAccessExpression(p) && p.argumentExpression === node) return true;
  if (ts.isAsExpression(p) || ts.isSatisfiesExpression(p) || ts.isTypeAssertionExpression(p)) return false;
  return !node.getText().includes("\n");
}

/** Whether `"a" + "b"` in the literal's place needs parentheses to mean the same string (prettier keeps them). */
function needsParens(node) {
  const p = node.parent;
  if (ts.isBinaryExpression(p)) {
    const op = p.operatorToken.kind;
    const K = ts.SyntaxKind;
    return [K.AsteriskToken, K.SlashToken, K.PercentToken, K.AsteriskAsteriskToken, K.MinusToken].includes(op);
  }
  if (ts.isCallExpression(p) || ts.isNewExpression(p)) return p.expression === node;
  return !(
    ts.isVariableDeclaration(p) ||
    ts.isPropertyAssignment(p) ||
    ts.isReturnStatement(p) ||
    ts.isThrowStatement(p) ||
    ts.isArrayLiteralExpression(p) ||
    ts.isConditionalExpression(p) ||
    ts.isParenthesizedExpression(p) ||
    ts.isArrowFunction(p) ||
    ts.isSpreadElement(p) ||
    ts.isParameter(p) ||
    ts.isPropertyDeclaration(p) ||
    ts.isBindingElement(p) ||
    ts.isCaseClause(p)
  );
}

/** Where a literal may be cut (offsets in the file): after a space of its text, or before a `${`. */
function cuts(node, text) {
  const spans = [];
  if (ts.isTemplateExpression(node)) {
    spans.push([node.head.getStart() + 1, node.head.end - 2]);
    for (const s of node.templateSpans) {
      const lit = s.literal;
      spans.push([lit.getStart() + 1, lit.end - (ts.isTemplateTail(lit) ? 1 : 2)]);
    }
  } else spans.push([node.getStart() + 1, node.end - 1]);
  const found = [];
  for (const [from, to] of spans) {
    for (let i = from + 1; i <= to; i++) {
      if (text[i - 1] !== " ") continue;
      let slashes = 0;
      while (text[i - 2 - slashes] === "\\") slashes++;
      if (slashes % 2 === 0) found.push(i);
    }
    if (ts.isTemplateExpression(node) && to < node.end - 1) found.push(to); // before a `${`
  }
  return found.sort((a, b) => a - b);
}

function lineStarts(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === "\n") starts.push(i + 1);
  return starts;
}

/** One pass over a formatted text: the edits for its long lines, applied from the end. */
function pass(file, text) {
  const source = ts.createSourceFile(
    file,
    text,
    ts.ScriptTarget.Latest,
    true,
    file.endsWith(".js") ? ts.ScriptKind.JS : ts.ScriptKind.TS,
  );
  const lines = text.split("\n");
  const starts = lineStarts(text);
  const all = comments(source);
  const commentAt = (pos) => all.find(([s, e]) => s <= pos && pos < e);
  const edits = []; // { from, to, lines }: lines from..to-1 replaced; { offset, insert, wrap }: a literal cut
  const left = [];
  const done = new Set();
  for (let n = 0; n < lines.length; n++) {
    if (lines[n].length <= MAX || done.has(n)) continue;
    const indent = /^\s*/.exec(lines[n])[0];
    const first = starts[n] + indent.length;
    const own = commentAt(first);
    if (own) {
      const block = commentBlock(lines, n, own, starts, text);
      if (block) {
        for (let k = block.from; k < block.to; k++) done.add(k);
        edits.push({ from: block.from, to: block.to, lines: block.lines });
        continue;
      }
    }
    const trailing = all.find(
      ([s, e, kind]) =>
        kind === ts.SyntaxKind.SingleLineCommentTrivia &&
        s > first &&
        s < starts[n] + lines[n].length &&
        e <= starts[n] + lines[n].length,
    );
    if (trailing && !DIRECTIVE.test(text.slice(trailing[0] + 2).trim())) {
      const code = text.slice(starts[n], trailing[0]).trimEnd();
      const moved = indent + text.slice(trailing[0], trailing[1]).trim();
      // Above the line's eslint-disable-next-line (or other directive), which must stay next to the line.
      let above = n;
      const directive = (line) => line.startsWith("//") && DIRECTIVE.test(line.slice(2).trim());
      while (above > 0 && directive(lines[above - 1].trim())) above--;
      edits.push({ from: above, to: n + 1, lines: [moved, ...lines.slice(above, n), code] });
      done.add(n);
      continue;
    }
    const cut = stringCut(source, text, starts[n], lines[n].length);
    if (cut) {
      edits.push({ offset: cut.at, insert: cut.insert, wrap: cut.wrap });
      done.add(n);
      continue;
    }
    left.push(`${path.relative(REPO, file)}:${n + 1}: ${lines[n].length} characters`);
  }
  if (!edits.length) return { text, left };
  // Line edits first (as lines), then offset edits would shift: do one kind per pass, lines first.
  const lineEdits = edits.filter((e) => e.lines);
  if (lineEdits.length) {
    const out = [...lines];
    for (const e of lineEdits.sort((a, b) => b.from - a.from)) out.splice(e.from, e.to - e.from, ...e.lines);
    return { text: out.join("\n"), left };
  }
  let out = text;
  for (const e of edits.sort((a, b) => b.offset - a.offset)) {
    out = out.slice(0, e.offset) + e.insert + out.slice(e.offset);
    if (!e.wrap) continue;
    const [s, end] = e.wrap;
    out = out.slice(0, s) + "(" + out.slice(s, end + e.insert.length) + ")" + out.slice(end + e.insert.length);
  }
  return { text: out, left };
}

/** The whole-line comment run a long line is in, re-wrapped; undefined when it cannot be. */
function commentBlock(lines, n, range, starts, text) {
  const [start, end, kind] = range;
  if (kind === ts.SyntaxKind.SingleLineCommentTrivia) {
    const indent = /^\s*/.exec(lines[n])[0];
    const isLine = (k) =>
      k >= 0 && k < lines.length && lines[k].startsWith(indent + "//") && !lines[k].startsWith(indent + "///");
    let from = n;
    while (isLine(from - 1)) from--;
    let to = n + 1;
    while (isLine(to)) to++;
    const wrapped = wrapLines(lines.slice(from, to));
    return same(wrapped, lines.slice(from, to)) ? undefined : { from, to, lines: wrapped };
  }
  // A block comment: its lines from the one with `/*` to the one with `*/`.
  const from = lineOf(starts, start);
  const to = lineOf(starts, end - 1) + 1;
  const indent = /^\s*/.exec(lines[from])[0];
  const body = text.slice(start, end);
  const one = /^\/\*\*\s*(.*?)\s*\*\/$/.exec(body);
  if (one && from + 1 === to && lines[from].trim() === body) {
    const wrapped = wrapLines([`${indent} * ${one[1]}`]);
    return { from, to, lines: [`${indent}/**`, ...wrapped, `${indent} */`] };
  }
  if (!body.startsWith("/*") || lines[from].trim() !== body.split("\n")[0].trim()) return undefined;
  const inner = lines.slice(from + 1, to - 1);
  const lastLine = lines[to - 1];
  if (lastLine.trim() !== "*/" || !inner.every((l) => /^\s*\*( |$)/.test(l))) return undefined;
  const wrapped = wrapInner(inner);
  return same(wrapped, inner) ? undefined : { from, to, lines: [lines[from], ...wrapped, lastLine] };
}

/** A block's ` * ` lines: each run of prose between blank lines and code fences is one paragraph. */
function wrapInner(inner) {
  const out = [];
  let fenced = false;
  let run = [];
  const flush = () => {
    out.push(...wrapLines(run));
    run = [];
  };
  for (const l of inner) {
    const text = l.replace(/^\s*\*\s?/, "");
    if (text.startsWith("```")) {
      flush();
      fenced = !fenced;
      out.push(l);
    } else if (fenced) out.push(l);
    else run.push(l);
  }
  flush();
  return out;
}

const same = (a, b) => a.length === b.length && a.every((l, i) => l === b[i]);

function lineOf(starts, offset) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The split of the outermost literal that runs past column 120 on a line: where, and the text put in. */
function stringCut(source, text, lineStart, length) {
  const limit = lineStart + MAX;
  let found;
  const visit = (node) => {
    if (found || node.end <= lineStart || node.getStart(source) >= lineStart + length) return;
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) {
      // A literal that reaches the last columns (a `,`, `;` or `)` may follow it).
      if (node.end > limit - 4 && splittable(node)) {
        const start = node.getStart(source);
        const quote = text[start];
        // Room on the line for the closing quote and ` +`.
        const ok = cuts(node, text).filter((c) => c - lineStart + 3 <= MAX && c - start > 12 && c < node.end - 2);
        if (ok.length && start >= lineStart) {
          const at = ok[ok.length - 1];
          found = { at, insert: `${quote} + ${quote}`, wrap: needsParens(node) ? [start, node.end] : undefined };
        }
      }
      return; // the literals inside a template's `${}` stay as they are
    }
    node.getChildren(source).forEach(visit);
  };
  visit(source);
  return found;
}

async function formatFile(file) {
  const original = fs.readFileSync(file, "utf8");
  const options = { ...(await prettier.resolveConfig(file)), filepath: file };
  let text = await prettier.format(original, options);
  let left = [];
  for (let i = 0; i < PASSES; i++) {
    const next = pass(file, text);
    left = next.left;
    if (next.text === text) break;
    text = await prettier.format(next.text, options);
  }
  if (text !== original) fs.writeFileSync(file, text);
  return { changed: text !== original, left };
}

async function main() {
  const targets = process.argv.slice(2);
  const list = (targets.length ? targets : DIRS).flatMap(files);
  let changed = 0;
  const left = [];
  for (const file of list) {
    const r = await formatFile(file);
    if (r.changed) changed++;
    left.push(...r.left);
  }
  console.log(`wrap-long: ${list.length} files, ${changed} changed, ${left.length} lines over ${MAX} left`);
  for (const l of left) console.log(`  ${l}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
