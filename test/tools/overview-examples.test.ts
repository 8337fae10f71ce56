// The first programs of README.md and docs/_index.md hold against what they use: the TypeScript ones
// type-check (strict) against the package's own classes (@accessctl/pulumi → sdk/index.ts,
// @accessctl/pulumi/plugin → sdk/plugin.ts); the YAML one uses the schema's type tokens and input
// names and hides a set's diff; the Python and Go ones use names the generated SDKs in sdks/ have.
// (The reference's examples are compiled and run against the SDKs by scripts/check-examples.js, in
// test/e2e/sdks.test.ts; these are light checks that need no Python, Go or Pulumi CLI.)
import * as fs from "node:fs";
import * as path from "node:path";
import * as ts from "typescript";
import { describe, expect, it } from "vitest";

const REPO = path.resolve(__dirname, "../..");
const read = (file: string) => fs.readFileSync(path.join(REPO, file), "utf8");
const PAGES = ["README.md", "docs/_index.md"];

/** The fenced blocks of a language in a page. */
function blocks(page: string, fence: string): string[] {
  return [...read(page).matchAll(new RegExp("^```" + fence + "\\n([\\s\\S]*?)\\n```", "gm"))].map((m) => m[1]);
}
const all = (fence: string) =>
  PAGES.flatMap((page) => blocks(page, fence).map((code, i) => ({ name: `${page}#${fence}${i}`, code })));
const sources = (dir: string, ext: string) =>
  fs
    .readdirSync(path.join(REPO, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(ext))
    .map((e) => fs.readFileSync(path.join(e.parentPath, e.name), "utf8"))
    .join("\n");

describe("the first programs of the README and the overview", () => {
  it("are in each language: TypeScript (both hosts), Python, Go, YAML", () => {
    expect(blocks("README.md", "ts")).toHaveLength(1);
    expect(
      blocks("docs/_index.md", "ts").map((code) => /from "(@accessctl\/pulumi(?:\/plugin)?)"/.exec(code)?.[1]),
    ).toEqual(["@accessctl/pulumi", "@accessctl/pulumi/plugin"]);
    for (const fence of ["python", "go", "yaml"]) expect(blocks("docs/_index.md", fence), fence).toHaveLength(1);
  });

  it("TypeScript: type-check against the package's classes", () => {
    const found = all("ts");
    const dir = fs.mkdtempSync(path.join(REPO, ".overview-examples-"));
    try {
      const files = found.map(({ code }, i) => {
        const file = path.join(dir, `example${i}.ts`);
        fs.writeFileSync(file, code);
        return file;
      });
      const options: ts.CompilerOptions = {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.Node16,
        moduleResolution: ts.ModuleResolutionKind.Node16,
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ["node"],
        paths: {
          "@accessctl/pulumi": [path.join(REPO, "sdk/index.ts")],
          "@accessctl/pulumi/plugin": [path.join(REPO, "sdk/plugin.ts")],
        },
      };
      const program = ts.createProgram(files, options);
      const problems = ts
        .getPreEmitDiagnostics(program)
        .filter((d) => d.file && files.includes(path.resolve(d.file.fileName)))
        .map(
          (d) =>
            `${found[files.indexOf(path.resolve(d.file!.fileName))].name}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`,
        );
      expect(problems).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("YAML: the schema's types and inputs, and hideDiffs on each set", () => {
    const schema = JSON.parse(read("schema/schema.json"));
    const found = all("yaml");
    expect(found.length).toBeGreaterThan(0);
    for (const { name, code } of found) {
      expect(code, name).toMatch(/^name: [\w-]+$/m);
      expect(code, name).not.toMatch(/^name: my-access$/m); // the template's project name (getting started)
      // Each resource: its type token, its property names, its options.
      for (const m of code.matchAll(
        /^ {2}([\w-]+):\n {4}type: (\S+)\n {4}properties:\n((?: {6}.*\n?)*)(?: {4}options:\n((?: {6}.*\n?)*))?/gm,
      )) {
        const [, resource, type, properties, options] = m;
        const declared = schema.resources[type];
        expect(declared, `${name}: ${resource}: type ${type}`).toBeDefined();
        for (const [, prop] of properties.matchAll(/^ {6}(\w+):/gm))
          expect(Object.keys(declared.inputProperties), `${name}: ${resource}.${prop}`).toContain(prop);
        if (type === "accessctl:index:IpPolicyRuleSet")
          expect(options ?? "", `${name}: ${resource} hides its rules' diff`).toMatch(/hideDiffs: \[rules\]/);
      }
      expect([...code.matchAll(/^ {4}type: /gm)].length, name).toBe(
        [...code.matchAll(/^ {2}[\w-]+:\n {4}type: \S+\n {4}properties:/gm)].length,
      );
    }
  });

  it("Python: names and keywords of pulumi_accessctl", () => {
    const sdk = sources("sdks/python/pulumi_accessctl", ".py");
    for (const { name, code } of all("python")) {
      for (const [, id] of code.matchAll(/\baccessctl\.(\w+)/g))
        expect(sdk, `${name}: accessctl.${id}`).toMatch(new RegExp(`^(class|def) ${id}\\b`, "m"));
      for (const [, kw] of code.matchAll(/[(,\s](\w+)=/g))
        expect(sdk, `${name}: ${kw}=`).toMatch(new RegExp(`\\b${kw}: (Optional\\[)?pulumi\\.Input\\[`));
    }
  });

  it("Go: functions, types, fields and methods of the accessctl package", () => {
    const sdk = sources("sdks/go/accessctl", ".go");
    for (const { name, code } of all("go")) {
      for (const [, id] of code.matchAll(/\baccessctl\.(\w+)/g))
        expect(sdk, `${name}: accessctl.${id}`).toMatch(new RegExp(`^(func|type) ${id}\\b`, "m"));
      for (const [, field] of code.matchAll(/[{,\s]([A-Z]\w*):\s/g))
        expect(sdk, `${name}: field ${field}`).toMatch(new RegExp(`^\\t${field} \\S`, "m"));
      // Methods of outputs (allowlist.Rules.MapIndex(…).Id()), not Pulumi's own (pulumi.String, ctx.Export, cfg.Require).
      for (const [, method] of code.matchAll(/(?<!\b(?:pulumi|accessctl|ctx|config|cfg))\.([A-Z]\w*)\(/g)) {
        expect(sdk, `${name}: .${method}()`).toMatch(new RegExp(`^func \\(o \\w+\\) ${method}\\(`, "m"));
      }
    }
  });
});
