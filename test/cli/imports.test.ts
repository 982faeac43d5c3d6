/**
 * The package ships src/ alone (built to dist/), so no file under src/ may import one outside it:
 * the eval harness and the sim-model are repository commands that import src/, never the reverse.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const src = fileURLToPath(new URL("../../src", import.meta.url));

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The relative specifiers of a file's static imports, dynamic imports and re-exports. */
function relativeImports(code: string): string[] {
  return [...code.matchAll(/(?:\bfrom|\bimport\s*\(?)\s*["'](\.{1,2}\/[^"']+)["']/g)].map(
    (match) => match[1] as string,
  );
}

describe("src/ imports", () => {
  it("finds the imports it checks", () => {
    const cli = readFileSync(join(src, "cli", "index.ts"), "utf8");
    expect(relativeImports(cli)).toContain("./proxy-command.ts");
    expect(relativeImports('const { a } = await import("../../eval/x.ts");')).toEqual(["../../eval/x.ts"]);
  });

  it("never reach outside src/", () => {
    const outside = sourceFiles(src).flatMap((file) =>
      relativeImports(readFileSync(file, "utf8"))
        .filter((specifier) => relative(src, resolve(dirname(file), specifier)).startsWith(".."))
        .map((specifier) => `${relative(src, file)} imports ${specifier}`),
    );
    expect(outside).toEqual([]);
  });
});
