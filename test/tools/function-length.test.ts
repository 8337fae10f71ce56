// No function over 60 lines in provider/, plugin/ and sdk/: one that grows past it does several
// things, and each of them wants a name. Counted from its first line to its last, by the compiler's own parse.
// Lines alone can be cheated by packing them (prettier's 120 columns hold a function's layout now), so a function
// is bounded by its size too: at most 50 statements, and at most 2,600 characters of code (not counting
// whitespace and comments, so a change of layout or a longer comment moves neither).
import * as fs from "node:fs";
import * as path from "node:path";
import ts from "typescript";
import { expect, it } from "vitest";
import { REPO } from "../helpers/emulator";

const MAX_LINES = 60;
const MAX_STATEMENTS = 50;
const MAX_CHARACTERS = 2600;

function sources(dir: string): string[] {
  return fs.readdirSync(path.join(REPO, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    return e.isDirectory() ? sources(rel) : e.name.endsWith(".ts") ? [rel] : [];
  });
}

interface Size {
  lines: number;
  statements: number;
  characters: number;
}

/** A function's size: its lines, its statements (nested functions' included), its code's characters. */
function sizeOf(node: ts.Node, source: ts.SourceFile): Size {
  const text = source.text;
  const start = node.getStart(source);
  const comments = new Map<number, number>();
  let statements = 0;
  const visit = (n: ts.Node) => {
    if (n.kind >= ts.SyntaxKind.FirstStatement && n.kind <= ts.SyntaxKind.LastStatement) statements++;
    const ranges = [
      ...(ts.getLeadingCommentRanges(text, n.pos) ?? []),
      ...(ts.getTrailingCommentRanges(text, n.end) ?? []),
    ];
    for (const r of ranges) {
      if (r.pos >= start && r.end <= node.end) comments.set(r.pos, text.slice(r.pos, r.end).replace(/\s/g, "").length);
    }
    n.getChildren(source).forEach(visit);
  };
  visit(node);
  const commentChars = [...comments.values()].reduce((a, b) => a + b, 0);
  const first = source.getLineAndCharacterOfPosition(start).line;
  const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
  return {
    lines: last - first + 1,
    statements,
    characters: node.getText(source).replace(/\s/g, "").length - commentChars,
  };
}

/** Each function of a file with a body, named, with its size. */
function functionsOf(file: string): { name: string; size: Size }[] {
  const text = fs.readFileSync(path.join(REPO, file), "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: { name: string; size: Size }[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      const parent = node.parent;
      const name =
        node.name?.getText(source) ?? (ts.isVariableDeclaration(parent) ? parent.name.getText(source) : "(anonymous)");
      found.push({ name: `${file}:${line} ${name}`, size: sizeOf(node, source) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const all = () => ["provider", "plugin", "sdk"].flatMap(sources).flatMap(functionsOf);

it(`no function over ${MAX_LINES} lines in provider/, plugin/, sdk/`, () => {
  const functions = all();
  expect(functions.length).toBeGreaterThan(200);
  const long = functions.filter((f) => f.size.lines > MAX_LINES).map((f) => `${f.name}: ${f.size.lines} lines`);
  expect(long).toEqual([]);
});

it(`no function over ${MAX_STATEMENTS} statements or ${MAX_CHARACTERS} characters of code in the same`, () => {
  const big = all()
    .filter((f) => f.size.statements > MAX_STATEMENTS || f.size.characters > MAX_CHARACTERS)
    .map((f) => `${f.name}: ${f.size.statements} statements, ${f.size.characters} characters`);
  expect(big).toEqual([]);
});

it("counts statements and characters of code, not layout or comments", () => {
  const measure = (code: string) => {
    const source = ts.createSourceFile("x.ts", code, ts.ScriptTarget.Latest, true);
    const fn = source.statements[0];
    return sizeOf(fn, source);
  };
  const packed = measure("function f(a: number) { const b = a + 1; if (b) return b; return 0; }");
  const spread = measure(
    "function f(a: number) {\n  // why\n  const b =\n    a + 1; /* note */\n  if (b) return b;\n  return 0;\n}",
  );
  expect(packed).toEqual({ lines: 1, statements: 4, characters: 53 });
  expect(spread).toEqual({ ...packed, lines: 7 });
});
