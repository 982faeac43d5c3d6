import { join } from "node:path";
import { configDefaults, defineConfig } from "vitest/config";
import { packageSourcePaths } from "./scripts/package-paths.ts";

const root = import.meta.dirname;

export default defineConfig({
  resolve: {
    // Examples import the package by name (`forge-guardrails/queue`), as a user does: the sources.
    alias: Object.entries(packageSourcePaths(root)).map(([name, source]) => ({
      find: new RegExp(`^${name.replace(/[/.-]/g, "\\$&")}$`),
      replacement: join(root, source),
    })),
  },
  test: {
    include: ["test/**/*.test.ts"],
    // forge-tiny's Python generator and trainer: `npm run test:tiny-model` (vitest.tiny-model.config.ts).
    exclude: [...configDefaults.exclude, "test/tiny-model/**"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
