/**
 * Every command-line flag the user-facing docs name exists: in the help of a `forge` command, of
 * the repository's `npm run eval` / `npm run sim-model`, or of `npm run demo`, or it belongs to
 * another program the docs tell you to run (llama-server, node, npm), listed below by program.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { flagsOf, forgeCommands, repositoryCommands } from "../../scripts/docs-cli.ts";

const repo = resolve(import.meta.dirname, "../..");

/** Flags of programs that are not ours, which the docs name on purpose. */
const OTHER_PROGRAMS: Record<string, readonly string[]> = {
  "llama-server": ["--jinja", "--no-jinja", "--port", "--host", "--no-webui", "--cache-ram"],
  node: ["--import"],
  "npm run make:test-gguf (scripts/make-test-gguf.ts reads it)": ["--force"],
  "claude (docs/agents.md's settings; --mcp-config in docs/guides/serving-workflows-over-mcp.md)": [
    "--allowedTools",
    "--system-prompt",
    "--tools",
    "--output-format",
    "--mcp-config",
  ],
};

function markdownUnder(dir: string): string[] {
  return readdirSync(join(repo, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownUnder(path);
    return entry.name.endsWith(".md") ? [path] : [];
  });
}

/** The docs written for users of the package (the contributors' lab notebooks are not checked). */
const USER_DOCS = [
  "README.md",
  "CONTRIBUTING.md",
  "examples/README.md",
  "docs/README.md",
  "docs/troubleshooting.md",
  "docs/reference/index.md",
  "docs/reference/proxy-http.md",
  "docs/internals/index.md",
  ...markdownUnder("docs/getting-started"),
  ...markdownUnder("docs/guides"),
];

function demoFlags(): string[] {
  const source = readFileSync(join(repo, "scripts", "demo.ts"), "utf8");
  const usage = /const USAGE = `([\s\S]*?)`;/.exec(source)?.[1] ?? "";
  return flagsOf(usage);
}

describe("flags named in the docs", () => {
  const known = new Set([
    ...forgeCommands().flatMap((command) => command.flags),
    ...repositoryCommands().flatMap((command) => command.flags),
    ...demoFlags(),
    ...Object.values(OTHER_PROGRAMS).flat(),
  ]);

  it("knows the flags of every forge command and of the demo", () => {
    expect(known).toContain("--backend-url");
    expect(known).toContain("--registry");
    expect(known).toContain("--older-than");
    expect(demoFlags()).toContain("--tiny");
  });

  it.each(USER_DOCS)("%s names only flags that exist", (doc) => {
    const text = readFileSync(join(repo, doc), "utf8");
    const unknown = [
      ...new Set([...text.matchAll(/(?<![\w-])--[a-z][a-zA-Z0-9-]*/g)].map(([flag]) => flag)),
    ].filter((flag) => !known.has(flag));
    expect(unknown, `${doc} names flags no --help lists`).toEqual([]);
  });
});
