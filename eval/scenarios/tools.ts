/**
 * Helpers for scenario tools: deterministic lookups and accepting terminal tools.
 */
import type { z } from "zod";
import { defineTool, type Prerequisite, type ToolDef } from "../../src/core/tools.ts";

/** Thrown by a lookup that has no row for its key (the model sees `[ToolError] NotFound: …`). */
export class NotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NotFound";
  }
}

/** Thrown by a tool that rejects a well-typed but invalid value (`[ToolError] InvalidArgument: …`). */
export class InvalidArgumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InvalidArgument";
  }
}

/** A row of `table` by key, or a NotFoundError naming what was looked up. */
export function rowOf<Row>(table: Readonly<Record<string, Row>>, key: string, what: string): Row {
  const row = table[key] ?? table[key.trim().toUpperCase()] ?? table[key.trim().toLowerCase()];
  if (row === undefined) throw new NotFoundError(`No ${what} '${key}'`);
  return row;
}

/** Options of `scenarioTool`. */
export interface ScenarioToolOptions<Schema extends z.ZodObject> {
  name: string;
  description: string;
  parameters: Schema;
  execute: (args: z.output<Schema>) => unknown;
  prerequisites?: Prerequisite[];
}

/** `defineTool` for scenario tools (kept as one seam in case eval tools need tracing later). */
export function scenarioTool<Schema extends z.ZodObject>(options: ScenarioToolOptions<Schema>): ToolDef {
  return defineTool(options);
}

/** A terminal tool that accepts any well-typed call and reports it as submitted. */
export function submitTool<Schema extends z.ZodObject>(
  name: string,
  description: string,
  parameters: Schema,
  onSubmit?: (args: z.output<Schema>) => void,
): ToolDef {
  return defineTool({
    name,
    description,
    parameters,
    execute: (args) => {
      onSubmit?.(args);
      return { status: "submitted", tool: name };
    },
  });
}
