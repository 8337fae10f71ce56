#!/usr/bin/env node
// Runs the reference docs' examples (scripts/docs.js renders them from one table) against the real
// SDKs, each language its own way, so that a page never shows code that does not compile:
//   typescript  type-checked (tsc, strict) against @accessctl/pulumi (this checkout's dist/) and
//               against the generated sdks/nodejs (what @accessctl/pulumi/plugin mirrors)
//   go          each example (and each lookup) built as a program against sdks/go (needs Go; the
//               module proxy or cache for github.com/pulumi/pulumi/sdk/v3)
//   python      each example (and each lookup) run under Pulumi's mocks with sdks/python installed
//               (--python PATH: a python with pulumi and pulumi_accessctl, e.g. a venv's bin/python)
//   yaml        parsed (js-yaml, where node_modules has it)
// Needs a build (npm run build) and the SDKs (npm run sdks).
//   node scripts/check-examples.js [--python /path/to/venv/bin/python] [typescript] [go] [python] [yaml]
"use strict";
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { execFileSync } = require("node:child_process");
const { generate } = require("./docs.js");

const REPO = path.resolve(__dirname, "..");
let python; // the python of --python

/** Every fenced block of a language in the pages: { page, code }. */
function blocks(pages, lang, fence) {
  const out = [];
  for (const [page, text] of Object.entries(pages)) {
    if (!page.startsWith(`${lang}/`)) continue;
    for (const m of text.matchAll(new RegExp("```" + fence + "\\n([\\s\\S]*?)\\n```", "g")))
      out.push({ page, code: m[1] });
  }
  return out;
}

function run(cmd, argv, options = {}) {
  try {
    return execFileSync(cmd, argv, { stdio: ["ignore", "pipe", "pipe"], ...options }).toString();
  } catch (e) {
    e.message = `${path.basename(cmd)} ${argv.join(" ")} failed:\n${e.stdout ?? ""}${e.stderr ?? ""}`;
    throw e;
  }
}
const report = (lang, n, what) => process.stderr.write(`check-examples: ${lang}: ${n} examples ${what}\n`);

function typescript(pages) {
  // Inside the repository, so that @accessctl/pulumi (this package, by name) and @pulumi/pulumi resolve.
  const dir = fs.mkdtempSync(path.join(REPO, ".check-examples-"));
  try {
    const found = blocks(pages, "typescript", "ts");
    const files = [];
    found.forEach(({ page, code }, i) => {
      const body = code.startsWith("import ")
        ? code
        : `import * as accessctl from "@accessctl/pulumi";\n${code}\nexport {};`;
      const name = `${path.basename(page, ".md")}-${i}`;
      fs.writeFileSync(path.join(dir, `${name}.dynamic.ts`), body);
      fs.writeFileSync(
        path.join(dir, `${name}.generated.ts`),
        body.replace('from "@accessctl/pulumi"', 'from "../sdks/nodejs/index"'),
      );
      files.push(`${name}.dynamic.ts`, `${name}.generated.ts`);
    });
    fs.writeFileSync(
      path.join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "node16",
          moduleResolution: "node16",
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ["node"],
        },
        files,
      }),
    );
    run(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", dir]);
    report("typescript", found.length, "type-check against @accessctl/pulumi and sdks/nodejs");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function go(pages) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "accessctl-go-examples-"));
  try {
    const sdk = path.join(REPO, "sdks/go");
    const modulePath = run("go", ["list", "-m"], { cwd: sdk }).trim();
    fs.writeFileSync(
      path.join(dir, "go.mod"),
      `module examples\n\ngo 1.25\n\nrequire ${modulePath} v0.0.0\n\nreplace ${modulePath} => ${sdk}\n`,
    );
    fs.copyFileSync(path.join(sdk, "go.sum"), path.join(dir, "go.sum"));
    const found = blocks(pages, "go", "go");
    found.forEach(({ page, code }, i) => {
      const program = code.startsWith("package main")
        ? code
        : // a lookup: one statement, in a program of its own
          [
            "package main",
            "",
            "import (",
            `\t"${modulePath}/accessctl"`,
            '\t"github.com/pulumi/pulumi/sdk/v3/go/pulumi"',
            ")",
            "",
            "func main() {",
            "\tpulumi.Run(func(ctx *pulumi.Context) error {",
            `\t\t${code}`,
            "\t\t_ = existing",
            "\t\treturn err",
            "\t})",
            "}",
          ].join("\n");
      const sub = path.join(dir, `${path.basename(page, ".md")}${i}`);
      fs.mkdirSync(sub);
      fs.writeFileSync(path.join(sub, "main.go"), program);
    });
    run("go", ["mod", "tidy"], { cwd: dir, env: { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod" } });
    run("go", ["vet", "./..."], { cwd: dir, env: { ...process.env, GOTOOLCHAIN: "local", CGO_ENABLED: "0" } });
    run("go", ["build", "./..."], { cwd: dir, env: { ...process.env, GOTOOLCHAIN: "local", CGO_ENABLED: "0" } });
    report("go", found.length, "build against sdks/go");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function py(pages) {
  if (!python) throw new Error("python: pass --python /path/to/bin/python (with pulumi and sdks/python installed)");
  const found = blocks(pages, "python", "python");
  // Each example in a fresh process, under mocks: a wrong keyword or class name raises there.
  const harness = `
import sys, pulumi
class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        return [args.name + "-id", args.inputs]
    def call(self, args):
        return {"result": []}
pulumi.runtime.set_mocks(Mocks(), preview=False)
import pulumi_accessctl as accessctl
code = sys.stdin.read()
exec(compile(code, "example", "exec"), {"pulumi": pulumi, "accessctl": accessctl})
`;
  for (const { page, code } of found) {
    try {
      run(python, ["-c", harness], { input: code, stdio: ["pipe", "pipe", "pipe"] });
    } catch (e) {
      throw new Error(`python: ${page}:\n${code}\n${e.stderr}`, { cause: e });
    }
  }
  report("python", found.length, "run under Pulumi's mocks with pulumi_accessctl");
}

function yaml(pages) {
  let parse;
  try {
    parse = require("js-yaml").load;
  } catch {
    process.stderr.write("check-examples: yaml: js-yaml is not in node_modules; skipped\n");
    return;
  }
  const found = blocks(pages, "yaml", "yaml");
  for (const { page, code } of found) {
    const doc = parse(code);
    if (!doc || (!doc.resources && !doc.variables)) throw new Error(`yaml: ${page}: no resources or variables`);
  }
  report("yaml", found.length, "parse");
}

/** Checks the examples of `languages`; `options.python`: the python to run the Python ones with. */
function check(languages = ["typescript", "go", "python", "yaml"], options = {}) {
  python = options.python;
  const pages = generate();
  const checks = { typescript, go, python: py, yaml };
  for (const lang of languages) {
    if (!checks[lang]) throw new Error(`unknown language ${lang}`);
    checks[lang](pages);
  }
}

module.exports = { check };

if (require.main === module) {
  const args = process.argv.slice(2);
  const at = args.indexOf("--python");
  const pythonPath = at >= 0 ? args.splice(at, 2)[1] : undefined;
  check(args.length ? args : undefined, { python: pythonPath });
}
