#!/usr/bin/env node
// `npm run sdks`: the SDKs of the plugin pulumi-resource-accessctl, written by Pulumi's own code
// generators (pulumi-sdkgen: scripts/pulumi-tools/sdkgen, built by `scripts/pulumi-cli --bin-dir
// sdkgen`, about a minute the first time; needs Go) from schema/schema.json (`npm run schema`):
//   sdks/nodejs   the TypeScript sources of the npm package named in the schema (language.nodejs)
//   sdks/python   a pip-installable package (pyproject.toml), module pulumi_accessctl
//   sdks/go       the Go package <importBasePath>, plus what the generator does not write: go.mod
//                 (module = importBasePath less its last element, requiring github.com/pulumi/pulumi/sdk/v3
//                 at the version of our @pulumi/pulumi) and go.sum (`go mod tidy`, from the Go module
//                 proxy or the module cache), checked by `go build ./...` with GOFLAGS=-mod=readonly
//   sdks/README.md what these are, and the sha256 of the schema they were made from
//                 (test/tools/schema.test.ts fails when schema/schema.json has changed since)
// Each sdks/<language> is removed and written anew; go.mod and go.sum are kept across runs.
//   node scripts/sdks.js [outDir]      (default sdks/; test/e2e/sdks.test.ts writes elsewhere and compares)
"use strict";
const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const { execFileSync } = require("node:child_process");

const REPO = path.resolve(__dirname, "..");
const SCHEMA = path.join(REPO, "schema/schema.json");
const OUT = path.join(REPO, "sdks");
const LANGUAGES = ["nodejs", "python", "go"];

/** The sha256 of the schema's text: what sdks/README.md records and the test compares. */
function schemaHash(text = fs.readFileSync(SCHEMA, "utf8")) {
  return crypto.createHash("sha256").update(text).digest("hex");
}

function readme(schema, hash) {
  const go = schema.language.go.importBasePath;
  return `# SDKs of the \`${schema.name}\` plugin (pulumi-resource-${schema.name}) — generated, do not edit

Written by \`npm run sdks\` (scripts/sdks.js: Pulumi's own SDK generators, pkg/v3 codegen, run by
\`pulumi-sdkgen\`) from \`schema/schema.json\` (\`npm run schema\`, from the provider modules), version ${schema.version}.

| Directory | Language | Package | Use it |
|---|---|---|---|
| \`nodejs/\` | TypeScript | \`${schema.language.nodejs.packageName}\` | its sources; \`npm install\` and \`npm run build\` there, or \`npm pack\` |
| \`python/\` | Python | \`${schema.language.python.packageName}\` | \`pip install ./sdks/python\` (with \`pulumi${schema.language.python.requires.pulumi}\`) |
| \`go/\` | Go | \`${go}\` | module \`${path.posix.dirname(go)}\`: \`require ${path.posix.dirname(go)} v${schema.version}\` with a \`replace\` to this directory until it is published |

Each needs the plugin itself, \`pulumi-resource-${schema.name}\` ${schema.version}, installed (\`pulumi plugin install resource ${schema.name} ${schema.version} --file …\`).
The reference for every language: [docs/reference/](../docs/reference/README.md).

Schema sha256: \`${hash}\`
`;
}

function run(cmd, args, options = {}) {
  return execFileSync(cmd, args, { stdio: ["ignore", "pipe", "inherit"], ...options }).toString();
}

/**
 * The one repair of generated code: pkg/v3 v3.259.0's Go generator imports "reflect" in the file of a
 * function that takes no inputs and returns a list (listApiKeys), and uses it nowhere ("imported and
 * not used"). Drops that import line wherever "reflect." does not occur; returns the files changed.
 */
function dropUnusedReflect(dir) {
  const changed = [];
  for (const entry of fs.readdirSync(dir, { recursive: true })) {
    const file = path.join(dir, entry);
    if (!file.endsWith(".go")) continue;
    const source = fs.readFileSync(file, "utf8");
    if (!/^\t"reflect"\n/m.test(source) || source.includes("reflect.")) continue;
    fs.writeFileSync(file, source.replace(/^\t"reflect"\n(\n)?/m, ""));
    changed.push(path.relative(REPO, file));
  }
  return changed;
}

/**
 * What no generator writes: a resource's hideDiffs (the schema's language.accessctl.hideDiffs; the
 * provider shows those properties' changes itself), passed where each SDK passes the resource's
 * aliases. Throws when the generated code does not look as expected, rather than skip it.
 */
function addHideDiffs(out, schema) {
  for (const [token, resource] of Object.entries(schema.resources)) {
    const paths = resource.language?.accessctl?.hideDiffs;
    if (!paths) continue;
    const name = token.split(":")[2];
    const file = (lang, rel) => path.join(out, lang, rel);
    const edit = (target, from, to) => {
      const source = fs.readFileSync(target, "utf8");
      if (!from.test(source))
        throw new Error(`sdks: ${path.relative(REPO, target)}: the generated aliases are not where hideDiffs goes`);
      fs.writeFileSync(target, source.replace(from, to));
    };
    const list = (quote) => paths.map((p) => `${quote}${p}${quote}`).join(", ");
    edit(
      file("nodejs", `${name[0].toLowerCase()}${name.slice(1)}.ts`),
      /(const aliasOpts = \{ aliases: \[.*\])( \};)/,
      `$1, hideDiffs: [${list('"')}]$2`,
    );
    const snake = name.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
    edit(
      file("python", `${schema.language.python.packageName}/${snake}.py`),
      /(alias_opts = pulumi\.ResourceOptions\(aliases=\[.*\])\)/,
      `$1, hide_diffs=[${list('"')}])`,
    );
    edit(
      file(
        "go",
        `${path.posix.basename(schema.language.go.importBasePath)}/${name[0].toLowerCase()}${name.slice(1)}.go`,
      ),
      /(\topts = append\(opts, aliases\)\n)/,
      `$1\topts = append(opts, pulumi.HideDiffs([]string{${list('"')}}))\n`,
    );
  }
}

/** Writes the SDKs of schema/schema.json into `out` (default sdks/); go.mod and go.sum start from the committed ones. */
function generateSdks(out = OUT) {
  const text = fs.readFileSync(SCHEMA, "utf8");
  const schema = JSON.parse(text);
  const pulumiVersion = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")).devDependencies[
    "@pulumi/pulumi"
  ].replace(/^[^\d]*/, "");

  const bin = run(path.join(REPO, "scripts/pulumi-cli"), ["--bin-dir", "sdkgen"]).trim();
  // pulumi-sdkgen removes sdks/go: keep the module files it does not write.
  const goDir = path.join(out, "go");
  const committed = path.join(OUT, "go");
  const kept = Object.fromEntries(
    ["go.mod", "go.sum"]
      .filter((f) => fs.existsSync(path.join(committed, f)))
      .map((f) => [f, fs.readFileSync(path.join(committed, f))]),
  );
  execFileSync(path.join(bin, "pulumi-sdkgen"), [SCHEMA, out, ...LANGUAGES], {
    stdio: ["ignore", "inherit", "inherit"],
  });
  for (const [f, content] of Object.entries(kept)) fs.writeFileSync(path.join(goDir, f), content);

  addHideDiffs(out, schema);
  const fixed = dropUnusedReflect(goDir);
  if (fixed.length)
    process.stderr.write(`sdks: removed the unused import "reflect" the Go generator leaves in ${fixed.join(", ")}\n`);

  const modulePath = path.posix.dirname(schema.language.go.importBasePath);
  const env = { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod", CGO_ENABLED: "0" };
  if (!kept["go.mod"]) fs.writeFileSync(path.join(goDir, "go.mod"), `module ${modulePath}\n\ngo 1.24\n`);
  run("go", ["mod", "edit", `-module=${modulePath}`, `-require=github.com/pulumi/pulumi/sdk/v3@v${pulumiVersion}`], {
    cwd: goDir,
    env,
  });
  run("go", ["mod", "tidy"], { cwd: goDir, env });
  run("go", ["build", "./..."], { cwd: goDir, env: { ...env, GOFLAGS: "-mod=readonly" } });
  process.stderr.write(`sdks: ${path.relative(process.cwd(), goDir) || "."} builds (go build ./..., -mod=readonly)\n`);

  fs.writeFileSync(path.join(out, "README.md"), readme(schema, schemaHash(text)));
  const shown = path.relative(process.cwd(), out) || ".";
  process.stderr.write(
    `sdks: ${LANGUAGES.map((l) => `${shown}/${l}`).join(", ")} from schema/schema.json ${schema.version}\n`,
  );
}

module.exports = { generateSdks, schemaHash, SCHEMA, OUT };

if (require.main === module) generateSdks(process.argv[2] ? path.resolve(process.argv[2]) : OUT);
