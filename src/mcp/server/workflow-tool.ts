/**
 * A workflow as an MCP tool, as data: its name, description and input schema (the user message and
 * the system prompt's `promptVars`), its arguments checked, and a run's outcome as a tool result.
 * Pure: no SDK, no I/O.
 */
import { z } from "zod";
import { promptPlaceholders, type Workflow } from "../../core/workflow.ts";
import { McpWorkflowToolNameError } from "./errors.ts";

/** An MCP tool name: 1–128 characters of letters, digits, `_`, `-` and `.` (the 2025-11-25 spec). */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** What `tools/list` says of one workflow. */
export interface WorkflowToolInfo {
  name: string;
  description: string;
  inputSchema: { type: "object"; [key: string]: unknown };
}

/** The arguments a workflow's tool takes. */
export interface WorkflowToolArgs {
  message: string;
  promptVars?: Record<string, string>;
}

/** A tool result as the MCP SDK sends it. */
export interface WorkflowToolResult {
  [key: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** The zod schema of a workflow's arguments: `message`, and `promptVars` when its prompt has placeholders. */
export function workflowArgsSchema(workflow: Workflow): z.ZodType<WorkflowToolArgs> {
  const message = z.string().min(1).describe("The user message the run starts from: what to do.");
  const placeholders = promptPlaceholders(workflow.systemPrompt);
  if (placeholders.length === 0) return z.strictObject({ message });
  const vars = z
    .strictObject(Object.fromEntries(placeholders.map((name) => [name, z.string()])))
    .describe(`Values of the system prompt's placeholders: ${placeholders.join(", ")}.`);
  return z.strictObject({ message, promptVars: vars });
}

/**
 * The tool of each workflow, by name, checked: a name MCP accepts, once.
 *
 * @throws {McpWorkflowToolNameError} for a name MCP does not accept, or two workflows of one name.
 */
export function workflowTools(workflows: readonly Workflow[]): Map<string, WorkflowToolInfo> {
  const tools = new Map<string, WorkflowToolInfo>();
  for (const workflow of workflows) {
    if (!TOOL_NAME.test(workflow.name)) {
      throw new McpWorkflowToolNameError(
        workflow.name,
        "an MCP tool name is 1–128 letters, digits, '_', '-' or '.'",
      );
    }
    if (tools.has(workflow.name))
      throw new McpWorkflowToolNameError(workflow.name, "two workflows have this name");
    const { $schema: _ignored, ...inputSchema } = z.toJSONSchema(workflowArgsSchema(workflow), {
      io: "input",
    }) as Record<string, unknown>;
    tools.set(workflow.name, {
      name: workflow.name,
      description: workflow.description,
      inputSchema: { ...inputSchema, type: "object" },
    });
  }
  return tools;
}

/** A finished run's result: its JSON as `structuredContent` (an object as it is, anything else under `result`) and as text. */
export function resultOfRun(result: unknown): WorkflowToolResult {
  const text = typeof result === "string" ? result : (JSON.stringify(result) ?? "null");
  const structured =
    result !== null && typeof result === "object" && !Array.isArray(result)
      ? (JSON.parse(JSON.stringify(result)) as Record<string, unknown>)
      : { result: result ?? null };
  return { content: [{ type: "text", text }], structuredContent: structured };
}

/** A failed call: `isError` with the typed error's name and message. */
export function errorResult(error: unknown, details: Record<string, unknown> = {}): WorkflowToolResult {
  const name = error instanceof Error ? error.name : "Error";
  const message = error instanceof Error ? error.message : String(error);
  return {
    content: [{ type: "text", text: `${name}: ${message}` }],
    structuredContent: { error: { name, message }, ...details },
    isError: true,
  };
}
