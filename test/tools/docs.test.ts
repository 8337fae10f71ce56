// docs/reference/ is what `npm run docs` generates from schema/schema.json (itself generated from the
// provider modules; test/tools/schema.test.ts checks that one): regenerated here into memory and
// compared page by page, so a changed schema, example or renderer that was not regenerated fails.
// Also checks what each page must say, and that the names and types a page gives for Python, Go and
// TypeScript are the ones the generated SDKs in sdks/ have (scripts/check-examples.js compiles and
// runs the examples themselves against those SDKs).
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import * as sdk from "../../sdk/index";

const REPO = path.resolve(__dirname, "../..");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { generate, LANGUAGES, pyName } = require("../../scripts/docs.js");
const pages: Record<string, string> = generate();
const dir = path.join(REPO, "docs/reference");
const schema = JSON.parse(fs.readFileSync(path.join(REPO, "schema/schema.json"), "utf8"));
const tail = (token: string) => token.split(":").pop()!;
const RESOURCES = Object.keys(schema.resources).map(tail);
const FUNCTIONS = Object.keys(schema.functions).map(tail);

function listFiles(root: string): string[] {
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)));
}
/** The rows of the table that follows a heading: [name, type, …cells]. */
function table(page: string, heading: string): string[][] {
  const start = page.indexOf(`${heading}\n`);
  if (start < 0) return [];
  const rest = page.slice(start + heading.length + 1);
  const next = rest.search(/\n#{2,3} /);
  return (next < 0 ? rest : rest.slice(0, next))
    .split("\n")
    .filter((l) => /^\| `/.test(l))
    .map((l) =>
      l
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((c) => c.trim().replace(/^`|`$/g, "").replace(/\\\|/g, "|")),
    );
}
const sources = (sub: string, ext: string) =>
  listFiles(path.join(REPO, "sdks", sub))
    .filter((f) => f.endsWith(ext))
    .map((f) => fs.readFileSync(path.join(REPO, "sdks", sub, f), "utf8"))
    .join("\n");

describe("reference docs", () => {
  it("are up to date: `npm run docs` regenerates them", () => {
    expect(listFiles(dir).sort()).toEqual(Object.keys(pages).sort());
    for (const [name, text] of Object.entries(pages))
      expect(fs.readFileSync(path.join(dir, name), "utf8"), `docs/reference/${name}: run npm run docs`).toBe(text);
  });

  it("have a page per resource and function in each language, with an example, inputs and outputs", () => {
    expect(Object.keys(LANGUAGES)).toEqual(["typescript", "python", "go", "yaml"]);
    expect(RESOURCES.sort()).toEqual(["ApiKey", "IpPolicyRule", "IpPolicyRuleSet", "TlsEdgeMutualTls"]);
    const fence: Record<string, string> = { typescript: "ts", python: "python", go: "go", yaml: "yaml" };
    for (const lang of Object.keys(LANGUAGES)) {
      for (const name of [...RESOURCES, ...FUNCTIONS]) {
        const page = pages[`${lang}/${name}.md`];
        expect(page, `${lang}/${name}.md`).toMatch(
          new RegExp("## Example\\n\\n```" + fence[lang] + "\\n[\\s\\S]+?```\\n\\n## Inputs\\n[\\s\\S]*## Outputs\\n"),
        );
        expect(pages["README.md"]).toContain(`(${lang}/${name}.md)`);
      }
      for (const name of RESOURCES) {
        const page = pages[`${lang}/${name}.md`];
        const inputs = table(page, "## Inputs");
        expect(inputs.length, `${lang}/${name} inputs`).toBe(
          Object.keys(schema.resources[`accessctl:index:${name}`].inputProperties).length,
        );
        expect(table(page, "## Outputs").length, `${lang}/${name} outputs`).toBe(
          Object.keys(schema.resources[`accessctl:index:${name}`].properties).length,
        );
        expect(page).toContain("## Looking up an existing object");
      }
    }
    // Every resource class of the dynamic-provider package has its TypeScript page.
    const classes = Object.entries(sdk)
      .filter(([, v]) => typeof v === "function" && /^class /.test(String(v)))
      .map(([k]) => k);
    expect(classes.sort()).toEqual(RESOURCES.sort());
  });

  it("say what a change does, what is required and what is secret, in each language's names", () => {
    const row = (lang: string, name: string, heading: string, prop: string) =>
      table(pages[`${lang}/${name}.md`], heading).find((r) => r[0] === prop);
    expect(row("typescript", "IpPolicyRule", "## Inputs", "action")).toEqual([
      "action",
      "string",
      "yes",
      expect.stringMatching(
        /^\*\*replace\*\*: a new rule, then the old one deleted; the old one first when the CIDR stays/,
      ),
      expect.any(String),
    ]);
    expect(row("typescript", "IpPolicyRule", "## Inputs", "cidr")?.slice(0, 4)).toEqual([
      "cidr",
      "string",
      "yes",
      "update in place",
    ]);
    expect(row("python", "IpPolicyRule", "## Inputs", "ip_policy_id")?.slice(0, 4)).toEqual([
      "ip_policy_id",
      "str",
      "yes",
      "**replace**: a new object, then the old one deleted",
    ]);
    expect(row("go", "IpPolicyRuleSet", "## Inputs", "Rules")?.slice(0, 4)).toEqual([
      "Rules",
      "IpPolicyRuleSetRuleArrayInput",
      "yes",
      "update in place: one request per changed rule",
    ]);
    expect(row("yaml", "IpPolicyRuleSet", "## Inputs", "rules")?.slice(1, 4)).toEqual([
      "List<IpPolicyRuleSetRule>",
      "yes",
      "update in place: one request per changed rule",
    ]);
    expect(row("yaml", "IpPolicyRuleSet", "## Outputs", "rules")?.[1]).toBe("Map<IpPolicyRuleSetMember>");
    expect(row("typescript", "ApiKey", "## Inputs", "adoptId")?.[3]).toBe("nothing: read by the first `up` only");
    expect(row("go", "ApiKey", "## Inputs", "Triggers")?.slice(1, 4)).toEqual([
      "pulumi.ArrayInput",
      "no",
      "**replace**: a new object, then the old one deleted",
    ]);
    for (const lang of Object.keys(LANGUAGES)) {
      const token = table(pages[`${lang}/ApiKey.md`], "## Outputs").find((r) => r[0].toLowerCase() === "token")!;
      expect(token[3], lang).toMatch(/^\*\*secret\.\*\* /);
      expect(
        table(pages[`${lang}/ApiKey.md`], "## Outputs").filter((r) => r[3].startsWith("**secret.**")),
      ).toHaveLength(1);
    }
    expect(pages["README.md"]).toMatch(/\| `accessctl:apiKey` \| `String` \| \*\*secret\.\*\* /);
    expect(pages["README.md"]).toMatch(/\| `accessctl:profiles` \| `Map<AccountProfile>` \| \*\*secret\.\*\* /);
  });

  it("give the names and types the generated SDKs have", () => {
    const go = sources("go", ".go");
    const python = sources("python", ".py");
    const nodejs = sources("nodejs", ".ts");
    for (const name of RESOURCES) {
      // Go: each field of the args, the resource and the object types, with its type.
      for (const heading of [
        "## Inputs",
        "## Outputs",
        ...[...pages[`go/${name}.md`].matchAll(/^### `(\w+)`/gm)].map((m) => m[0]),
      ]) {
        for (const [field, type] of table(pages[`go/${name}.md`], heading)) {
          expect(go, `go/${name}.md ${heading}: ${field} ${type}`).toMatch(
            new RegExp(`^\\t${field} ${type.replace(/[*[\]{}.]/g, "\\$&")}( \`pulumi:"\\w+"\`)?$`, "m"),
          );
        }
      }
      // Python: the keyword arguments and the properties.
      const module = fs.readFileSync(path.join(REPO, "sdks/python/pulumi_accessctl", `${pyName(name)}.py`), "utf8");
      for (const [prop] of table(pages[`python/${name}.md`], "## Inputs"))
        expect(module, `python ${name}(${prop}=…)`).toContain(`\n                 ${prop}: pulumi.Input[`);
      for (const [prop] of table(pages[`python/${name}.md`], "## Outputs"))
        expect(module, `python ${name}.${prop}`).toContain(`def ${prop}(self) -> pulumi.Output[`);
      // TypeScript: the generated SDK's args and outputs under the same names.
      for (const [prop] of table(pages[`typescript/${name}.md`], "## Inputs"))
        expect(nodejs).toMatch(new RegExp(`^    ${prop}\\??: pulumi\\.Input<`, "m"));
      const dynamic = fs.readFileSync(path.join(REPO, "sdk", `${pyName(name).replace(/_/g, "-")}.ts`), "utf8");
      for (const [prop] of table(pages[`typescript/${name}.md`], "## Outputs"))
        expect(dynamic, `@accessctl/pulumi ${name}.${prop}`).toContain(
          `declare public readonly ${prop}: pulumi.Output<`,
        );
      for (const [prop] of table(pages[`typescript/${name}.md`], "## Outputs"))
        expect(nodejs).toMatch(new RegExp(`declare public (/\\*out\\*/ )?readonly ${prop}: pulumi\\.Output<`));
    }
    for (const name of FUNCTIONS) {
      expect(go).toContain(`func ${name[0].toUpperCase()}${name.slice(1)}Output(ctx *pulumi.Context`);
      expect(python).toContain(`def ${pyName(name)}_output(`);
      expect(nodejs).toContain(`export function ${name}Output(`);
    }
    expect(python).toContain("def ip_policy_id(self)");
  });

  it("are in the package, with the schema", () => {
    const files = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")).files;
    expect(files).toContain("docs");
    expect(files).toContain("schema");
  });
});
