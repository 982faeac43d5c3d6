/**
 * The docs site builds offline with zero broken links: `npm run docs:build` generates the
 * reference (CLI help, errors, TypeDoc), builds the VitePress site (which fails on a dead page
 * link) and checks every link and anchor of the built HTML and of README.md, CONTRIBUTING.md and
 * examples/README.md (scripts/check-docs-links.ts). Also: each exported error has advice, and the
 * link checker finds what it should.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { githubSlug } from "../../scripts/check-docs-links.ts";
import { exportedErrors } from "../../scripts/docs-errors.ts";
import { ADVICE } from "../../scripts/docs-errors-advice.ts";

const repo = resolve(import.meta.dirname, "../..");

describe("docs site", () => {
  it("builds offline, and every link and anchor resolves", async () => {
    const result = await execa("npm", ["run", "docs:build"], { cwd: repo, reject: false, all: true });
    expect(result.exitCode, result.all?.slice(-4000)).toBe(0);
    expect(result.all).toMatch(/every link and anchor resolves/);
  }, 600_000);

  it("has advice for every exported error, and none for an error that is gone", () => {
    const names = exportedErrors().map((error) => error.name);
    expect(names.filter((name) => ADVICE[name] === undefined)).toEqual([]);
    expect(Object.keys(ADVICE).filter((name) => !names.includes(name))).toEqual([]);
  }, 120_000);

  it("slugs headings as GitHub does, so one anchor works on both", () => {
    expect(githubSlug("Peers (npm run bench:peers)")).toBe("peers-npm-run-benchpeers");
    expect(githubSlug("HTTP 422 `retries_exhausted`")).toBe("http-422-retries_exhausted");
    expect(githubSlug("Choosing `budgetTokens`")).toBe("choosing-budgettokens");
  });

  it("reports a missing anchor in a repository page", async () => {
    const { markdownProblems } = await import("../../scripts/check-docs-links.ts");
    const dir = mkdtempSync(join(tmpdir(), "docs-links-"));
    writeFileSync(join(dir, "page.md"), "# Title\n\n[ok](#title) [bad](#nowhere) [gone](missing.md)\n");
    expect(markdownProblems(join(dir, "page.md"))).toEqual([
      expect.stringContaining("missing anchor: #nowhere"),
      expect.stringContaining("missing file: missing.md"),
    ]);
  });
});
