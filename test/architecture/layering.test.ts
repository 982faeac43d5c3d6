/**
 * The package map's layers (docs/architecture.md, "Layers"): every relative import in `src/` points
 * to the importing file's own folder, to a lower level, or along one of the few sibling imports
 * listed here, and nothing in `src/` imports a file outside it. Inside a folder split into rooms
 * (`src/watch/`), rooms point one way too, and are reached only through their faces.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "../../src");

/** Top-level folders of `src/`, lowest level first; a folder may import any folder of a lower level. */
const LEVELS: readonly (readonly string[])[] = [
  ["core", "tools"],
  ["prompts", "context", "guardrails"],
  ["machines"],
  ["loop"],
  ["clients", "server", "testing", "watch", "queue", "mcp", "otel"],
  ["proxy"],
  ["cli"],
];

/** The only imports allowed between two folders of one level, as "from → to". */
const SIBLING_IMPORTS: ReadonlySet<string> = new Set([
  // `respond` is a tool built with core's `defineTool`.
  "tools → core",
  // The guardrail classes build their nudges and rescue with the prompts' functions.
  "guardrails → prompts",
  // The server manager talks to the backends it runs through their clients (OllamaClient, /props).
  "server → clients",
]);

/** Folders no file in `src/` may import: test doubles, reached through the `/testing` subpath. */
const LEAVES: ReadonlySet<string> = new Set(["testing"]);

/**
 * Folders split into rooms, each room's rooms lowest first: a room imports its own files and lower
 * rooms' faces (`<room>/index.ts`), never a higher room nor its folder's face; the folder's face
 * imports only its rooms' faces; anything outside the folder imports a face, never a file.
 */
const ROOMS: Readonly<Record<string, readonly string[]>> = {
  // The source side runs in the watched process and stays light: nothing of the viewer or the server.
  watch: ["report", "view", "server"],
};

/** Folders outside `src/` whose imports of a room are checked too (tests import the files they test). */
const OUTSIDE_SRC = ["eval", "bench", "examples", "scripts"];

/** Re-export barrels that may import every layer: the root entry point. */
const EXEMPT: ReadonlySet<string> = new Set(["index.ts"]);

function levelOf(folder: string): number {
  return LEVELS.findIndex((level) => level.includes(folder));
}

/** The top-level folder of `src/` that holds `path` (relative to `src/`), or undefined for a root file. */
function folderOf(path: string): string | undefined {
  const parts = path.split(sep);
  return parts.length > 1 ? parts[0] : undefined;
}

/**
 * Why `file` (relative to `src/`) may not import `specifier`, or undefined when it may.
 * @example importViolation("core/messages.ts", "../loop/runner.ts") // "core → loop: loop is above core"
 */
function importViolation(file: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".") && !specifier.startsWith("/")) return undefined;
  const target = relative(SRC, resolve(SRC, dirname(file), specifier));
  if (target.startsWith("..") || target.startsWith(sep) || specifier.startsWith("/")) {
    return "imports a file outside src/";
  }
  if (EXEMPT.has(file)) return undefined;
  const from = folderOf(file);
  const to = folderOf(target);
  if (from === undefined || levelOf(from) < 0) return `${from ?? file} has no layer: add it to LEVELS`;
  if (to === undefined) return `${from} → ${target}: only the root entry point lives at src/`;
  if (levelOf(to) < 0) return `${to} has no layer: add it to LEVELS`;
  if (from === to) return undefined;
  if (LEAVES.has(to)) return `${from} → ${to}: ${to} is a leaf, nothing in src/ imports it`;
  if (levelOf(to) < levelOf(from)) return undefined;
  if (levelOf(to) > levelOf(from)) return `${from} → ${to}: ${to} is above ${from}`;
  return SIBLING_IMPORTS.has(`${from} → ${to}`)
    ? undefined
    : `${from} → ${to}: same level, and not a listed sibling import`;
}

/**
 * The rooms' folder and room of a path relative to `src/` (`watch/view/pages.ts` → watch, view;
 * `watch/index.ts` → watch, no room), or undefined outside every folder split into rooms.
 */
function roomOf(path: string): { folder: string; room: string | undefined } | undefined {
  const [folder = "", room = "", ...rest] = path.split(sep);
  const rooms = ROOMS[folder];
  if (rooms === undefined) return undefined;
  return { folder, room: rest.length > 0 && rooms.includes(room) ? room : undefined };
}

/**
 * Why `file` may not import `target` by the rooms' rules (both relative to `src/`; `file` may lie
 * outside it), or undefined when it may.
 * @example roomViolation("watch/report/reporter.ts", "watch/view/index.ts") // "watch: report → view: view is above report"
 */
function roomViolation(file: string, target: string): string | undefined {
  const to = roomOf(target);
  if (to === undefined) return undefined;
  const { folder } = to;
  const face = (room: string) => join(folder, room, "index.ts");
  const from = roomOf(file);
  if (from?.folder !== folder) {
    const faces = [join(folder, "index.ts"), ...(ROOMS[folder] ?? []).map(face)];
    return faces.includes(target)
      ? undefined
      : `${target} from outside ${folder}/: import a face, ${faces.join(" or ")}`;
  }
  if (from.room === to.room) return undefined;
  if (from.room === undefined) {
    return to.room !== undefined && target === face(to.room)
      ? undefined
      : `${folder}: its face composes its rooms' faces, not ${target}`;
  }
  if (to.room === undefined)
    return `${folder}: ${from.room} → ${target}: a room imports rooms' faces, not its folder's`;
  const rooms = ROOMS[folder] ?? [];
  if (rooms.indexOf(to.room) > rooms.indexOf(from.room)) {
    return `${folder}: ${from.room} → ${to.room}: ${to.room} is above ${from.room}`;
  }
  return target === face(to.room)
    ? undefined
    : `${folder}: ${from.room} → ${target}: import ${face(to.room)}`;
}

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** Every module specifier of a file: static imports, `export … from`, and `import("…")` with a literal. */
function specifiersOf(path: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(path, "utf8"), true, true);
  return importedFiles.map((imported) => imported.fileName);
}

describe("layering", () => {
  it("gives every folder of src/ a layer", () => {
    const folders = readdirSync(SRC, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders.filter((folder) => levelOf(folder) < 0)).toEqual([]);
  });

  it("agrees with the layer table of docs/architecture.md, layer by layer", () => {
    const doc = readFileSync(resolve(SRC, "../docs/architecture.md"), "utf8");
    const rows = [...doc.matchAll(/^\| (\d+) \| ([^|]+) \|/gm)].map(([, , folders]) =>
      [...(folders as string).matchAll(/`([a-z-]+)`/g)].map(([, folder]) => folder),
    );
    expect(rows).toEqual(LEVELS);
  });

  it("has no import from a lower layer to a higher one, and none out of src/", () => {
    const violations: string[] = [];
    for (const path of sourceFiles(SRC)) {
      const file = relative(SRC, path);
      for (const specifier of specifiersOf(path)) {
        const why = importViolation(file, specifier);
        if (why !== undefined) violations.push(`src/${file} → ${specifier} (${why})`);
      }
    }
    expect(violations).toEqual([]);
  });

  it("keeps the rooms of watch in order, each reached only through its face, from src/ and from eval/, bench/, examples/, scripts/", () => {
    const root = resolve(SRC, "..");
    const files = [SRC, ...OUTSIDE_SRC.map((folder) => join(root, folder))].flatMap(sourceFiles);
    const violations: string[] = [];
    for (const path of files) {
      const file = relative(SRC, path);
      for (const specifier of specifiersOf(path).filter((specifier) => specifier.startsWith("."))) {
        const why = roomViolation(file, relative(SRC, resolve(dirname(path), specifier)));
        if (why !== undefined) violations.push(`${relative(root, path)} → ${specifier} (${why})`);
      }
    }
    expect(violations).toEqual([]);
  });

  it("gives every file of a folder split into rooms a room, but its face", () => {
    const strays = Object.entries(ROOMS).flatMap(([folder, rooms]) =>
      sourceFiles(join(SRC, folder))
        .map((path) => relative(join(SRC, folder), path))
        .filter((path) => path !== "index.ts" && !rooms.includes(path.split(sep)[0] ?? "")),
    );
    expect(strays).toEqual([]);
  });

  it("tells an allowed import from a forbidden one", () => {
    expect(importViolation("loop/runner.ts", "../machines/workflow.machine.ts")).toBeUndefined();
    expect(importViolation("machines/workflow-actors.ts", "./request-worker.ts")).toBeUndefined();
    expect(importViolation("guardrails/nudge.ts", "../prompts/nudges.ts")).toBeUndefined();
    expect(importViolation("server/budget.ts", "../clients/ollama/client.ts")).toBeUndefined();
    expect(importViolation("index.ts", "./proxy/index.ts")).toBeUndefined();
    expect(importViolation("proxy/app.ts", "hono")).toBeUndefined();
    expect(importViolation("core/messages.ts", "../loop/runner.ts")).toBe("core → loop: loop is above core");
    expect(importViolation("prompts/nudges.ts", "../guardrails/nudge.ts")).toBe(
      "prompts → guardrails: same level, and not a listed sibling import",
    );
    expect(importViolation("clients/http.ts", "../server/props.ts")).toBe(
      "clients → server: same level, and not a listed sibling import",
    );
    expect(importViolation("proxy/app.ts", "../testing/index.ts")).toBe(
      "proxy → testing: testing is a leaf, nothing in src/ imports it",
    );
    expect(importViolation("cli/index.ts", "../../eval/cli/eval-command.ts")).toBe(
      "imports a file outside src/",
    );
    expect(importViolation("index.ts", "../scripts/demo.ts")).toBe("imports a file outside src/");
  });

  it.each([
    ["watch/view/pages.ts", "watch/view/timeline.ts", undefined],
    ["watch/server/app.ts", "watch/view/index.ts", undefined],
    ["watch/index.ts", "watch/report/index.ts", undefined],
    ["proxy/watch.ts", "watch/report/index.ts", undefined],
    ["../eval/report/timeline.ts", "watch/view/index.ts", undefined],
    ["cli/watch-command.ts", "watch/index.ts", undefined],
    ["proxy/watch.ts", "core/errors.ts", undefined],
    ["watch/report/reporter.ts", "watch/view/index.ts", "watch: report → view: view is above report"],
    ["watch/view/pages.ts", "watch/server/index.ts", "watch: view → server: server is above view"],
    [
      "watch/server/app.ts",
      "watch/view/pages.ts",
      "watch: server → watch/view/pages.ts: import watch/view/index.ts",
    ],
    [
      "watch/view/pages.ts",
      "watch/index.ts",
      "watch: view → watch/index.ts: a room imports rooms' faces, not its folder's",
    ],
    [
      "watch/index.ts",
      "watch/server/app.ts",
      "watch: its face composes its rooms' faces, not watch/server/app.ts",
    ],
    [
      "../eval/report/format.ts",
      "watch/view/format.ts",
      "watch/view/format.ts from outside watch/: import a face, watch/index.ts or watch/report/index.ts or watch/view/index.ts or watch/server/index.ts",
    ],
  ])("tells whether rooms allow %s → %s", (file, target, why) => {
    expect(roomViolation(file, target)).toBe(why);
  });
});
