import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // forge-tiny's Python generator and trainer: `npm run test:tiny-model` (vitest.tiny-model.config.ts).
    exclude: [...configDefaults.exclude, "test/tiny-model/**"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
