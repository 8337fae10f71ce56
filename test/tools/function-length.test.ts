// No function over 60 lines in provider/, plugin/ and sdk/: one that grows past it does several
// things, and each of them wants a name. Counted from its first line to its last, by the compiler's own parse.
import * as fs from "node:fs";
import * as path from "node:path";
import ts from "typescript";
import { expect, it } from "vitest";
import { REPO } from "../helpers/emulator";

const MAX_LINES = 60;

function sources(dir: string): string[] {
  return fs.readdirSync(path.join(REPO, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    return e.isDirectory() ? sources(rel) : e.name.endsWith(".ts") ? [rel] : [];
  });
}

function longFunctions(file: string): string[] {
  const source = ts.createSourceFile(file, fs.readFileSync(path.join(REPO, file), "utf8"), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      const name = node.name?.getText(source) ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText(source) : "(anonymous)");
      if (lines > MAX_LINES) found.push(`${file}:${first + 1} ${name}: ${lines} lines`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

it(`no function over ${MAX_LINES} lines in provider/, plugin/, sdk/`, () => {
  const files = ["provider", "plugin", "sdk"].flatMap(sources);
  expect(files.length).toBeGreaterThan(20);
  expect(files.flatMap(longFunctions)).toEqual([]);
});
