/**
 * The docs site: VitePress over docs/ (ADR 030). `npm run docs:build` first writes the generated
 * reference (the CLI's `--help`, TypeDoc's API pages), then builds here, then checks every link and
 * anchor of the built site (scripts/check-docs-links.ts). Pages stay where they are in the
 * repository; this file only arranges them.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { type DefaultTheme, defineConfig, type MarkdownRenderer } from "vitepress";
import { githubSlug } from "../../scripts/github-slug.ts";

const docsDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const repositoryUrl = "https://github.com/forge-guardrails/forge-guardrails";

export { githubSlug };

/** The first `# heading` of a page, for sidebar entries built from a folder. */
function titleOf(file: string): string {
  const heading = /^# (.+)$/m.exec(readFileSync(file, "utf8"))?.[1] ?? posix.basename(file, ".md");
  return heading.replace(/`/g, "");
}

/** Every ADR, in number order: others add records, the sidebar follows. */
function decisionItems(): DefaultTheme.SidebarItem[] {
  return readdirSync(join(docsDir, "decisions"))
    .filter((name) => /^\d{3}-.*\.md$/.test(name))
    .sort()
    .map((name) => ({
      text: `${name.slice(0, 3)} ${titleOf(join(docsDir, "decisions", name)).replace(/^(ADR )?\d+\s*[—:.-]?\s*/, "")}`,
      link: `/decisions/${name.replace(/\.md$/, "")}`,
    }));
}

/** TypeDoc's module pages, one per package subpath (written by `npm run docs:api`). */
const apiItems: DefaultTheme.SidebarItem[] = [
  ["forge-guardrails", "index"],
  ["/machines", "machines"],
  ["/testing", "testing"],
  ["/clients", "clients"],
  ["/llama-cpp", "clients/llama-cpp"],
  ["/anthropic", "clients/anthropic"],
  ["/proxy", "proxy"],
  ["/server", "server"],
  ["/watch", "watch"],
  ["/queue", "queue"],
  ["/mcp", "mcp"],
].map(([text, module]) => ({ text, link: `/reference/api/${module}/` }));

const sidebar: DefaultTheme.Sidebar = [
  {
    text: "Getting started",
    items: [
      { text: "Guarded tool calling on a local model", link: "/getting-started/local-model" },
      { text: "Coding agents on a local model", link: "/getting-started/coding-agents" },
      { text: "Durable runs on Redis", link: "/getting-started/durable-runs" },
    ],
  },
  {
    text: "Guides",
    items: [
      { text: "Workflows and tools", link: "/guides/workflows-and-tools" },
      { text: "Tuning the guardrails", link: "/guides/tuning-guardrails" },
      { text: "Context compaction", link: "/guides/compaction" },
      { text: "Multi-turn conversations", link: "/guides/multi-turn" },
      { text: "Concurrency and timeouts", link: "/guides/concurrency-and-timeouts" },
      { text: "Human approval", link: "/guides/approval" },
      { text: "MCP tools", link: "/guides/mcp" },
      { text: "Serving workflows over MCP", link: "/guides/serving-workflows-over-mcp" },
      { text: "Queue engines and EndpointPool", link: "/guides/queues" },
      { text: "Going to production", link: "/guides/production" },
      { text: "Observing runs", link: "/guides/observing-runs" },
      { text: "Tracing with OpenTelemetry", link: "/guides/tracing-with-opentelemetry" },
      { text: "Middleware: your loop", link: "/guides/middleware" },
      { text: "Statecharts and persistence", link: "/guides/statecharts-and-persistence" },
      { text: "Qualifying a model", link: "/guides/qualifying-a-model" },
      { text: "The proxy, in full", link: "/proxy" },
      { text: "Coding agents, in full", link: "/agents" },
      { text: "forge watch", link: "/watch" },
    ],
  },
  {
    text: "Reference",
    items: [
      { text: "CLI", link: "/reference/cli" },
      { text: "Proxy endpoints and headers", link: "/reference/proxy-http" },
      { text: "Errors", link: "/reference/errors" },
      { text: "API", link: "/reference/api/", collapsed: true, items: apiItems },
    ],
  },
  { text: "Troubleshooting", link: "/troubleshooting" },
  {
    text: "Internals (contributors)",
    collapsed: true,
    items: [
      { text: "Overview", link: "/internals/" },
      { text: "Architecture", link: "/architecture" },
      { text: "Benchmarks", link: "/benchmarks" },
      { text: "Eval results", link: "/eval" },
      { text: "Decisions", collapsed: true, items: decisionItems() },
    ],
  },
];

/** HTML tags a page may use as HTML; anything else in angle brackets is text (`<agent>`, `<n>`). */
const HTML_TAGS = new Set(
  "a b br code details div em hr i img kbd li ol p pre span strong sub summary sup table tbody td th thead tr ul".split(
    " ",
  ),
);

interface MarkdownToken {
  type: string;
  content: string;
  children: MarkdownToken[] | null;
  attrGet(name: string): string | null;
  attrSet(name: string, value: string): void;
}

/**
 * VitePress compiles each page as a Vue template, so a placeholder written bare in prose
 * (`<agent>`, `<n>` in the older pages) would be an unclosed element and `{{` an interpolation.
 * Such raw HTML becomes text here, before the anchor plugin adds its own HTML.
 */
function textNotTemplates(md: MarkdownRenderer) {
  md.core.ruler.after("inline", "forge_text_not_templates", (state) => {
    const visit = (tokens: MarkdownToken[]) => {
      for (const token of tokens) {
        if (token.type === "html_inline" || token.type === "html_block") {
          const tag = /^<\/?([a-zA-Z][a-zA-Z0-9-]*)/.exec(token.content)?.[1]?.toLowerCase();
          const isComment = token.content.startsWith("<!--");
          if (!isComment && (tag === undefined || !HTML_TAGS.has(tag))) {
            token.type = token.type === "html_block" ? "forge_text_block" : "text";
          }
        }
        if (token.children) visit(token.children);
      }
    };
    visit(state.tokens as unknown as MarkdownToken[]);
  });
  md.renderer.rules.forge_text_block = (tokens, index) =>
    `<p>${md.utils.escapeHtml(tokens[index]?.content ?? "")}</p>\n`;
  for (const rule of ["text", "code_inline"] as const) {
    const render = md.renderer.rules[rule];
    md.renderer.rules[rule] = (tokens, index, options, env, self) => {
      const html = render
        ? render(tokens, index, options, env, self)
        : md.utils.escapeHtml(tokens[index]?.content ?? "");
      return html.replace(/\{\{/g, "&#123;&#123;").replace(/\}\}/g, "&#125;&#125;");
    };
  }
}

/**
 * Links that leave docs/ (`../src/x.ts`, `../README.md`) point at the repository on GitHub: the
 * site holds only docs/, and test/architecture/doc-paths.test.ts checks those paths exist.
 */
function repositoryLinks(md: MarkdownRenderer) {
  md.core.ruler.push("forge_repository_links", (state) => {
    const page = (state.env as { relativePath?: string }).relativePath ?? "index.md";
    for (const block of state.tokens as unknown as MarkdownToken[]) {
      for (const token of block.children ?? []) {
        if (token.type !== "link_open") continue;
        const href = token.attrGet("href");
        if (!href || /^[a-z]+:|^#|^\//i.test(href)) continue;
        const target = posix.normalize(posix.join(posix.dirname(page), href));
        if (!target.startsWith("../")) continue;
        const path = target.slice(3);
        const kind = path === "" || path.endsWith("/") ? "tree" : "blob";
        token.attrSet("href", `${repositoryUrl}/${kind}/main/${path}`);
      }
    }
  });
}

export default defineConfig({
  title: "forge-guardrails",
  description: "Reliable tool calling for self-hosted LLMs: guardrails, a statechart loop, a proxy.",
  base: process.env.DOCS_BASE ?? "/",
  lastUpdated: false,
  // localhost URLs in prose are servers the reader runs, not pages of this site.
  ignoreDeadLinks: ["localhostLinks"],
  // docs/README.md is the map for GitHub readers; the site has its sidebar.
  srcExclude: ["**/node_modules/**", "README.md"],
  markdown: {
    anchor: { slugify: githubSlug },
    config: (md) => {
      textNotTemplates(md);
      repositoryLinks(md);
    },
  },
  // VitePress 1's Vite 5 runs on the project's esbuild 0.28, whose default target no longer
  // lowers destructuring; the site targets current browsers anyway.
  vite: { build: { target: "es2022", chunkSizeWarningLimit: 2000 } },
  themeConfig: {
    nav: [
      { text: "Get started", link: "/getting-started/local-model" },
      { text: "Guides", link: "/guides/workflows-and-tools" },
      { text: "Reference", link: "/reference/cli" },
      { text: "Troubleshooting", link: "/troubleshooting" },
    ],
    sidebar,
    search: { provider: "local" },
    outline: [2, 3],
    socialLinks: [{ icon: "github", link: repositoryUrl }],
  },
});
