// docs/reference/ is what `npm run docs` generates from sdk/index.ts and the doc comments: regenerated
// here into memory and compared page by page, so a changed input, doc comment or export that was
// not regenerated fails. Also checks what each page must say.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import * as sdk from "../../sdk/index";

const REPO = path.resolve(__dirname, "../..");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { generate } = require("../../scripts/docs.js");
const pages: Record<string, string> = generate();
const dir = path.join(REPO, "docs/reference");

describe("reference docs", () => {
  it("are up to date: `npm run docs` regenerates them", () => {
    expect(fs.readdirSync(dir).sort()).toEqual(Object.keys(pages).sort());
    for (const [name, text] of Object.entries(pages)) expect(fs.readFileSync(path.join(dir, name), "utf8"), `docs/reference/${name}: run npm run docs`).toBe(text);
  });

  it("have a page per resource class exported by sdk/index.ts, with an example, inputs, outputs and get()", () => {
    const classes = Object.entries(sdk).filter(([, v]) => typeof v === "function" && /^class /.test(String(v))).map(([k]) => k);
    expect(classes.length).toBeGreaterThanOrEqual(3);
    for (const cls of classes) {
      expect(pages[`${cls}.md`], cls).toMatch(/## Inputs\n[\s\S]*\| Input \| Type \| Required \| On change \|[\s\S]*## Outputs\n/);
      expect(pages["README.md"]).toContain(`[${cls}](${cls}.md)`);
    }
    // An example comes from the class's @example tag, get() from its static method.
    for (const cls of ["ApiKey", "IpPolicyRule", "TlsEdgeMutualTls"]) {
      expect(pages[`${cls}.md`], cls).toMatch(/## Example\n\n```ts\n[\s\S]*## Looking up existing objects/);
      expect(pages[`${cls}.md`]).toContain(`### \`${cls}.get(`);
    }
    const rule = pages["IpPolicyRule.md"];
    expect(rule).toMatch(/\| `action` \| `'allow' \\\| 'deny'` \| yes \| \*\*replace\*\*/);
    expect(rule).toMatch(/\| `cidr` \| `string` \| yes \| update in place \|/);
    expect(rule).toMatch(/\| `description` \| `string` \| no \| update in place \| .*at most 255 bytes/);
    expect(rule).toContain("### `listIpPolicyRules(");
    expect(rule).toContain("### `IpPolicyRuleInfo`");
    expect(pages["ApiKey.md"]).toMatch(/\| `ownerId` \| `string` \| no \| \*\*replace\*\*/);
    expect(pages["ApiKey.md"]).toMatch(/\| `token` \| `string \\\| undefined` \|/);
    expect(pages["TlsEdgeMutualTls.md"]).toMatch(/\| `certificateAuthorityIds` \| `string\[\]` \| yes \| update in place/);
  });

  it("are in the package", () => {
    expect(JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")).files).toContain("docs");
  });
});
