#!/usr/bin/env node
// `npm run docs`: the reference pages in docs/reference/, generated from schema/schema.json (which
// `npm run docs` regenerates first with scripts/schema.js, from the provider modules), so that the
// pages, the schema, the plugin and the SDKs generated from it say one thing. For each resource and
// function of the schema, one page per language:
//   typescript/  `@accessctl/pulumi` (dynamic providers, nothing else to install) and
//                `@accessctl/pulumi/plugin` (the same classes, backed by the plugin)
//   python/      `pulumi_accessctl` (sdks/python), snake_case names
//   go/          `…/sdks/go/accessctl` (sdks/go), the Go names and types
//   yaml/        Pulumi YAML: type tokens, camelCase
// each with every input (its type in that language, required or not, what a change does: the
// schema's willReplaceOnChanges and language.accessctl.onChange), every output (secret ones marked),
// the object types they use, looking up an existing object, and an example. The examples are data,
// each in its resource's entry of the registry (provider/resources.ts), written once and rendered in
// each language's syntax. README.md is the index.
// test/tools/docs.test.ts regenerates into memory and compares, and checks the names and types
// against the generated SDKs.
//   node scripts/docs.js [outDir] [schema.json]
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const REPO = path.resolve(__dirname, "..");
const SCHEMA = path.join(REPO, "schema/schema.json");

/**
 * One example per resource and function, from the registry (provider/resources.ts, as built in
 * dist/): the inputs (camelCase, as in the schema), and what the program exports. `get`: an id for
 * looking an existing object up. Rendered in every language.
 */
const EXAMPLES = (() => {
  const built = path.join(REPO, "dist/provider/resources.js");
  if (!fs.existsSync(built))
    throw new Error(`docs: ${path.relative(REPO, built)} is missing: run \`npm run build\` first`);
  const { RESOURCES, FUNCTIONS } = require(built);
  return Object.fromEntries(
    [...Object.values(RESOURCES), ...Object.values(FUNCTIONS)].map((entry) => [entry.name, entry.example]),
  );
})();

const LANGUAGES = {
  typescript: "TypeScript",
  python: "Python",
  go: "Go",
  yaml: "YAML",
};

// ---- names and types in each language -----------------------------------------------------------

const tail = (token) => token.split(":").pop();
const refName = (spec) => spec.$ref && spec.$ref.startsWith("#/types/") && tail(spec.$ref);
const isAny = (spec) => spec.$ref === "pulumi.json#/Any";
/** snake_case as Pulumi's Python generator writes it (ipPolicyId → ip_policy_id, createdAt → created_at). */
const pyName = (name) =>
  name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .toLowerCase();
/** A name as Go exports it (ipPolicyId → IpPolicyId). */
const goName = (name) => name[0].toUpperCase() + name.slice(1);
/** A JavaScript identifier for a resource name (office-allowlist → officeAllowlist). */
const camel = (name) => name.replace(/[-_]+(.)/g, (_, c) => c.toUpperCase());

/** The type of a property in TypeScript (both packages). */
function tsType(spec) {
  if (isAny(spec)) return "unknown";
  if (refName(spec)) return refName(spec);
  if (spec.type === "array") return `${tsType(spec.items)}[]`;
  if (spec.type === "object") return `Record<string, ${tsType(spec.additionalProperties)}>`;
  return { string: "string", boolean: "boolean", integer: "number", number: "number" }[spec.type];
}

/** The type of a property in Python: `input` uses the input classes (XArgs, or a dict of the same keys). */
function pyType(spec, input) {
  if (isAny(spec)) return "Any";
  if (refName(spec)) return input ? `${refName(spec)}Args` : refName(spec);
  if (spec.type === "array") return `Sequence[${pyType(spec.items, input)}]`;
  if (spec.type === "object") return `Mapping[str, ${pyType(spec.additionalProperties, input)}]`;
  return { string: "str", boolean: "bool", integer: "int", number: "float" }[spec.type];
}

const GO_SCALAR = { string: "String", boolean: "Bool", integer: "Int", number: "Float64" };
/** The element name Go uses for a type in its Input/Output/Array/Map names (String, Bool, IpPolicyRuleSetRule, nothing for Any). */
function goElement(spec) {
  if (isAny(spec)) return "";
  if (refName(spec)) return refName(spec);
  if (spec.type === "array") return `${goElement(spec.items)}Array`;
  if (spec.type === "object") return `${goElement(spec.additionalProperties)}Map`;
  return GO_SCALAR[spec.type];
}
/**
 * The type of a Go field: `kind` "Input" (args) or "Output" (a resource's outputs); optional scalars
 * and objects are Ptr types. Types of the package (objects, lists and maps of them) unqualified.
 */
function goType(spec, required, kind) {
  if (isAny(spec)) return kind === "Input" ? "pulumi.Input" : "pulumi.AnyOutput";
  const inner = spec.items ?? spec.additionalProperties;
  const local = !!refName(spec) || !!(inner && refName(inner));
  const ptr = required || spec.type === "array" || spec.type === "object" ? "" : "Ptr";
  return `${local ? "" : "pulumi."}${goElement(spec)}${ptr}${kind}`;
}
/** The type of a field of a plain Go struct (a function's result, its plain args). */
function goPlain(spec, required) {
  const ptr = required ? "" : "*";
  if (isAny(spec)) return "interface{}";
  if (refName(spec)) return `${ptr}${refName(spec)}`;
  if (spec.type === "array") return `[]${goPlain(spec.items, true)}`;
  if (spec.type === "object") return `map[string]${goPlain(spec.additionalProperties, true)}`;
  return `${ptr}${{ string: "string", boolean: "bool", integer: "int", number: "float64" }[spec.type]}`;
}

/** The type of a property in Pulumi YAML. */
function yamlType(spec) {
  if (isAny(spec)) return "Any";
  if (refName(spec)) return refName(spec);
  if (spec.type === "array") return `List<${yamlType(spec.items)}>`;
  if (spec.type === "object") return `Map<${yamlType(spec.additionalProperties)}>`;
  return { string: "String", boolean: "Boolean", integer: "Integer", number: "Number" }[spec.type];
}

/** How a language names a property, a type of a property, and a field of an object type. */
const STYLE = {
  typescript: {
    prop: (n) => n,
    input: (s) => tsType(s),
    output: (s) => tsType(s),
    field: (s) => tsType(s),
    inputField: (s) => tsType(s),
  },
  python: {
    prop: pyName,
    input: (s) => pyType(s, true),
    output: (s) => pyType(s, false),
    field: (s) => pyType(s, false),
    inputField: (s) => pyType(s, true),
  },
  go: {
    prop: goName,
    input: (s, r) => goType(s, r, "Input"),
    output: (s, r) => goType(s, r, "Output"),
    field: (s, r) => goPlain(s, r),
    inputField: (s, r) => goType(s, r, "Input"),
  },
  yaml: { prop: (n) => n, input: yamlType, output: yamlType, field: yamlType, inputField: yamlType },
};

// ---- examples, rendered ---------------------------------------------------------------------------

const str = (s) => JSON.stringify(s);
const indent = (text, by) =>
  text
    .split("\n")
    .map((l) => (l ? by + l : l))
    .join("\n");

/** A value in TypeScript. */
function tsValue(v) {
  if (Array.isArray(v)) return `[${v.map(tsValue).join(", ")}]`;
  if (v && typeof v === "object")
    return `{ ${Object.entries(v)
      .map(([k, x]) => `${k}: ${tsValue(x)}`)
      .join(", ")} }`;
  return str(v);
}

/** A value in Python, by its schema type: input objects as their Args class. */
function pyValue(v, spec) {
  if (Array.isArray(v)) return `[${v.map((x) => pyValue(x, spec?.items ?? {})).join(", ")}]`;
  if (v && typeof v === "object") {
    const t = refName(spec);
    return `accessctl.${t}Args(${Object.entries(v)
      .map(([k, x]) => `${pyName(k)}=${pyValue(x, spec.properties?.[k])}`)
      .join(", ")})`;
  }
  if (typeof v === "boolean") return v ? "True" : "False";
  return str(v);
}

/** A value in Go, by its schema type. */
function goValue(v, spec, types, pad = "") {
  if (isAny(spec))
    return `pulumi.${typeof v === "string" ? "String" : typeof v === "boolean" ? "Bool" : "Float64"}(${str(v)})`;
  if (spec.type === "array") {
    const element = spec.items;
    const name = refName(element) ? `accessctl.${refName(element)}Array` : `pulumi.${goElement(element)}Array`;
    if (refName(element))
      return `${name}{\n${v.map((x) => `${pad}\t${goValue(x, element, types, `${pad}\t`)},`).join("\n")}\n${pad}}`;
    return `${name}{${v.map((x) => goValue(x, element, types, pad)).join(", ")}}`;
  }
  if (refName(spec)) {
    const props = types[`accessctl:index:${refName(spec)}`].properties;
    return `&accessctl.${refName(spec)}Args{${Object.entries(v)
      .map(([k, x]) => `${goName(k)}: ${goValue(x, props[k], types, pad)}`)
      .join(", ")}}`;
  }
  return `pulumi.${GO_SCALAR[spec.type]}(${str(v)})`;
}

/** A value in YAML, at `depth` (strings quoted: nothing in them is read as YAML). */
function yamlValue(v, depth) {
  const pad = "  ".repeat(depth);
  if (Array.isArray(v)) {
    if (v.every((x) => typeof x !== "object")) return `[${v.map((x) => yamlValue(x, 0)).join(", ")}]`;
    return "\n" + v.map((x) => `${pad}- ${yamlValue(x, depth + 1).trimStart()}`).join("\n");
  }
  if (v && typeof v === "object")
    return (
      "\n" +
      Object.entries(v)
        .map(([k, x]) => `${pad}${k}: ${yamlValue(x, depth + 1)}`.replace(/: \n/, ":\n"))
        .join("\n")
    );
  return str(v);
}

function resourceExample(lang, name, resource, types, example) {
  const variable = camel(example.name);
  const props = resource.inputProperties;
  const entries = Object.entries(example.inputs);
  const exports = Object.entries(example.exports);
  if (lang === "typescript") {
    return [
      `import * as accessctl from "@accessctl/pulumi"; // or "@accessctl/pulumi/plugin"`,
      "",
      `const ${variable} = new accessctl.${name}(${str(example.name)}, {`,
      ...entries.map(([k, v]) => `  ${k}: ${tsValue(v)},`),
      "});",
      ...exports.map(([out, prop]) => `export const ${out} = ${variable}.${prop};`),
    ].join("\n");
  }
  if (lang === "python") {
    const v = pyName(variable);
    return [
      "import pulumi",
      "import pulumi_accessctl as accessctl",
      "",
      `${v} = accessctl.${name}(${str(example.name)},`,
      ...entries.map(([k, x], i) => `    ${pyName(k)}=${pyValue(x, props[k])}${i === entries.length - 1 ? ")" : ","}`),
      ...exports.map(([out, prop]) => `pulumi.export(${str(out)}, ${v}.${pyName(prop)})`),
    ].join("\n");
  }
  if (lang === "go") {
    return goProgram([
      `${variable}, err := accessctl.New${name}(ctx, ${str(example.name)}, &accessctl.${name}Args{`,
      ...entries.map(([k, x]) => `\t${goName(k)}: ${goValue(x, props[k], types, "\t")},`),
      "})",
      "if err != nil {",
      "\treturn err",
      "}",
      ...exports.map(([out, prop]) => `ctx.Export(${str(out)}, ${variable}.${prop === "id" ? "ID()" : goName(prop)})`),
    ]);
  }
  return [
    "resources:",
    `  ${example.name}:`,
    `    type: ${TOKEN(name)}`,
    "    properties:",
    ...entries.map(([k, x]) => `      ${k}: ${yamlValue(x, 4)}`.replace(/: \n/, ":\n")),
    // YAML has no SDK to pass the resource's hideDiffs (the generated SDKs do): the program does.
    ...(resource.language?.accessctl?.hideDiffs
      ? ["    options:", `      hideDiffs: [${resource.language.accessctl.hideDiffs.join(", ")}]`]
      : []),
    "outputs:",
    ...exports.map(([out, prop]) => `  ${out}: \${${example.name}.${prop}}`),
  ].join("\n");
}

/** A function's result: one property holding a list (`rules`, `keys`), and the list's spec. */
function resultOf(fn) {
  const [property, spec] = Object.entries(fn.outputs.properties)[0];
  return { property, spec };
}

function functionExample(lang, name, fn, example) {
  const args = Object.entries(example.args);
  const v = example.name;
  if (lang === "typescript") {
    return [
      `import * as accessctl from "@accessctl/pulumi"; // or "@accessctl/pulumi/plugin"`,
      "",
      `export const ${v} = accessctl.${name}Output(${args.length ? tsValue(example.args) : ""});`,
    ].join("\n");
  }
  if (lang === "python") {
    return [
      "import pulumi",
      "import pulumi_accessctl as accessctl",
      "",
      `${pyName(v)} = accessctl.${pyName(name)}_output(${args.map(([k, x]) => `${pyName(k)}=${str(x)}`).join(", ")})`,
      `pulumi.export(${str(v)}, ${pyName(v)}.${pyName(resultOf(fn).property)})`,
    ].join("\n");
  }
  if (lang === "go") {
    const call = fn.inputs
      ? `accessctl.${goName(name)}Output(ctx, accessctl.${goName(name)}OutputArgs{${args.map(([k, x]) => `${goName(k)}: pulumi.${GO_SCALAR[fn.inputs.properties[k].type]}(${str(x)})`).join(", ")}})`
      : `accessctl.${goName(name)}Output(ctx)`;
    return goProgram([`${v} := ${call}`, `ctx.Export(${str(v)}, ${v}.${goName(resultOf(fn).property)}())`]);
  }
  return [
    "variables:",
    `  ${v}:`,
    "    fn::invoke:",
    `      function: ${TOKEN(name)}`,
    ...(args.length ? ["      arguments:", ...args.map(([k, x]) => `        ${k}: ${yamlValue(x, 5)}`)] : []),
    `      return: ${resultOf(fn).property}`,
    "outputs:",
    `  ${v}: \${${v}}`,
  ].join("\n");
}

function goProgram(body) {
  return [
    "package main",
    "",
    "import (",
    '\t"github.com/accessctl/pulumi-accessctl/sdks/go/accessctl"',
    '\t"github.com/pulumi/pulumi/sdk/v3/go/pulumi"',
    ")",
    "",
    "func main() {",
    "\tpulumi.Run(func(ctx *pulumi.Context) error {",
    indent(body.join("\n"), "\t\t"),
    "\t\treturn nil",
    "\t})",
    "}",
  ].join("\n");
}

let TOKEN = (name) => `accessctl:index:${name}`;

// ---- pages -------------------------------------------------------------------------------------

const oneLine = (text = "") => text.replace(/\s*\n\s*/g, " ").trim();
const cell = (text = "") => oneLine(text).replace(/\|/g, "\\|");
const code = (text) => "`" + text.replace(/\|/g, "\\|") + "`";
const FENCE = { typescript: "ts", python: "python", go: "go", yaml: "yaml" };
const block = (lang, text) => ["```" + FENCE[lang], text, "```"].join("\n");

/** What `pulumi up` does when an input changes: from the schema (willReplaceOnChanges, language.accessctl.onChange). */
function onChange(spec) {
  const { onChange: kind = spec.willReplaceOnChanges ? "replace" : "update", note } = spec.language?.accessctl ?? {};
  if (kind === "replace") return `**replace**: ${note ?? "a new object, then the old one deleted"}`;
  if (kind === "update") return `update in place${note ? `: ${note}` : ""}`;
  return note ?? "nothing";
}

function importLine(lang, schema) {
  if (lang === "typescript") {
    return (
      '`import * as accessctl from "@accessctl/pulumi";` (dynamic providers: nothing else to install) or ' +
      '`import * as accessctl from "@accessctl/pulumi/plugin";` (the same classes, backed by the plugin `pulumi-resource-accessctl`).'
    );
  }
  if (lang === "python")
    return `\`import pulumi_accessctl as accessctl\` (package \`${schema.language.python.packageName}\`, [sdks/python](../../../sdks/python); needs the plugin \`pulumi-resource-accessctl\`).`;
  if (lang === "go")
    return `\`import "${schema.language.go.importBasePath}"\` ([sdks/go](../../../sdks/go); needs the plugin \`pulumi-resource-accessctl\`).`;
  return "Pulumi YAML: no SDK, only the plugin `pulumi-resource-accessctl`. Types by their token, properties in camelCase.";
}

function otherLanguages(lang, name) {
  return (
    "Other languages: " +
    Object.entries(LANGUAGES)
      .filter(([l]) => l !== lang)
      .map(([l, label]) => `[${label}](../${l}/${name}.md)`)
      .join(" · ")
  );
}

/** The object types a set of properties uses, and those they use in turn. */
function typesUsed(schema, specs) {
  const found = [];
  const visit = (spec) => {
    if (!spec) return;
    const r = refName(spec);
    if (r && !found.includes(r)) {
      found.push(r);
      Object.values(schema.types[`accessctl:index:${r}`].properties).forEach(visit);
    }
    visit(spec.items);
    visit(spec.additionalProperties);
  };
  specs.forEach(visit);
  return found;
}

function typeSections(lang, schema, names, inputTypes) {
  const out = [];
  for (const name of names) {
    const type = schema.types[`accessctl:index:${name}`];
    const required = type.required ?? [];
    const asInput = inputTypes.includes(name);
    let heading = `### \`${name}\``;
    if (asInput && lang === "python") heading = `### \`${name}Args\` (or a dict of the same keys)`;
    if (asInput && lang === "go") heading = `### \`${name}Args\``;
    const style = STYLE[lang];
    const typeOf = (spec, r) => (asInput ? style.inputField(spec, r) : style.field(spec, r));
    out.push(
      heading,
      "",
      cell(type.description),
      "",
      `| Field | Type | ${asInput ? "Required" : "Always set"} | |`,
      "|---|---|---|---|",
    );
    for (const [prop, spec] of Object.entries(type.properties)) {
      const r = required.includes(prop);
      out.push(
        `| ${code(style.prop(prop))} | ${code(typeOf(spec, r))} | ${r ? "yes" : "no"} | ${spec.secret ? "**secret.** " : ""}${cell(spec.description)} |`,
      );
    }
    out.push("");
  }
  return out;
}

function lookup(lang, name, id) {
  if (lang === "typescript") return block(lang, `const existing = accessctl.${name}.get("existing", ${str(id)});`);
  if (lang === "python") return block(lang, `existing = accessctl.${name}.get("existing", ${str(id)})`);
  if (lang === "go")
    return block(lang, `existing, err := accessctl.Get${name}(ctx, "existing", pulumi.ID(${str(id)}), nil)`);
  return block(
    lang,
    ["resources:", "  existing:", `    type: ${TOKEN(name)}`, "    get:", `      id: ${str(id)}`].join("\n"),
  );
}

function constructor(lang, name) {
  if (lang === "typescript") return `\`new accessctl.${name}(name, args, opts?)\``;
  if (lang === "python")
    return `\`accessctl.${name}(resource_name, opts=None, **inputs)\` (or \`accessctl.${name}(resource_name, accessctl.${name}Args(...), opts=None)\`)`;
  if (lang === "go") return `\`accessctl.New${name}(ctx, name, &accessctl.${name}Args{...}, opts...)\``;
  return `\`type: ${TOKEN(name)}\` with \`properties:\``;
}

function resourcePage(lang, schema, token, resource) {
  const name = tail(token);
  const style = STYLE[lang];
  const example = EXAMPLES[name];
  if (!example) throw new Error(`docs: no example for ${name}: add one to its entry in provider/resources.ts`);
  const required = resource.requiredInputs ?? [];
  const outRequired = resource.required ?? [];
  const inputs = Object.entries(resource.inputProperties).map(
    ([p, spec]) =>
      `| ${code(style.prop(p))} | ${code(style.input(spec, required.includes(p)))} | ${required.includes(p) ? "yes" : "no"} | ${onChange(spec)} | ${spec.secret ? "**secret.** " : ""}${cell(spec.description)} |`,
  );
  const outputs = Object.entries(resource.properties).map(
    ([p, spec]) =>
      `| ${code(style.prop(p))} | ${code(style.output(spec, outRequired.includes(p)))} | ${outRequired.includes(p) ? "yes" : "no"} | ${spec.secret ? "**secret.** " : ""}${cell(spec.description)} |`,
  );
  const inputTypes = typesUsed(schema, Object.values(resource.inputProperties));
  const used = [
    ...inputTypes,
    ...typesUsed(schema, Object.values(resource.properties)).filter((t) => !inputTypes.includes(t)),
  ];
  const out = [
    `# ${name} (${LANGUAGES[lang]})`,
    "",
    `${importLine(lang, schema)} Type token \`${token}\`.`,
    "",
    `Generated by \`npm run docs\` from \`schema/schema.json\`; do not edit. ${otherLanguages(lang, name)} · [Index](../README.md)`,
    "",
    cell(resource.description),
    "",
    "## Example",
    "",
    block(lang, resourceExample(lang, name, resource, schema.types, example)),
    "",
    "## Inputs",
    "",
    `${constructor(lang, name)}. Every input also takes an output of another resource. "On change" is what \`pulumi up\` does when the value changes.`,
    "",
    "| Input | Type | Required | On change | |",
    "|---|---|---|---|---|",
    ...inputs,
    "",
    "## Outputs",
    "",
    `Besides \`id\` and \`urn\`. "Always set": known once the object exists (the others only when the program declares them).`,
    "",
    "| Output | Type | Always set | |",
    "|---|---|---|---|",
    ...outputs,
    "",
    "## Looking up an existing object",
    "",
    "By its id, read-only: `pulumi up` reads it, and neither changes nor deletes it.",
    "",
    lookup(lang, name, example.get),
    "",
  ];
  if (used.length) out.push("## Types", "", ...typeSections(lang, schema, used, inputTypes));
  return (
    out
      .join("\n")
      .replace(/\n{3,}/g, "\n\n")
      .trimEnd() + "\n"
  );
}

function signature(lang, name, fn) {
  const { property, spec: result } = resultOf(fn);
  const inputs = fn.inputs ? Object.entries(fn.inputs.properties) : [];
  if (lang === "typescript") {
    const args = inputs.length
      ? `args?: { ${inputs.map(([p, s]) => `${p}${fn.inputs.required?.includes(p) ? "" : "?"}: ${tsType(s)}`).join("; ")} }`
      : "";
    return [
      `accessctl.${name}(${args}): Promise<${tsType(result)}>`,
      `accessctl.${name}Output(${args.replace("args?: { ", "args?: { ").replace(/: (\w+)( }|;)/g, ": pulumi.Input<$1>$2")}): pulumi.Output<${tsType(result)}>`,
    ];
  }
  if (lang === "python") {
    const args = inputs
      .map(([p]) => `${pyName(p)}=None`)
      .concat("opts=None")
      .join(", ");
    return [
      `accessctl.${pyName(name)}(${args}) -> ${goName(name)}Result  # .${pyName(property)}`,
      `accessctl.${pyName(name)}_output(${args}) -> pulumi.Output[${goName(name)}Result]`,
    ];
  }
  if (lang === "go") {
    const args = inputs.length ? `args *accessctl.${goName(name)}Args, ` : "";
    const outArgs = inputs.length ? `args accessctl.${goName(name)}OutputArgs, ` : "";
    return [
      `accessctl.${goName(name)}(ctx, ${args}opts ...pulumi.InvokeOption) (*accessctl.${goName(name)}Result, error) // .${goName(property)} ${goPlain(result, true).replace(/^\[\]/, "[]accessctl.")}`,
      `accessctl.${goName(name)}Output(ctx, ${outArgs}opts ...pulumi.InvokeOption) accessctl.${goName(name)}ResultOutput // .${goName(property)}()`,
    ];
  }
  return [`fn::invoke: {function: ${TOKEN(name)}${inputs.length ? ", arguments: {…}" : ""}, return: ${property}}`];
}

function resultNote(lang, schema, fn) {
  const { property, spec } = resultOf(fn);
  const item = refName(spec.items ?? spec);
  if (lang === "typescript")
    return `A list of \`${item}\` (the result's \`${property}\`, which the TypeScript helpers hand over as it is).`;
  if (lang === "python") return `A result whose \`${pyName(property)}\` is a list of \`${item}\`.`;
  if (lang === "go") return `A result whose \`${goName(property)}\` is a list of \`${item}\`.`;
  return `With \`return: ${property}\`, the list itself: \`\${${"name"}[0].id}\` takes a field of the first.`;
}

function functionPage(lang, schema, token, fn) {
  const name = tail(token);
  const example = EXAMPLES[name];
  if (!example) throw new Error(`docs: no example for ${name}: add one to its entry in provider/resources.ts`);
  const style = STYLE[lang];
  const required = fn.inputs?.required ?? [];
  const inputs = Object.entries(fn.inputs?.properties ?? {}).map(
    ([p, spec]) =>
      `| ${code(lang === "go" ? goName(p) : style.prop(p))} | ${code(lang === "go" ? goPlain(spec, required.includes(p)) : style.field(spec))} | ${required.includes(p) ? "yes" : "no"} | ${cell(spec.description)} |`,
  );
  const out = [
    `# ${name} (${LANGUAGES[lang]})`,
    "",
    `${importLine(lang, schema)} Function token \`${token}\`.`,
    "",
    `Generated by \`npm run docs\` from \`schema/schema.json\`; do not edit. ${otherLanguages(lang, name)} · [Index](../README.md)`,
    "",
    cell(fn.description),
    "",
    "## Example",
    "",
    block(lang, functionExample(lang, name, fn, example)),
    "",
    "## Inputs",
    "",
    ...signature(lang, name, fn).map((s) => `- \`${s}\``),
    "",
    ...(inputs.length
      ? [
          ...(lang === "go"
            ? [
                "The fields of `" +
                  goName(name) +
                  "Args` (`" +
                  goName(name) +
                  "OutputArgs` takes each as an input: `pulumi.StringPtrInput`):",
                "",
              ]
            : []),
          "| Input | Type | Required | |",
          "|---|---|---|---|",
          ...inputs,
        ]
      : ["None."]),
    "",
    "## Outputs",
    "",
    resultNote(lang, schema, fn).replace("${name[0]", `\${${example.name}[0]`),
    "",
    ...typeSections(lang, schema, typesUsed(schema, [resultOf(fn).spec]), []),
  ];
  return (
    out
      .join("\n")
      .replace(/\n{3,}/g, "\n\n")
      .trimEnd() + "\n"
  );
}

function indexPage(schema) {
  const resources = Object.entries(schema.resources);
  const functions = Object.entries(schema.functions);
  const links = (name) =>
    Object.entries(LANGUAGES)
      .map(([l, label]) => `[${label}](${l}/${name}.md)`)
      .join(" · ");
  const firstSentence = (text) => cell(text).split(/(?<=\.)\s/)[0];
  return (
    [
      "# Reference",
      "",
      `Generated by \`npm run docs\` from \`schema/schema.json\` (the Pulumi package schema of \`${schema.name}\` ${schema.version}, itself generated from the provider modules by \`npm run schema\`); do not edit.`,
      "",
      "| Language | Package | What runs the resources |",
      "|---|---|---|",
      "| TypeScript | `@accessctl/pulumi` | dynamic providers inside the package: nothing else to install |",
      "| TypeScript | `@accessctl/pulumi/plugin` | the same classes, backed by the plugin `pulumi-resource-accessctl` |",
      `| TypeScript | \`${schema.language.nodejs.packageName}\` ([sdks/nodejs](../../sdks/nodejs)) | the SDK Pulumi's generator writes from the schema; the same names, the plugin |`,
      `| Python | \`${schema.language.python.packageName}\` ([sdks/python](../../sdks/python)) | the plugin |`,
      `| Go | \`${schema.language.go.importBasePath}\` ([sdks/go](../../sdks/go)) | the plugin |`,
      "| YAML | none | the plugin |",
      "",
      "A stack moves from the dynamic providers to the plugin without replacing anything: each resource of the schema has an alias to the type of its dynamic resource (`pulumi-nodejs:dynamic/accessctl:<Name>`).",
      "",
      "## Resources",
      "",
      "| Resource | | Pages |",
      "|---|---|---|",
      ...resources.map(
        ([token, r]) => `| \`${tail(token)}\` | ${firstSentence(r.description)} | ${links(tail(token))} |`,
      ),
      "",
      "## Functions",
      "",
      "| Function | | Pages |",
      "|---|---|---|",
      ...functions.map(
        ([token, f]) => `| \`${tail(token)}\` | ${firstSentence(f.description)} | ${links(tail(token))} |`,
      ),
      "",
      "## Provider configuration",
      "",
      "Stack config `accessctl:<key>` (the default provider), or the inputs of a provider resource (`new accessctl.Provider(…)` in the plugin's SDKs).",
      "",
      "| Key | Type | |",
      "|---|---|---|",
      ...Object.entries(schema.config.variables).map(
        ([k, spec]) =>
          `| \`accessctl:${k}\` | ${code(yamlType(spec))} | ${spec.secret ? "**secret.** " : ""}${cell(spec.description)} |`,
      ),
      "",
      ...typeSections("yaml", schema, typesUsed(schema, Object.values(schema.config.variables)), []),
      "## On change",
      "",
      "Each input's page says what `pulumi up` does when its value changes: **update in place** (one request to the API; the object keeps its id), **replace** (a new object is created, then the old one deleted, unless the page says otherwise), or nothing (an input read only when the object is created or taken over).",
    ]
      .join("\n")
      .replace(/\n{3,}/g, "\n\n")
      .trimEnd() + "\n"
  );
}

/** { "typescript/ApiKey.md": text, …, "README.md": the index } from a schema. */
function generate(schema = JSON.parse(fs.readFileSync(SCHEMA, "utf8"))) {
  TOKEN = (name) => `${schema.name}:index:${name}`;
  const pages = { "README.md": indexPage(schema) };
  for (const lang of Object.keys(LANGUAGES)) {
    for (const [token, resource] of Object.entries(schema.resources))
      pages[`${lang}/${tail(token)}.md`] = resourcePage(lang, schema, token, resource);
    for (const [token, fn] of Object.entries(schema.functions))
      pages[`${lang}/${tail(token)}.md`] = functionPage(lang, schema, token, fn);
  }
  return pages;
}

function write(outDir, schema) {
  const pages = generate(schema);
  fs.rmSync(outDir, { recursive: true, force: true });
  for (const [name, text] of Object.entries(pages)) {
    fs.mkdirSync(path.dirname(path.join(outDir, name)), { recursive: true });
    fs.writeFileSync(path.join(outDir, name), text);
  }
  return pages;
}

module.exports = { generate, write, EXAMPLES, LANGUAGES, pyName, goName };

if (require.main === module) {
  const outDir = path.resolve(process.argv[2] ?? path.join(REPO, "docs/reference"));
  const schema = process.argv[3] ? JSON.parse(fs.readFileSync(process.argv[3], "utf8")) : undefined;
  const pages = write(outDir, schema);
  process.stderr.write(`docs: ${Object.keys(pages).length} pages in ${path.relative(process.cwd(), outDir) || "."}\n`);
}
