#!/usr/bin/env node
// The `forge` command: runs the compiled CLI in dist/, which `npm run build` writes (`prepack` runs it
// before every `npm pack` and `npm publish`). In a clone with no build, it runs the TypeScript
// sources through tsx (a devDependency), so `npx forge …` and `npm run forge -- …` work there too.
import { existsSync } from "node:fs";

const compiled = new URL("../dist/cli/index.js", import.meta.url);
const sources = new URL("../src/cli/index.ts", import.meta.url);

async function loadCli() {
  if (existsSync(compiled)) return import(compiled.href);
  if (!existsSync(sources)) {
    process.stderr.write("forge: this installation has no dist/; reinstall forge-guardrails.\n");
    process.exit(1);
  }
  try {
    const { register } = await import("tsx/esm/api");
    register();
  } catch {
    process.stderr.write(
      "forge: dist/ is missing and tsx is not installed. In a clone, run `npm install` (then `npx forge …` runs the sources) or `npm run build`.\n",
    );
    process.exit(1);
  }
  return import(sources.href);
}

const { runCli } = await loadCli();
await runCli(process.argv);
