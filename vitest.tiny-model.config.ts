import { defineConfig } from "vitest/config";

/** `npm run test:tiny-model`: forge-tiny's tests, which run its Python generator (python3-jinja2). */
export default defineConfig({
  test: {
    include: ["test/tiny-model/**/*.test.ts"],
    globalSetup: ["test/tiny-model/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
