/**
 * The package's own import paths (`forge-guardrails`, `forge-guardrails/queue`, …) mapped to the
 * TypeScript sources behind its `exports` (`./dist/x/index.d.ts` → `src/x/index.ts`), so examples
 * and docs snippets import the package as a user does and still run from a clone without a build.
 * tsconfig.json's `paths` hold the same map (for tsc and tsx; test/docs/examples.test.ts checks
 * they agree); vitest.config.ts and scripts/check-readme.ts read it from here.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** Each import path and its source file, relative to the repository root (`src/queue/index.ts`). */
export function packageSourcePaths(root: string): Record<string, string> {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    name: string;
    exports: Record<string, string | { types: string }>;
  };
  const paths: Record<string, string> = {};
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    if (typeof target === "string") continue;
    const source = target.types.replace(/^\.\/dist\//, "src/").replace(/\.d\.ts$/, ".ts");
    paths[subpath === "." ? manifest.name : `${manifest.name}/${subpath.slice(2)}`] = source;
  }
  return paths;
}
