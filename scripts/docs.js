#!/usr/bin/env node
// `npm run docs`: the reference pages in docs/reference/, generated from what sdk/index.ts exports
// and the doc comments, with the TypeScript compiler (our own devDependency): one page per resource
// class with its inputs (type, required, what a change does: from the provider's table of fields,
// FIELDS, so the page says what the code does), outputs, static get(), the list helpers and types
// named after it, and the @example of each. A new export of sdk/index.ts gets its page on the next run.
// test/tools/docs.test.ts regenerates into a temp dir and compares.
//   node scripts/docs.js [outDir]        (needs a build: FIELDS are read from dist/provider)
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const ts = require("typescript");

const REPO = path.resolve(__dirname, "..");
const ENTRY = path.join(REPO, "sdk/index.ts");

function program() {
  const config = ts.getParsedCommandLineOfConfigFile(path.join(REPO, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
  return ts.createProgram([ENTRY], { ...config.options, noEmit: true, incremental: false });
}

const oneLine = (text) => text.replace(/\s*\n\s*/g, " ").trim();
const cell = (text) => oneLine(text).replace(/\|/g, "\\|");
const code = (text) => "`" + oneLine(text).replace(/`/g, "'").replace(/\|/g, "\\|") + "`";

function docs(checker, symbol) {
  return ts.displayPartsToString(symbol.getDocumentationComment(checker));
}
function tags(symbol, name) {
  return symbol.getJsDocTags().filter((t) => t.name === name).map((t) => ts.displayPartsToString(t.text));
}
/** A parameter or return type as written in the source (pulumi.Input<string>), else as the checker prints it. */
const written = (checker, node, type) => (node ? oneLine(node.getText()) : typeText(checker, type));
const typeText = (checker, type) => checker.typeToString(type, undefined, ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.InTypeAlias | ts.TypeFormatFlags.UseSingleQuotesForStringLiteralType);

/** The provider module a class hands to Pulumi: the `import * as provider from "../provider/…"` of its file. */
function fieldsOf(classDecl) {
  for (const stmt of classDecl.getSourceFile().statements) {
    const binding = ts.isImportDeclaration(stmt) && stmt.importClause?.namedBindings;
    if (binding && ts.isNamespaceImport(binding) && binding.name.text === "provider") {
      const rel = path.relative(REPO, path.resolve(path.dirname(classDecl.getSourceFile().fileName), stmt.moduleSpecifier.text));
      try {
        return require(path.join(REPO, "dist", `${rel}.js`)).FIELDS;
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

function onChange(fields, name) {
  const field = fields?.[name];
  if (!field) return "see the description";
  if (field.onChange === "replace") return "**replace** (a new object, then the old one deleted)";
  if (field.onChange === "update") return "update in place";
  return "no request (used at create only)";
}

function examples(symbol) {
  return tags(symbol, "example").map((e) => (e.trim().startsWith("```") ? e.trim() : "```ts\n" + e.trim() + "\n```"));
}

function functionSection(checker, fn) {
  const decl = fn.declarations[0];
  const sig = checker.getSignatureFromDeclaration(decl);
  const params = sig.parameters.map((p) => `${p.name}${p.valueDeclaration?.questionToken || p.valueDeclaration?.initializer ? "?" : ""}: ${written(checker, p.valueDeclaration?.type, checker.getTypeOfSymbolAtLocation(p, decl))}`);
  return [`### \`${fn.name}(${params.join(", ")})\``, "", `Returns \`${written(checker, decl.type, sig.getReturnType())}\`.`, "", docs(checker, fn), "", ...examples(fn).flatMap((e) => [e, ""])];
}

function interfaceSection(checker, symbol) {
  const type = checker.getDeclaredTypeOfSymbol(symbol);
  const rows = checker.getPropertiesOfType(type).map((p) => `| \`${p.name}\` | ${code(typeText(checker, checker.getTypeOfSymbol(p)))} | ${cell(docs(checker, p))} |`);
  return [`### \`${symbol.name}\``, "", docs(checker, symbol), "", "| Field | Type | |", "|---|---|---|", ...rows, ""];
}

function classPage(checker, cls, related) {
  const decl = cls.declarations.find(ts.isClassDeclaration);
  const fields = fieldsOf(decl);
  const ctor = decl.members.find(ts.isConstructorDeclaration);
  const argsParam = ctor.parameters[1];
  const argsType = checker.getTypeAtLocation(argsParam);
  const inputs = checker.getPropertiesOfType(argsType).map((p) => {
    // The Args type maps the provider's input type: its declaration is the input's, with its docs and plain type.
    const source = p.declarations?.[0];
    const type = source && source.type ? typeText(checker, checker.getTypeFromTypeNode(source.type)) : typeText(checker, checker.getTypeOfSymbol(p));
    const required = !(p.flags & ts.SymbolFlags.Optional);
    return `| \`${p.name}\` | ${code(type)} | ${required ? "yes" : "no"} | ${onChange(fields, p.name)} | ${cell(docs(checker, p))} |`;
  });
  const instance = checker.getDeclaredTypeOfSymbol(cls);
  const outputs = decl.members
    .filter((m) => ts.isPropertyDeclaration(m) && !m.modifiers?.some((k) => k.kind === ts.SyntaxKind.StaticKeyword))
    .map((m) => {
      const p = checker.getPropertyOfType(instance, m.name.text);
      const t = checker.getTypeOfSymbol(p);
      const inner = t.aliasTypeArguments?.[0] ?? checker.getTypeArguments?.(t)?.[0] ?? t;
      const shown = /^Output</.test(typeText(checker, t)) ? typeText(checker, t).replace(/^Output<([\s\S]*)>$/, "$1") : typeText(checker, inner);
      return `| \`${p.name}\` | ${code(shown)} | ${cell(docs(checker, p))} |`;
    });
  const statics = decl.members.filter((m) => ts.isMethodDeclaration(m) && m.modifiers?.some((k) => k.kind === ts.SyntaxKind.StaticKeyword));
  const out = [
    `# ${cls.name}`,
    "",
    `\`import { ${cls.name} } from "@accessctl/pulumi";\` — generated by \`npm run docs\` from \`sdk/index.ts\` and its doc comments; do not edit.`,
    "",
    docs(checker, cls),
    "",
    ...examples(cls).flatMap((e) => ["## Example", "", e, ""]),
    `## Inputs`,
    "",
    `\`new ${cls.name}(name, args, opts?)\`. Every input also takes an Output. "On change" is what \`pulumi up\` does when the value changes.`,
    "",
    "| Input | Type | Required | On change | |",
    "|---|---|---|---|---|",
    ...inputs,
    "",
    "## Outputs",
    "",
    "Besides `id` and `urn`, every resource's:",
    "",
    "| Output | Type | |",
    "|---|---|---|",
    ...outputs,
    "",
  ];
  if (statics.length) out.push("## Looking up existing objects", "");
  for (const m of statics) {
    const sym = checker.getSymbolAtLocation(m.name);
    const sig = checker.getSignatureFromDeclaration(m);
    const params = sig.parameters.map((p) => `${p.name}${p.valueDeclaration?.questionToken ? "?" : ""}: ${written(checker, p.valueDeclaration?.type, checker.getTypeOfSymbolAtLocation(p, m))}`);
    out.push(`### \`${cls.name}.${sym.name}(${params.join(", ")})\`: \`${written(checker, m.type, sig.getReturnType())}\``, "", docs(checker, sym), "", ...examples(sym).flatMap((e) => [e, ""]));
  }
  const fns = related.filter((s) => s.flags & ts.SymbolFlags.Function);
  const types = related.filter((s) => s.flags & ts.SymbolFlags.Interface);
  if (fns.length) out.push("## List helpers", "", ...fns.flatMap((f) => functionSection(checker, f)));
  if (types.length) out.push("## Types", "", ...types.flatMap((t) => interfaceSection(checker, t)));
  return out.join("\n").replace(/\n{3,}/g, "\n\n").trimEnd() + "\n";
}

/** { "File.md": text } for every resource class exported by sdk/index.ts, and README.md, an index. */
function generate() {
  const prog = program();
  const checker = prog.getTypeChecker();
  const exports = checker.getExportsOfModule(checker.getSymbolAtLocation(prog.getSourceFile(ENTRY))).map((s) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s));
  const classes = exports.filter((s) => s.flags & ts.SymbolFlags.Class).sort((a, b) => a.name.localeCompare(b.name));
  // A function or interface belongs to the class with the longest name it contains (listIpPolicyRules → IpPolicyRule).
  const owner = (s) => classes.filter((c) => s.name.includes(c.name)).sort((a, b) => b.name.length - a.name.length)[0];
  const pages = { "README.md": "" };
  const index = ["# Reference", "", "Generated by `npm run docs` from what `sdk/index.ts` exports and its doc comments; do not edit.", "", "| Resource | |", "|---|---|"];
  for (const cls of classes) {
    const related = exports.filter((s) => (s.flags & (ts.SymbolFlags.Function | ts.SymbolFlags.Interface)) && owner(s) === cls).sort((a, b) => a.name.localeCompare(b.name));
    pages[`${cls.name}.md`] = classPage(checker, cls, related);
    index.push(`| [${cls.name}](${cls.name}.md) | ${cell(docs(checker, cls).split(/(?<=\.)\s/)[0])} |`);
  }
  const orphans = exports.filter((s) => (s.flags & (ts.SymbolFlags.Function | ts.SymbolFlags.Interface)) && !owner(s));
  if (orphans.length) index.push("", "## Other exports", "", ...orphans.flatMap((s) => (s.flags & ts.SymbolFlags.Function ? functionSection(checker, s) : interfaceSection(checker, s))));
  pages["README.md"] = index.join("\n").trimEnd() + "\n";
  return pages;
}

function write(outDir) {
  const pages = generate();
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  for (const [name, text] of Object.entries(pages)) fs.writeFileSync(path.join(outDir, name), text);
  return pages;
}

module.exports = { generate, write };

if (require.main === module) {
  const outDir = path.resolve(process.argv[2] ?? path.join(REPO, "docs/reference"));
  const pages = write(outDir);
  process.stderr.write(`docs: ${Object.keys(pages).length} pages in ${path.relative(process.cwd(), outDir) || "."}\n`);
}
