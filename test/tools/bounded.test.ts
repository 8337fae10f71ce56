// provider/bounded/<module>.ts are what the dynamic host serializes (their paths are in users' states, so
// they stay files of their own); they are one text with the module's name put in. A change made to one and
// not to the others fails here.
import * as fs from "node:fs";
import * as path from "node:path";
import { expect, it } from "vitest";
import { REPO } from "../helpers/emulator";

const DIR = path.join(REPO, "provider", "bounded");

/** The text every bounded module has, with its module's name put in. */
function expected(module: string): string {
  const first = fs.readFileSync(path.join(DIR, "api-key.ts"), "utf8");
  return first.replaceAll("../api-key", `../${module}`);
}

it("each provider/bounded/<module>.ts is the same text with its module's name, one per resource module", () => {
  const files = fs
    .readdirSync(DIR)
    .filter((f) => f.endsWith(".ts"))
    .sort();
  expect(files).toEqual(["api-key.ts", "ip-policy-rule-set.ts", "ip-policy-rule.ts", "tls-edge-mutual-tls.ts"]);
  for (const file of files) {
    const module = file.replace(/\.ts$/, "");
    expect(
      fs.existsSync(path.join(REPO, "provider", `${module}.ts`)) ||
        fs.existsSync(path.join(REPO, "provider", module, "index.ts")),
      module,
    ).toBe(true);
    expect(fs.readFileSync(path.join(DIR, file), "utf8"), file).toBe(expected(module));
  }
});

it("each bounded module wraps every operation its provider module has", () => {
  const text = expected("x");
  for (const op of ["check", "diff", "create", "read", "update", "delete"]) expect(text).toContain(`m.${op}`);
});
