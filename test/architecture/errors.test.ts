/**
 * One error family (ADR 016): every error class any entry point exports is a `ForgeError`, except
 * the errors a tool throws from its own `execute` (they are the tool's failure, reported to the
 * model as a tool result, not the library's): `ToolResolutionError` and the MCP tool errors.
 * The error rule (ADR 031): a bad setting option is a `RangeError` naming it, wherever it is given
 * (the runner's options, an MCP server's); `WorkflowDefinitionError` is for what a workflow and its
 * tools are, thrown only by the modules that check a definition.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ForgeError, WorkflowDefinitionError } from "../../src/core/errors.ts";
import { defineTool } from "../../src/core/tools.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { assertMcpServerOptions } from "../../src/mcp/options.ts";
import { ScriptedClient } from "../../src/testing/index.ts";

const repo = resolve(import.meta.dirname, "../..");
const manifest = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as {
  exports: Record<string, string | { types: string }>;
};

/**
 * The tool-side errors, exempt on purpose (ADR 016, ADR 031). An MCP call past its `timeoutMs` is
 * not among them: it is the loop's `ToolTimeoutError`, a ForgeError (ADR 037).
 */
const TOOL_ERRORS = new Set(["ToolResolutionError", "McpToolError", "McpToolRemovedError"]);

async function exportedErrorClasses(): Promise<Map<string, new (...args: never[]) => Error>> {
  const classes = new Map<string, new (...args: never[]) => Error>();
  for (const target of Object.values(manifest.exports)) {
    if (typeof target === "string") continue;
    const file = join(repo, target.types.replace(/^\.\/dist\//, "src/").replace(/\.d\.ts$/, ".ts"));
    const module = (await import(file)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(module)) {
      if (typeof value === "function" && value.prototype instanceof Error) {
        classes.set(name, value as new (...args: never[]) => Error);
      }
    }
  }
  return classes;
}

describe("library errors", () => {
  it("every exported error class is a ForgeError, but the tool-side ones", async () => {
    const classes = await exportedErrorClasses();
    expect(classes.size).toBeGreaterThan(40);
    const plain = [...classes]
      .filter(([, type]) => type !== ForgeError && !(type.prototype instanceof ForgeError))
      .map(([name]) => name);
    expect(plain.sort()).toEqual([...TOOL_ERRORS].sort());
  });
});

/** The modules that check what a workflow and its tools are: the only ones that throw `WorkflowDefinitionError`. */
const DEFINITION_MODULES = [
  "src/core/tools.ts",
  "src/core/workflow.ts",
  "src/guardrails/tool-subset.ts",
  // A machine run with deps that lack the workflow's tools or clients.
  "src/machines/actor-deps.ts",
  "src/machines/inference-actor.ts",
  "src/machines/tool-actor.ts",
  "src/mcp/tool-defs.ts",
  "src/queue/worker.ts",
];

function sourceFiles(dir: string): string[] {
  return readdirSync(join(repo, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

describe("the error rule (ADR 031)", () => {
  it("a bad setting option is a RangeError naming it: the runner's and an MCP server's alike", () => {
    const client = new ScriptedClient([]);
    expect(() => new WorkflowRunner({ client, maxIterations: 0 } as never)).toThrow(RangeError);
    expect(() => new WorkflowRunner({ client, maxIterations: 0 } as never)).toThrow(/maxIterations/);
    expect(() => assertMcpServerOptions({ name: "files", command: "npx", timeoutMs: 0 })).toThrow(RangeError);
    expect(() => assertMcpServerOptions({ name: "files", command: "npx", timeoutMs: 0 })).toThrow(
      /timeoutMs/,
    );
  });

  it("a definition that cannot work is a WorkflowDefinitionError, thrown only where definitions are checked", () => {
    expect(() =>
      defineTool({ name: "bad name", description: "", parameters: z.object({}), execute: () => "" }),
    ).toThrow(WorkflowDefinitionError);
    const throwing = sourceFiles("src").filter((file) =>
      readFileSync(join(repo, file), "utf8").includes("new WorkflowDefinitionError("),
    );
    expect(throwing.sort()).toEqual(DEFINITION_MODULES);
  });
});
