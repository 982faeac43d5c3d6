/**
 * Docs that cannot drift (ADR 016): every repository path the README, CONTRIBUTING.md and `docs/**` name exists,
 * and the statechart in docs/architecture.md is the one `createWorkflowMachine` defines
 * (`tsx scripts/architecture-doc.ts --write` regenerates it). Decision records are history and may
 * name what has moved since; CHANGELOG.md likewise.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ARCHITECTURE_DOC, statechartSection, withSection } from "../../scripts/architecture-doc.ts";

const repo = resolve(import.meta.dirname, "../..");
const ROOTS = ["src", "test", "docs", "scripts", "bench", "eval", "examples", "models", "tools", "bin"];
/** Generated at `npm run docs:build` (git-ignored), and history: not checked. */
const UNCHECKED = [
  "docs/decisions",
  "docs/reference/api",
  "docs/reference/cli.md",
  "docs/reference/errors.md",
];

function markdownUnder(dir: string): string[] {
  return readdirSync(join(repo, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (UNCHECKED.includes(path) || entry.name.startsWith(".")) return [];
    if (entry.isDirectory()) return markdownUnder(path);
    return entry.name.endsWith(".md") ? [path] : [];
  });
}

const docs = ["README.md", "CONTRIBUTING.md", "examples/README.md", ...markdownUnder("docs")];

/**
 * What the reader makes or fetches: eval output (`eval/results/`, git-ignored), model files, and
 * what `npm run docs:build` writes (the built site, the generated reference).
 */
function isReadersOwn(path: string): boolean {
  return (
    path.startsWith("eval/results/") ||
    path.endsWith(".gguf") ||
    path.startsWith("docs/.vitepress/dist") ||
    UNCHECKED.slice(1).some((generated) => path.startsWith(generated))
  );
}

/** Paths under a repository folder, as written in the doc (`src/clients/retry.ts`, `test/queue/`). */
function namedPaths(text: string): string[] {
  const pattern = new RegExp(
    `(?<![\\w./-])((?:${ROOTS.join("|")})/[\\w./-]*[\\w/])(?![*{\\w/-]|\\.\\w)`,
    "g",
  );
  return [...new Set([...text.matchAll(pattern)].map(([, path]) => path as string))].filter(
    (path) => !isReadersOwn(path),
  );
}

describe("paths named in the docs", () => {
  it.each(docs)("%s names only paths that exist", (doc) => {
    const missing = namedPaths(readFileSync(join(repo, doc), "utf8")).filter(
      (path) => !existsSync(join(repo, path)) && !existsSync(join(repo, "docs", path)),
    );
    expect(missing, `${doc} names paths that do not exist`).toEqual([]);
  });

  it("finds the paths it checks, but globs and the reader's own files", () => {
    const text =
      "see `src/core/errors.ts`, [x](docs/gone.md), `eval/scenarios/basic*.ts`, eval/results/a.jsonl";
    expect(namedPaths(text)).toEqual(["src/core/errors.ts", "docs/gone.md"]);
  });
});

describe("docs/architecture.md", () => {
  it("draws the statechart createWorkflowMachine defines", () => {
    const doc = readFileSync(ARCHITECTURE_DOC, "utf8");
    expect(doc, "run: npx tsx scripts/architecture-doc.ts --write").toBe(
      withSection(doc, statechartSection()),
    );
  });
});
