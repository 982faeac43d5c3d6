/**
 * Examples a user can copy: each imports the package by name (never `../src`), each runnable one
 * has a test under test/examples/ that runs it on the scripted model, examples/README.md lists
 * every file, and tsconfig.json maps the package's import paths to the sources that
 * scripts/package-paths.ts derives from package.json's `exports`.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { packageSourcePaths } from "../../scripts/package-paths.ts";

const repo = resolve(import.meta.dirname, "../..");
const examples = readdirSync(join(repo, "examples")).filter((name) => name.endsWith(".ts"));

describe("examples/", () => {
  it.each(examples)("%s imports forge-guardrails by name, not by path", (name) => {
    const source = readFileSync(join(repo, "examples", name), "utf8");
    expect(source).not.toMatch(/from "\.\.\/(src|test)\//);
  });

  it.each(
    examples.filter((name) =>
      /export async function main\(/.test(readFileSync(join(repo, "examples", name), "utf8")),
    ),
  )("%s runs in a test on the scripted model", (name) => {
    expect(existsSync(join(repo, "test", "examples", name.replace(/\.ts$/, ".test.ts")))).toBe(true);
  });

  it("lists every example in examples/README.md", () => {
    const index = readFileSync(join(repo, "examples", "README.md"), "utf8");
    expect(examples.filter((name) => !index.includes(`(${name})`))).toEqual([]);
  });

  it("maps the package's import paths to its sources in tsconfig.json", () => {
    const tsconfig = JSON.parse(readFileSync(join(repo, "tsconfig.json"), "utf8")) as {
      compilerOptions: { paths: Record<string, string[]> };
    };
    const expected = Object.fromEntries(
      Object.entries(packageSourcePaths(repo)).map(([name, source]) => [name, [`./${source}`]]),
    );
    expect(tsconfig.compilerOptions.paths).toEqual(expected);
  });
});
