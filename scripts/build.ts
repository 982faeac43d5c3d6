/**
 * `npm run build` (and `prepack`): compiles src/ to dist/ with `tsc -p tsconfig.build.json` — ESM
 * `.js`, `.d.ts` and source maps with their sources inlined — after removing the previous build, so
 * a packed tarball never carries a file whose source is gone.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";

const root = join(import.meta.dirname, "..");
rmSync(join(root, "dist"), { recursive: true, force: true });
const started = performance.now();
await execa("npx", ["tsc", "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
console.log(`build: dist/ written in ${((performance.now() - started) / 1000).toFixed(1)} s`);
