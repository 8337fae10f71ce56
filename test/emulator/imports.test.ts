// Imports inside emulator/ flow one way (main → server (and rate-limit) → routes → handlers → api/http →
// store → data-file → records/errors): no file imports, directly or not, a file that imports it.
import * as fs from "node:fs";
import * as path from "node:path";
import { expect, it } from "vitest";

const DIR = path.resolve(__dirname, "../../emulator");

it("has no import cycles in emulator/", () => {
  const imports = new Map<string, string[]>();
  for (const file of fs.readdirSync(DIR).filter((f) => f.endsWith(".ts"))) {
    const text = fs.readFileSync(path.join(DIR, file), "utf8");
    imports.set(
      file,
      [...text.matchAll(/from "\.\/([\w-]+)"/g)].map((m) => `${m[1]}.ts`),
    );
  }
  const cycles: string[] = [];
  const visit = (file: string, trail: string[]) => {
    if (trail.includes(file)) return void cycles.push([...trail.slice(trail.indexOf(file)), file].join(" → "));
    for (const next of imports.get(file) ?? []) visit(next, [...trail, file]);
  };
  for (const file of imports.keys()) visit(file, []);
  expect(imports.get("server.ts")).toContain("routes.ts");
  expect(cycles).toEqual([]);
});
