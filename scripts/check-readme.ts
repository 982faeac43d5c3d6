/**
 * Type-checks the TypeScript examples of the README and of the guides a user copies from
 * (docs/getting-started/, docs/guides/): every ```ts block is written to .cache/readme-snippets/
 * and compiled with the project's tsconfig against the package's own exports. Run by
 * `npm run typecheck`.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { execa } from "execa";
import { packageSourcePaths } from "./package-paths.ts";

const root = join(import.meta.dirname, "..");
const outDir = join(root, ".cache", "readme-snippets");

/** The Markdown files whose ```ts blocks must type-check. */
export function checkedDocs(): string[] {
  const under = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory()
        ? under(join(dir, entry.name))
        : entry.name.endsWith(".md")
          ? [join(dir, entry.name)]
          : [],
    );
  return ["README.md", ...under("docs/getting-started"), ...under("docs/guides")];
}

/** The ```ts blocks of a Markdown text. */
export function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] as string);
}

/**
 * `forge-guardrails` and each of its subpaths mapped to the TypeScript source behind the exports
 * map's `types`, so the snippets check against the sources without a build; the consumer test
 * checks the built package.
 */
function sourcePaths(): Record<string, string[]> {
  return Object.fromEntries(
    Object.entries(packageSourcePaths(root)).map(([name, source]) => [name, [`../../${source}`]]),
  );
}

if (process.argv[1] === import.meta.filename) {
  const snippets = checkedDocs().flatMap((file) =>
    tsBlocks(readFileSync(join(root, file), "utf8")).map((code, index) => ({ file, index, code })),
  );
  if (!snippets.some(({ file }) => file === "README.md"))
    throw new Error("README.md has no ```ts blocks to check");

  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  for (const { file, index, code } of snippets) {
    const name = `${file.replace(/\.md$/, "").replace(/[/\\]/g, "-")}-${index + 1}.ts`;
    writeFileSync(join(outDir, name), `// ${file}, block ${index + 1}\nexport {};\n${code}`);
  }
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
    console.error(`Docs snippets failed to type-check (see ${relative(root, outDir)})`);
    process.exit(1);
  }
  const files = new Set(snippets.map(({ file }) => file)).size;
  console.log(`Docs: ${snippets.length} TypeScript snippet(s) in ${files} file(s) type-check`);
}
