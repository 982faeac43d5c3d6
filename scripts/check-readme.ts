/**
 * Type-checks the README's TypeScript examples: every ```ts block is written to
 * .cache/readme-snippets/ and compiled with the project's tsconfig against the package's own
 * exports. Run by `npm run typecheck`.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";

const root = join(import.meta.dirname, "..");
const outDir = join(root, ".cache", "readme-snippets");
const readme = readFileSync(join(root, "README.md"), "utf8");
const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] as string);
if (blocks.length === 0) throw new Error("README.md has no ```ts blocks to check");

/**
 * `forge-guardrails` and each of its subpaths mapped to the TypeScript source behind the exports
 * map's `types` (`./dist/x/index.d.ts` → `src/x/index.ts`), so the snippets check against the
 * sources without a build; the consumer test checks the built package.
 */
function sourcePaths(): Record<string, string[]> {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    name: string;
    exports: Record<string, string | { types: string }>;
  };
  const paths: Record<string, string[]> = {};
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    if (typeof target === "string") continue;
    const source = target.types.replace(/^\.\/dist\//, "../../src/").replace(/\.d\.ts$/, ".ts");
    paths[subpath === "." ? manifest.name : `${manifest.name}/${subpath.slice(2)}`] = [source];
  }
  return paths;
}

rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
blocks.forEach((code, index) => {
  writeFileSync(join(outDir, `snippet-${index + 1}.ts`), `export {};\n${code}`);
});
writeFileSync(
  join(outDir, "tsconfig.json"),
  JSON.stringify({
    extends: "../../tsconfig.json",
    include: ["./*.ts"],
    compilerOptions: { noUnusedLocals: false, paths: sourcePaths() },
  }),
);
const result = await execa("npx", ["tsc", "--noEmit", "-p", join(outDir, "tsconfig.json")], {
  cwd: root,
  reject: false,
  all: true,
});
if (result.exitCode !== 0) {
  console.error(result.all);
  console.error(`README snippets failed to type-check (see ${outDir})`);
  process.exit(1);
}
console.log(`README: ${blocks.length} TypeScript snippet(s) type-check`);
