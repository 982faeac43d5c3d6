/**
 * One error family (ADR 016): every error class any entry point exports is a `ForgeError`, except
 * the errors a tool throws from its own `execute` (they are the tool's failure, reported to the
 * model as a tool result, not the library's): `ToolResolutionError` and the MCP tool errors.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ForgeError } from "../../src/core/errors.ts";

const repo = resolve(import.meta.dirname, "../..");
const manifest = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as {
  exports: Record<string, string | { types: string }>;
};

/** The tool-side errors, exempt on purpose (ADR 016). */
const TOOL_ERRORS = new Set([
  "ToolResolutionError",
  "McpToolError",
  "McpToolTimeoutError",
  "McpToolRemovedError",
]);

async function exportedErrorClasses(): Promise<Map<string, new (...args: never[]) => Error>> {
  const classes = new Map<string, new (...args: never[]) => Error>();
  for (const target of Object.values(manifest.exports)) {
    if (typeof target === "string") continue;
    const file = join(repo, target.types.replace(/^\.\/dist\//, "src/").replace(/\.d\.ts$/, ".ts"));
    const module = (await import(file)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(module)) {
      if (typeof value === "function" && value.prototype instanceof Error) {
        classes.set(name, value as new (...args: never[]) => Error);
      }
    }
  }
  return classes;
}

describe("library errors", () => {
  it("every exported error class is a ForgeError, but the tool-side ones", async () => {
    const classes = await exportedErrorClasses();
    expect(classes.size).toBeGreaterThan(40);
    const plain = [...classes]
      .filter(([, type]) => type !== ForgeError && !(type.prototype instanceof ForgeError))
      .map(([name]) => name);
    expect(plain.sort()).toEqual([...TOOL_ERRORS].sort());
  });
});
