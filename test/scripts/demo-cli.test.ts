/**
 * `npm run demo -- --help` prints the usage and exits 0; an unknown option exits 2 with the usage,
 * before any model is loaded.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const demo = fileURLToPath(new URL("../../scripts/demo.ts", import.meta.url));
const tsx = fileURLToPath(new URL("../../node_modules/.bin/tsx", import.meta.url));

function runDemo(args: string[]) {
  return spawnSync(tsx, [demo, ...args], { encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
}

describe("npm run demo options", () => {
  it("--help prints the usage and exits 0", () => {
    const result = runDemo(["--help"]);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("Usage: npm run demo -- [options]");
    expect(result.stdout).toContain("--tool-choice <choice>");
  }, 30_000);

  it("an unknown option exits 2 naming it, with the usage", () => {
    const result = runDemo(["--bogus"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("Unknown option '--bogus'");
    expect(result.stderr).toContain("Usage: npm run demo -- [options]");
  }, 30_000);
});
