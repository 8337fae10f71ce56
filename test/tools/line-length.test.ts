// No line over 120 characters in the shipped code: prettier keeps code within 120 columns (npm run lint checks it),
// but wraps neither comments nor strings; `npm run format` (scripts/wrap-long.js) does, and this holds it.
import * as fs from "node:fs";
import * as path from "node:path";
import { expect, it } from "vitest";
import { REPO } from "../helpers/emulator";

const MAX = 120;
const DIRS = ["provider", "plugin", "sdk", "emulator", "contract", "policy", "tools"];

function sources(dir: string): string[] {
  return fs.readdirSync(path.join(REPO, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    return e.isDirectory() ? sources(rel) : /\.[cm]?[jt]s$/.test(e.name) ? [rel] : [];
  });
}

it(`no line over ${MAX} characters in ${DIRS.join("/, ")}/`, () => {
  const files = DIRS.flatMap(sources);
  expect(files.length).toBeGreaterThan(70);
  const long = files.flatMap((file) =>
    fs
      .readFileSync(path.join(REPO, file), "utf8")
      .split("\n")
      .flatMap((line, i) => (line.length > MAX ? [`${file}:${i + 1}: ${line.length} characters`] : [])),
  );
  expect(long, "npm run format wraps comments and strings; the rest is a hand fix").toEqual([]);
});
