/**
 * Checks every link of the built docs site (docs/.vitepress/dist) and of the repository's own
 * Markdown pages that link into docs/ (README.md, CONTRIBUTING.md, examples/README.md): the page
 * or file exists and the `#anchor` is an id on it. VitePress's build fails on a dead page link
 * but not on a dead anchor; this catches both. Run by `npm run docs:build` after the build.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, posix, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { githubSlug } from "./github-slug.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "docs", ".vitepress", "dist");
const base = process.env.DOCS_BASE ?? "/";

export { githubSlug };

function htmlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === "assets" ? [] : htmlFiles(path);
    return name.endsWith(".html") ? [path] : [];
  });
}

const idCache = new Map<string, Set<string>>();
function idsOf(file: string): Set<string> {
  let ids = idCache.get(file);
  if (!ids) {
    const html = readFileSync(file, "utf8");
    ids = new Set([...html.matchAll(/\sid="([^"]+)"/g)].map(([, id]) => decodeHtml(id as string)));
    idCache.set(file, ids);
  }
  return ids;
}

function decodeHtml(text: string): string {
  return text
    .replace(/&amp;/g, "&")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">");
}

/** The built file a site path names (`/guides/x`, `/guides/x.html`, `/reference/api/`). */
function builtFile(sitePath: string): string | undefined {
  const path = decodeURIComponent(sitePath.slice(base.length - 1));
  const candidates = path.endsWith("/")
    ? [join(dist, path, "index.html")]
    : [join(dist, path), join(dist, `${path}.html`), join(dist, path, "index.html")];
  return candidates.find((candidate) => existsSync(candidate) && statSync(candidate).isFile());
}

/** Problems with the links of the built site, one line each. */
export function siteProblems(): string[] {
  const problems: string[] = [];
  for (const page of htmlFiles(dist)) {
    const html = readFileSync(page, "utf8");
    const pagePath = `${base}${relative(dist, page).split("\\").join("/")}`;
    for (const [, raw] of html.matchAll(/<a\s[^>]*?href="([^"]*)"/g)) {
      const href = decodeHtml(raw as string);
      if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith("//")) continue;
      const [pathPart = "", fragment] = href.split("#", 2);
      const target = pathPart === "" ? page : builtFile(posix.resolve(posix.dirname(pagePath), pathPart));
      const where = relative(root, page);
      if (!target) {
        problems.push(`${where}: link to a missing page: ${href}`);
        continue;
      }
      if (fragment && target.endsWith(".html") && !idsOf(target).has(decodeURIComponent(fragment))) {
        problems.push(`${where}: link to a missing anchor: ${href}`);
      }
    }
  }
  return problems;
}

/** Problems with the relative links of a Markdown file outside the site (README.md and co). */
export function markdownProblems(file: string): string[] {
  const problems: string[] = [];
  const absolute = resolve(root, file);
  const text = readFileSync(absolute, "utf8").replace(/```[\s\S]*?```/g, "");
  const ownIds = new Set<string>();
  for (const [, heading] of text.matchAll(/^#{1,6} (.+)$/gm)) ownIds.add(githubSlug(heading as string));
  for (const [, raw] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const href = raw as string;
    if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue;
    const [pathPart = "", fragment] = href.split("#", 2);
    if (pathPart === "") {
      if (fragment && !ownIds.has(fragment)) problems.push(`${file}: link to a missing anchor: ${href}`);
      continue;
    }
    const target = resolve(dirname(absolute), decodeURIComponent(pathPart));
    if (!existsSync(target)) {
      problems.push(`${file}: link to a missing file: ${href}`);
      continue;
    }
    const inDocs = relative(join(root, "docs"), target).split("\\").join("/");
    if (fragment && !inDocs.startsWith("..") && inDocs.endsWith(".md")) {
      const built = join(dist, inDocs.replace(/\.md$/, ".html"));
      if (!existsSync(built)) problems.push(`${file}: ${inDocs} is not a page of the site`);
      else if (!idsOf(built).has(fragment)) problems.push(`${file}: link to a missing anchor: ${href}`);
    }
  }
  return problems;
}

/** The Markdown files outside docs/ whose links are checked. */
export const REPOSITORY_PAGES = ["README.md", "CONTRIBUTING.md", "examples/README.md", "docs/README.md"];

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (!existsSync(dist)) {
    console.error("docs/.vitepress/dist is missing: run `npm run docs:build`");
    process.exit(1);
  }
  const problems = [
    ...siteProblems(),
    ...REPOSITORY_PAGES.filter((file) => existsSync(join(root, file))).flatMap(markdownProblems),
  ];
  if (problems.length > 0) {
    console.error(problems.join("\n"));
    console.error(`${problems.length} broken link(s)`);
    process.exit(1);
  }
  console.log(`docs: ${htmlFiles(dist).length} pages, every link and anchor resolves`);
}
