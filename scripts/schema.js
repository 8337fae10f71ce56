#!/usr/bin/env node
// `npm run schema`: schema/schema.json, the Pulumi package schema of the plugin
// `pulumi-resource-accessctl`, generated with the TypeScript compiler (our own devDependency) from
// one source, the one the dynamic providers and their SDK are made of:
//   - the registry, provider/resources.ts (read from dist/provider: needs a build): which resources
//     and functions there are, their type tokens, aliases (the dynamic type of each), hideDiffs,
//     secret outputs and a function's result property;
//   - each resource's provider module (the registry's `load`), whose `<Name>Inputs` and
//     `<Name>Outputs` interfaces give the inputs and outputs with their doc comments, and whose
//     FIELDS table gives what is required and what replaces (onChange "replace" →
//     willReplaceOnChanges); the class of that name sdk/index.ts exports gives the resource's
//     description (its doc comment) and, where the interfaces have none, a property's;
//   - each function's list helper in sdk/index.ts (listApiKeys, listIpPolicyRules): its parameter's
//     interface gives the function's inputs, its Promise's type the outputs; the provider module
//     exports the function of that name the plugin calls;
//   - ProviderConfig in provider/config.ts: the provider's config variables and inputs.
// JSDoc tags that say what TypeScript cannot: `@secret` (secret: true; a resource's secret outputs
// must be its registry entry's secretOutputs), `@integer` (a number that is a whole number),
// `@onChange <text>` (what a change of an input does, when that needs more words than "update in
// place" or "replace"), `@previewForm <Interface>` on an object type (a preview shows its values in
// that interface's shape: only what both require is required in the schema).
// Named interfaces become object types `accessctl:index:<Name>`; an anonymous object type is an
// error (name it). Each input property carries `language.accessctl.onChange` ("update", "replace",
// "none", and the @onChange text): what scripts/docs.js says a change does (Pulumi ignores languages
// it does not know). test/tools/schema.test.ts regenerates in memory and compares.
//   node scripts/schema.js [out.json]     (default schema/schema.json)
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const ts = require("typescript");

const REPO = path.resolve(__dirname, "..");
const ENTRY = path.join(REPO, "sdk/index.ts");
const CONFIG = path.join(REPO, "provider/config.ts");
const SCHEMA = path.join(REPO, "schema/schema.json");

/** The registry of resources and functions, as built (dist/provider/resources.js). */
function registry() {
  const built = path.join(REPO, "dist/provider/resources.js");
  if (!fs.existsSync(built))
    throw new Error(`schema: ${path.relative(REPO, built)} is missing: run \`npm run build\` first`);
  return require(built);
}
const { PACKAGE, MODULE } = registry();
const token = (name) => `${PACKAGE}:${MODULE}:${name}`;

/** The source file of a module a registry entry loads (dist/provider/x.js → provider/x.ts), and the module. */
function sourceOf(load, what) {
  const loaded = load();
  const found = Object.values(require.cache).find((m) => m && m.exports === loaded);
  if (!found) throw new Error(`schema: cannot tell which file the registry's ${what} loads`);
  return {
    file: path.join(REPO, path.relative(path.join(REPO, "dist"), found.filename)).replace(/\.js$/, ".ts"),
    module: loaded,
  };
}

function program() {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(REPO, "tsconfig.json"),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
  );
  return ts.createProgram([ENTRY, CONFIG], { ...config.options, noEmit: true, incremental: false });
}

const oneLine = (text) =>
  text
    .replace(/[ \t]*\n[ \t]*/g, " ")
    .replace(/ {2,}/g, " ")
    .trim();

function generate() {
  const prog = program();
  const checker = prog.getTypeChecker();
  const pkg = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8"));
  const pulumiVersion = pkg.devDependencies["@pulumi/pulumi"].replace(/^[^\d]*/, "");
  const types = {};

  const docs = (symbol) => oneLine(ts.displayPartsToString(symbol.getDocumentationComment(checker)));
  const tag = (symbol, name) => {
    const found = symbol.getJsDocTags().find((t) => t.name === name);
    return found && oneLine(ts.displayPartsToString(found.text));
  };
  const hasTag = (symbol, name) => tag(symbol, name) !== undefined;
  const optional = (symbol) => !!(symbol.flags & ts.SymbolFlags.Optional);
  const exportsOf = (file) => {
    const source = prog.getSourceFile(file);
    if (!source) throw new Error(`schema: ${path.relative(REPO, file)} is not part of the program`);
    return checker
      .getExportsOfModule(checker.getSymbolAtLocation(source))
      .map((s) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s));
  };
  const exported = (file, name) => {
    const symbol = exportsOf(file).find((s) => s.name === name);
    if (!symbol) throw new Error(`schema: ${path.relative(REPO, file)} exports no ${name}`);
    return symbol;
  };
  /** The properties of an interface (inherited ones too: ProfileInput's profile), in declaration order; Pulumi's own `__` keys left out. */
  const propertiesOf = (symbol) =>
    checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol)).filter((p) => !p.name.startsWith("__"));

  /** The schema type of a TypeScript type; `where` names it in errors. */
  function typeSpec(type, where) {
    if (type.flags & (ts.TypeFlags.Unknown | ts.TypeFlags.Any)) return { $ref: "pulumi.json#/Any" };
    type = checker.getNonNullableType(type);
    const parts = type.isUnion() ? type.types : [type];
    if (parts.every((t) => t.flags & ts.TypeFlags.StringLike)) return { type: "string" };
    if (parts.every((t) => t.flags & ts.TypeFlags.BooleanLike)) return { type: "boolean" };
    if (parts.every((t) => t.flags & ts.TypeFlags.NumberLike)) return { type: "number" };
    if (checker.isArrayType(type))
      return { type: "array", items: typeSpec(checker.getTypeArguments(type)[0], `${where}[]`) };
    const index = checker.getIndexInfoOfType(type, ts.IndexKind.String);
    if (index && checker.getPropertiesOfType(type).length === 0)
      return { type: "object", additionalProperties: typeSpec(index.type, `${where}{}`) };
    if (type.flags & ts.TypeFlags.Object) {
      const symbol = type.aliasSymbol ?? type.getSymbol();
      if (!symbol || symbol.name.startsWith("__"))
        throw new Error(
          `schema: ${where} has an anonymous object type; give it a named interface (it becomes a type of the schema)`,
        );
      objectType(symbol);
      return { $ref: `#/types/${token(symbol.name)}` };
    }
    throw new Error(`schema: ${where}: no schema type for ${checker.typeToString(type)}`);
  }

  /** A property of the schema from a property of an interface: its type, description, secret. */
  function propertySpec(symbol, where, fallbackDocs = []) {
    const spec = typeSpec(checker.getTypeOfSymbol(symbol), where);
    if (hasTag(symbol, "integer")) {
      if (spec.type !== "number") throw new Error(`schema: ${where} is @integer but not a number`);
      spec.type = "integer";
    }
    const description = [docs(symbol), ...fallbackDocs].find((d) => d);
    if (description) spec.description = description;
    if (hasTag(symbol, "secret")) spec.secret = true;
    return spec;
  }

  /** `accessctl:index:<Name>` from a named interface: its properties, required where it has them (and so does its @previewForm). */
  function objectType(symbol) {
    const key = token(symbol.name);
    if (types[key]) return;
    types[key] = {}; // a type that refers to itself
    const properties = {};
    for (const p of propertiesOf(symbol)) properties[p.name] = propertySpec(p, `${symbol.name}.${p.name}`);
    let required = propertiesOf(symbol)
      .filter((p) => !optional(p))
      .map((p) => p.name);
    const previewForm = tag(symbol, "previewForm");
    if (previewForm) {
      const form = symbol.declarations[0].getSourceFile().fileName;
      const alsoThere = propertiesOf(exported(form, previewForm))
        .filter((p) => !optional(p))
        .map((p) => p.name);
      required = required.filter((name) => alsoThere.includes(name));
    }
    types[key] = {
      type: "object",
      ...(docs(symbol) ? { description: docs(symbol) } : {}),
      properties,
      ...(required.length ? { required } : {}),
    };
  }

  /** What a change of an input does (docs.js says it): from the table of fields, and the input's @onChange. */
  function onChange(field, symbol) {
    const kind = field?.onChange ?? "none";
    const note = tag(symbol, "onChange");
    return { accessctl: { onChange: kind, ...(note ? { note } : {}) } };
  }

  /** A resource of the registry: `cls`, the class of its name sdk/index.ts exports. */
  function resource(entry, cls) {
    const { file, module } = sourceOf(entry.load, `${entry.name}.load`);
    const fields = module.FIELDS;
    if (!fields) throw new Error(`schema: ${path.relative(REPO, file)} exports no FIELDS`);
    const inputs = propertiesOf(exported(file, `${cls.name}Inputs`));
    const outputs = propertiesOf(exported(file, `${cls.name}Outputs`));
    const classDocs = (name) => {
      const p = checker.getPropertyOfType(checker.getDeclaredTypeOfSymbol(cls), name);
      return p ? [docs(p)] : [];
    };

    const inputProperties = {};
    const requiredInputs = [];
    for (const p of inputs) {
      const field = fields[p.name];
      if (!field) throw new Error(`schema: ${cls.name}Inputs.${p.name} has no entry in FIELDS`);
      if (!!field.required === optional(p))
        throw new Error(
          `schema: ${cls.name}Inputs.${p.name} is ${optional(p) ? "optional" : "required"} in TypeScript but not in FIELDS`,
        );
      const spec = propertySpec(p, `${cls.name}Inputs.${p.name}`);
      if (field.onChange === "replace") spec.willReplaceOnChanges = true;
      spec.language = onChange(field, p);
      inputProperties[p.name] = spec;
      if (field.required) requiredInputs.push(p.name);
    }
    for (const name of Object.keys(fields))
      if (!inputs.some((p) => p.name === name))
        throw new Error(`schema: FIELDS of ${cls.name} has ${name}, which ${cls.name}Inputs lacks`);

    // The outputs: <Name>Outputs, and every input the program declares (an output under its name, as the provider keeps it).
    const properties = {};
    for (const p of outputs) {
      const input = inputs.find((i) => i.name === p.name);
      properties[p.name] = propertySpec(p, `${cls.name}Outputs.${p.name}`, [
        ...classDocs(p.name),
        ...(input ? [docs(input)] : []),
      ]);
    }
    for (const p of inputs) {
      if (!properties[p.name]) properties[p.name] = propertySpec(p, `${cls.name}Inputs.${p.name}`, classDocs(p.name));
    }
    const required = outputs.filter((p) => !optional(p)).map((p) => p.name);
    const names = outputs.map((p) => p.name);
    if (JSON.stringify(names.slice().sort()) !== JSON.stringify([...entry.outputs].sort()))
      throw new Error(
        `schema: the registry's outputs of ${entry.name} (${entry.outputs.join(", ")}) are not those of ${cls.name}Outputs (${names.join(", ")})`,
      );
    const secret = Object.keys(properties)
      .filter((k) => properties[k].secret)
      .sort();
    if (JSON.stringify(secret) !== JSON.stringify([...(entry.secretOutputs ?? [])].sort()))
      throw new Error(
        `schema: ${entry.name}'s @secret outputs (${secret.join(", ") || "none"}) are not its registry entry's secretOutputs (${(entry.secretOutputs ?? []).join(", ") || "none"})`,
      );
    return {
      description: docs(cls),
      properties,
      required,
      inputProperties,
      ...(requiredInputs.length ? { requiredInputs } : {}),
      aliases: [{ type: entry.dynamicType }],
      // Pulumi's diff of these properties prints every element, changed or not: the provider shows
      // its own (a set's plan). The SDKs pass them as the hideDiffs option (scripts/sdks.js).
      ...(entry.hideDiffs ? { language: { accessctl: { hideDiffs: [...entry.hideDiffs] } } } : {}),
    };
  }

  /** A function of the registry: its list helper's parameter's interface as the inputs, what its Promise holds as the outputs. */
  function fn(entry, symbol) {
    const decl = symbol.declarations[0];
    const providerFile = sourceOf(entry.load, `${entry.name}.load`).file;
    if (!exportsOf(providerFile).some((s) => s.name === symbol.name && s.flags & ts.SymbolFlags.Function)) {
      throw new Error(
        `schema: ${path.relative(REPO, providerFile)} exports no function ${symbol.name} (what the plugin's ${symbol.name} calls)`,
      );
    }
    const sig = checker.getSignatureFromDeclaration(decl);
    if (sig.parameters.length > 1)
      throw new Error(`schema: ${symbol.name} takes more than one parameter (an object of inputs)`);
    const spec = { description: docs(symbol) };
    if (sig.parameters.length) {
      const paramType = checker.getNonNullableType(checker.getTypeOfSymbolAtLocation(sig.parameters[0], decl));
      const filter = paramType.aliasSymbol ?? paramType.getSymbol();
      const props = propertiesOf(filter);
      const required = props.filter((p) => !optional(p)).map((p) => p.name);
      spec.inputs = {
        ...(docs(filter) ? { description: docs(filter) } : {}),
        properties: Object.fromEntries(props.map((p) => [p.name, propertySpec(p, `${filter.name}.${p.name}`)])),
        ...(required.length ? { required } : {}),
      };
    }
    const returned = sig.getReturnType();
    const promised = returned.getSymbol()?.name === "Promise" ? checker.getTypeArguments(returned)[0] : returned;
    // A list comes back as an object of one property, named by the registry's `result`: every SDK
    // then gives a typed result (Python's generator gives plain dicts for a bare list).
    const result = entry.result;
    spec.outputs = { properties: { [result]: typeSpec(promised, `${symbol.name}()`) }, required: [result] };
    return spec;
  }

  // ---- the package -----------------------------------------------------------------------------

  const { RESOURCES, FUNCTIONS } = registry();
  const sdkExports = exportsOf(ENTRY);
  const byName = (entries) => Object.values(entries).sort((a, b) => a.name.localeCompare(b.name));
  /** The export of sdk/index.ts of each name, and nothing it exports left out of the registry. */
  const sdkOf = (entries, flag, what) => {
    const exported = sdkExports.filter((s) => s.flags & flag && !s.name.endsWith("Output"));
    for (const s of exported)
      if (!entries.some((e) => e.name === s.name))
        throw new Error(
          `schema: sdk/index.ts exports the ${what} ${s.name}, which the registry (provider/resources.ts) lacks`,
        );
    return (name) =>
      exported.find((s) => s.name === name) ??
      (() => {
        throw new Error(`schema: sdk/index.ts exports no ${what} ${name} (the registry's)`);
      })();
  };
  const resources = {};
  const classOf = sdkOf(byName(RESOURCES), ts.SymbolFlags.Class, "class");
  for (const entry of byName(RESOURCES)) {
    if (entry.token !== token(entry.name))
      throw new Error(`schema: ${entry.name}'s token ${entry.token} is not ${token(entry.name)}`);
    resources[entry.token] = resource(entry, classOf(entry.name));
  }
  const functions = {};
  const helperOf = sdkOf(byName(FUNCTIONS), ts.SymbolFlags.Function, "list helper");
  for (const entry of byName(FUNCTIONS)) functions[entry.token] = fn(entry, helperOf(entry.name));

  const providerConfig = exported(CONFIG, "ProviderConfig");
  const variables = Object.fromEntries(
    propertiesOf(providerConfig).map((p) => [p.name, propertySpec(p, `ProviderConfig.${p.name}`)]),
  );

  const sortKeys = (o) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
  return {
    name: PACKAGE,
    displayName: "accessctl",
    version: pkg.version,
    description:
      "Pulumi resources for an account's access control: API keys, IP policy rules, and the mutual TLS module of a TLS edge.",
    keywords: ["pulumi", PACKAGE, "kind/native"],
    license: pkg.license,
    publisher: "accessctl",
    config: { variables },
    provider: {
      description: docs(providerConfig),
      inputProperties: variables,
    },
    types: sortKeys(types),
    resources,
    functions,
    language: {
      nodejs: {
        packageName: `@${PACKAGE}/pulumi-${PACKAGE}`,
        packageDescription: `Pulumi SDK of the ${PACKAGE} plugin (pulumi-resource-${PACKAGE}): API keys, IP policy rules, TLS edge mutual TLS.`,
        dependencies: { "@pulumi/pulumi": `^${pulumiVersion}` },
        // The TypeScript and Node.js types this repository builds with (the generator's defaults are older).
        typescriptVersion: pkg.devDependencies.typescript,
        devDependencies: { "@types/node": pkg.devDependencies["@types/node"] },
        respectSchemaVersion: true,
      },
      python: {
        packageName: `pulumi_${PACKAGE}`,
        requires: { pulumi: `>=${pulumiVersion},<4.0.0` },
        respectSchemaVersion: true,
        pyproject: { enabled: true },
      },
      go: {
        importBasePath: `github.com/${PACKAGE}/pulumi-${PACKAGE}/sdks/go/${PACKAGE}`,
        respectSchemaVersion: true,
        generateResourceContainerTypes: false,
      },
    },
  };
}

/** The schema as written to schema/schema.json: two-space JSON and a final newline. */
function text(schema = generate()) {
  return JSON.stringify(schema, null, 2) + "\n";
}

function write(file = SCHEMA) {
  const out = text();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, out);
  return out;
}

module.exports = { generate, text, write, SCHEMA };

if (require.main === module) {
  const file = path.resolve(process.argv[2] ?? SCHEMA);
  const schema = JSON.parse(write(file));
  process.stderr.write(
    `schema: ${Object.keys(schema.resources).length} resources, ${Object.keys(schema.functions).length} functions, ${Object.keys(schema.types).length} types in ${path.relative(process.cwd(), file) || file}\n`,
  );
}
