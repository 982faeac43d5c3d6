/**
 * The public names of every entry point in package.json's `exports`, pinned: values (what `import`
 * gives at run time) and types. A name added, removed or moved between entry points fails here;
 * update `public-names.json` on purpose and record the change in CHANGELOG.md. An entry composes
 * folder faces (`export * from "./x/index.ts"`, each face a curated list) or names leaf exports.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import pinned from "./public-names.json" with { type: "json" };

const repo = resolve(import.meta.dirname, "../..");
const manifest = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as {
  exports: Record<string, string | { types: string }>;
};

/** Entry point → its TypeScript source (`./dist/x/index.d.ts` → `src/x/index.ts`). */
const entries = Object.entries(manifest.exports).flatMap(([subpath, target]) =>
  typeof target === "string"
    ? []
    : [
        [
          subpath,
          join(repo, target.types.replace(/^\.\/dist\//, "src/").replace(/\.d\.ts$/, ".ts")),
        ] as const,
      ],
);

/** The names each entry exports, split into values and types, read with the TypeScript checker. */
function exportedNames(): Record<string, { values: string[]; types: string[] }> {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(repo, "tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
      },
    },
  );
  if (!parsed) throw new Error("tsconfig.json could not be read");
  const program = ts.createProgram(
    entries.map(([, file]) => file),
    parsed.options,
  );
  const checker = program.getTypeChecker();
  const names: Record<string, { values: string[]; types: string[] }> = {};
  for (const [subpath, file] of entries) {
    const source = program.getSourceFile(file);
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`${file} (${subpath}) is not a module`);
    const values: string[] = [];
    const types: string[] = [];
    for (const symbol of checker.getExportsOfModule(module)) {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      (target.flags & ts.SymbolFlags.Value ? values : types).push(symbol.name);
    }
    names[subpath] = { values: values.sort(), types: types.sort() };
  }
  return names;
}

/**
 * Names two entry points export for two different things, kept until a breaking release renames
 * one: `RecordedCall` (a loop step in `/machines`, a client call in `/testing`) and `RunRecord` (a
 * watched run in `/watch`, a queued run in `/queue`). Nothing else may be exported twice.
 */
const SAME_NAME_TWO_THINGS: Readonly<Record<string, readonly string[]>> = {
  RecordedCall: ["./machines", "./testing"],
  RunRecord: ["./watch", "./queue"],
};

describe("public names per entry point", () => {
  it("exports every public name from one entry point", () => {
    const entriesOf = new Map<string, string[]>();
    for (const [subpath, { values, types }] of Object.entries(pinned)) {
      for (const name of [...values, ...types])
        entriesOf.set(name, [...(entriesOf.get(name) ?? []), subpath]);
    }
    const twice = Object.fromEntries([...entriesOf].filter(([, subpaths]) => subpaths.length > 1));
    expect(twice).toEqual(SAME_NAME_TWO_THINGS);
  });

  it("match public-names.json, entry by entry", () => {
    expect(exportedNames()).toEqual(pinned);
  }, 60_000);

  it.each(entries)("%s exports at run time exactly the values it declares", async (subpath, file) => {
    const module = (await import(file)) as Record<string, unknown>;
    expect(Object.keys(module).sort()).toEqual(pinned[subpath as keyof typeof pinned].values);
  });

  it('entry files re-export by name, or everything of a folder\'s face (`export * from "./x/index.ts"`)', () => {
    for (const [subpath, file] of entries) {
      const starred = [...readFileSync(file, "utf8").matchAll(/export \* from "([^"]+)"/g)].map(
        ([, specifier]) => specifier,
      );
      for (const specifier of starred) {
        expect(specifier, `${subpath} (${file})`).toMatch(/^\.\/[a-z-]+(\/[a-z-]+)*\/index\.ts$/);
      }
    }
  });
});
