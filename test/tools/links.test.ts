// The documentation's links hold: every relative link of README.md, CONTRIBUTING.md, docs/ (the
// generated reference included) and sdks/README.md names a file or directory that exists, and every
// `#anchor` (to a .md file, or within the page) names a heading of that page by GitHub's rules. And
// every page or section that a message of the code, a generated file, an example or the template
// names ("see docs/guides/existing-objects.md, \"accessctl-export: an account as a program\"")
// exists. The README stays a front page: at most 250 lines.
import * as fs from "node:fs";
import * as path from "node:path";
import * as ts from "typescript";
import { describe, expect, it } from "vitest";

const REPO = path.resolve(__dirname, "../..");

function walk(dir: string, keep: (file: string) => boolean): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(REPO, path.join(e.parentPath, e.name)))
    .filter((f) => !f.split(path.sep).includes("node_modules") && keep(f))
    .sort();
}

/** The pages whose links are checked, relative to the repository. */
function pages(): string[] {
  return ["README.md", "CONTRIBUTING.md", "sdks/README.md", ...walk(path.join(REPO, "docs"), (f) => f.endsWith(".md"))];
}

/** The text a reader sees: no front matter, fenced code blocks blanked (kept as empty lines, so line numbers hold). */
function prose(text: string): string {
  const lines = text.split("\n");
  if (lines[0] === "---") {
    const end = lines.indexOf("---", 1);
    for (let i = 0; i <= end; i++) lines[i] = "";
  }
  let fence: string | undefined;
  return lines
    .map((line) => {
      const m = /^\s*(`{3,}|~{3,})/.exec(line);
      if (fence) {
        if (m && m[1][0] === fence[0] && m[1].length >= fence.length && line.trim() === m[1]) fence = undefined;
        return "";
      }
      if (m) {
        fence = m[1];
        return "";
      }
      return line;
    })
    .join("\n");
}

/** GitHub's anchor for a heading: the rendered text lowercased, punctuation dropped (but - and _), each space a -. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link: its text
    .replace(/<[^>]+>/g, "") // inline HTML
    .replace(/`/g, "");
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a page: one per heading (a repeated one gets -1, -2, … as on GitHub), and <a id/name>. */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen: Record<string, number> = {};
  for (const line of prose(text).split("\n")) {
    const m = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen[base] ?? 0;
    seen[base] = n + 1;
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1]);
  return out;
}

/** The links of a page outside code: { target, line }. */
function links(text: string): { target: string; line: number }[] {
  // Code spans blanked (same length, so offsets hold); they may hold brackets and span lines.
  const visible = prose(text).replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (span) => span.replace(/[^\n]/g, " "));
  const out: { target: string; line: number }[] = [];
  const lineOf = (index: number) => visible.slice(0, index).split("\n").length;
  for (const m of visible.matchAll(/\[((?:[^[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g))
    out.push({ target: m[2], line: lineOf(m.index!) });
  for (const m of visible.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm))
    out.push({ target: m[1], line: lineOf(m.index!) });
  return out;
}

const read = (file: string) => fs.readFileSync(path.join(REPO, file), "utf8");

/** What is wrong with a link of `page` to `target` (relative to the repository), or undefined. */
function brokenLink(page: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto:: not ours to check
  const hash = target.indexOf("#");
  const file = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  if (file === "" && anchor === undefined) return "an empty link";
  const resolved = file === "" ? page : path.normalize(path.join(path.dirname(page), file));
  if (resolved.startsWith("..")) return `${resolved} is outside the repository`;
  const full = path.join(REPO, resolved);
  if (!fs.existsSync(full)) return `${resolved} does not exist`;
  if (anchor === undefined) return undefined;
  if (!resolved.endsWith(".md")) return `#${anchor} on ${resolved}, which is not a page`;
  const known = anchors(read(resolved));
  return known.has(anchor) ? undefined : `${resolved} has no heading for #${anchor} (it has: ${[...known].join(", ")})`;
}

/** The text of every string literal (template literals' text parts too) of a TypeScript or JavaScript file. */
function stringLiterals(file: string): string[] {
  const source = ts.createSourceFile(
    file,
    read(file),
    ts.ScriptTarget.Latest,
    false,
    file.endsWith(".ts") ? ts.ScriptKind.TS : ts.ScriptKind.JS,
  );
  const out: string[] = [];
  const textOf = (node: ts.Node): string | undefined => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
    if (!ts.isTemplateExpression(node)) return undefined;
    return [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join("${}");
  };
  const isPlus = (node: ts.Node): node is ts.BinaryExpression =>
    ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken;
  const operands = (node: ts.Expression): ts.Expression[] =>
    isPlus(node) ? [...operands(node.left), ...operands(node.right)] : [node];
  const visit = (node: ts.Node) => {
    const text = textOf(node);
    const parts = isPlus(node) ? operands(node) : [];
    if (text !== undefined) out.push(text);
    // A text split over lines (`"… docs/guides/x.md, " + "\"Section\""`) is read as one.
    else if (parts.some((o) => textOf(o) !== undefined)) {
      out.push(parts.map((o) => textOf(o) ?? "${}").join(""));
      return parts.filter((o) => textOf(o) === undefined).forEach(visit);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/**
 * Where a text points into the documentation: a page (docs/…, guides/…, README) and, when a section
 * follows it in quotes (`docs/guides/x.md, "Section"`, `README "Layout"`) or as an #anchor, that section.
 */
function pointers(text: string): { page: string; section?: string; anchor?: string }[] {
  const out: { page: string; section?: string; anchor?: string }[] = [];
  const section = String.raw`(?:#([\w-]+))?(?:(?: (?:of|in) @accessctl/pulumi)?,? "([^"]+)")?`;
  for (const m of text.matchAll(
    new RegExp(
      String.raw`(?<![\w/.-])(?:\.\./)*((?:docs/)?(?:guides|design|reference)/[\w./-]*[\w/]|docs/[\w./-]*[\w/]|docs/)` +
        section,
      "g",
    ),
  )) {
    const page = m[1].startsWith("docs/") ? m[1] : `docs/${m[1]}`;
    out.push({ page, anchor: m[2], section: m[3] });
  }
  for (const m of text.matchAll(new RegExp(String.raw`(?<![\w/.-])README(?:\.md)?` + section, "g"))) {
    if (m[1] || m[2]) out.push({ page: "README.md", anchor: m[1], section: m[2] });
  }
  return out;
}

/** What is wrong with a pointer, or undefined. */
function brokenPointer(p: { page: string; section?: string; anchor?: string }): string | undefined {
  if (!fs.existsSync(path.join(REPO, p.page))) return `${p.page} does not exist`;
  if (!p.section && !p.anchor) return undefined;
  if (!p.page.endsWith(".md")) return `${p.page} is not a page, so it has no sections`;
  const known = anchors(read(p.page));
  const wanted = p.anchor ?? slug(p.section!);
  return known.has(wanted)
    ? undefined
    : `${p.page} has no section ${p.section ? `"${p.section}"` : `#${p.anchor}`} (#${wanted})`;
}

describe("documentation links", () => {
  it("finds the pages, links and headings it checks", () => {
    const all = pages();
    expect(all).toEqual(
      expect.arrayContaining([
        "README.md",
        "CONTRIBUTING.md",
        "docs/_index.md",
        "docs/installation-configuration.md",
        "docs/performance.md",
        "docs/guides/troubleshooting.md",
        "docs/reference/README.md",
        "docs/reference/python/ApiKey.md",
      ]),
    );
    expect(all.flatMap((page) => links(read(page))).length).toBeGreaterThan(300);
    expect(slug("`pulumi up` was killed, or the service died mid-update")).toBe(
      "pulumi-up-was-killed-or-the-service-died-mid-update",
    );
    expect(slug("`ACCESSCTL_ADOPT_EXISTING=1`: what it takes over")).toBe(
      "accessctl_adopt_existing1-what-it-takes-over",
    );
    expect(slug("Refresh at the service's limit")).toBe("refresh-at-the-services-limit");
    expect(slug(".NET and Java")).toBe("net-and-java");
    expect([...anchors("# A\n```\n# not a heading\n```\n## A\n## `b`: c (d)\n")]).toEqual(["a", "a-1", "b-c-d"]);
    expect(links("[x](a.md) `[y](b.md)` [z\nw](c.md#d) and\n```\n[q](e.md)\n```\n").map((l) => l.target)).toEqual([
      "a.md",
      "c.md#d",
    ]);
  });

  it("resolve: every relative link names a file that exists, and every #anchor a heading of its page", () => {
    const broken: string[] = [];
    for (const page of pages()) {
      for (const { target, line } of links(read(page))) {
        const why = brokenLink(page, target);
        if (why) broken.push(`${page}:${line}: (${target}): ${why}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("name sections that exist, wherever the code, a generated file, an example or the template points into the docs", () => {
    const code = ["provider", "plugin", "sdk", "tools", "scripts", "emulator", "contract", "bench"].flatMap((dir) =>
      walk(path.join(REPO, dir), (f) => /\.(ts|js)$/.test(f) && !f.endsWith(".d.ts")),
    );
    const texts = [
      ...code.map((file) => ({ file, texts: stringLiterals(file) })),
      // Read by users as they are, comments included.
      ...["examples", "templates"]
        .flatMap((dir) => walk(path.join(REPO, dir), (f) => /\.(ts|js|ya?ml|json|md)$/.test(f)))
        .map((file) => ({ file, texts: [read(file)] })),
      { file: "schema/schema.json", texts: [read("schema/schema.json")] },
    ];
    const found: string[] = [];
    const broken: string[] = [];
    for (const { file, texts: strings } of texts) {
      for (const text of strings) {
        for (const p of pointers(text)) {
          found.push(`${file} → ${p.page}${p.section ? ` "${p.section}"` : ""}`);
          const why = brokenPointer(p);
          if (why) broken.push(`${file}: ${why}`);
        }
      }
    }
    expect(broken).toEqual([]);
    // What it must see (else the patterns above went blind): the export tool's header, the SDKs' readme's link.
    expect(found).toContain(
      'tools/export.ts → docs/guides/existing-objects.md "accessctl-export: an account as a program"',
    );
    expect(found).toContain("scripts/sdks.js → docs/reference/README.md");
    expect(pointers('See the README of @accessctl/pulumi, "Bring an account under management".')).toEqual([
      { page: "README.md", section: "Bring an account under management", anchor: undefined },
    ]);
    expect(brokenPointer({ page: "README.md", section: "Bring an account under management" })).toMatch(/no section/);
  });

  it("keep the README a front page: at most 250 lines", () => {
    const text = read("README.md");
    expect(text.split("\n").length - (text.endsWith("\n") ? 1 : 0)).toBeLessThanOrEqual(250);
  });
});
