#!/usr/bin/env node
// The `forge` command: runs the compiled CLI in dist/, which `npm run build` writes (`prepack` runs it
// before every `npm pack` and `npm publish`). In a source checkout, `npm run forge -- …` runs the
// TypeScript sources directly.
import { existsSync } from "node:fs";

const cli = new URL("../dist/cli/index.js", import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write(
    "forge: dist/ is missing. In a source checkout, run `npm run build` first (or `npm run forge -- …` to run the sources).\n",
  );
  process.exit(1);
}
const { runCli } = await import(cli.href);
await runCli(process.argv);
