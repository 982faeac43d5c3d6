/**
 * bin/forge.js, the installed `forge` command: it runs dist/ when there is one, the TypeScript
 * sources through tsx in a clone without a build (so `npx forge …` works after `npm install`), and
 * says to reinstall when neither is there. Each case runs a copy of the bin in a temporary layout.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";

const repo = resolve(import.meta.dirname, "../..");
const version = (JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string }).version;

/** A package folder holding the bin, and the sources and node_modules when asked for. */
function layout(withSources: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), "forge-bin-"));
  mkdirSync(join(dir, "bin"));
  copyFileSync(join(repo, "bin", "forge.js"), join(dir, "bin", "forge.js"));
  copyFileSync(join(repo, "package.json"), join(dir, "package.json"));
  if (withSources) {
    symlinkSync(join(repo, "src"), join(dir, "src"));
    symlinkSync(join(repo, "node_modules"), join(dir, "node_modules"));
  }
  return dir;
}

describe("bin/forge.js", () => {
  it("runs the sources through tsx when dist/ is missing", async () => {
    const dir = layout(true);
    const result = await execa("node", [join(dir, "bin", "forge.js"), "--version"], { reject: false });
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe(version);
    expect(result.exitCode).toBe(0);
  }, 60_000);

  it("says to reinstall when it has neither dist/ nor the sources", async () => {
    const dir = layout(false);
    const result = await execa("node", [join(dir, "bin", "forge.js"), "--version"], { reject: false });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/no dist\/; reinstall forge-guardrails/);
  });
});
