/**
 * Workflows: a named bundle of tools with required steps, terminal tools and a system prompt.
 */
import { PromptTemplateError, WorkflowDefinitionError } from "./errors.ts";
import { prerequisiteTool, type ToolDef, type ToolSpec } from "./tools.ts";

/** A validated workflow definition. */
export interface Workflow {
  name: string;
  description: string;
  /** Tools keyed by name, in definition order. */
  tools: Record<string, ToolDef>;
  requiredSteps: string[];
  /** Every tool that can end the run. */
  terminalTools: string[];
  /** The system prompt template; `{name}` placeholders are filled from `promptVars`. */
  systemPrompt: string;
}

/** Options of `defineWorkflow`. */
export interface DefineWorkflowOptions {
  name: string;
  description: string;
  tools: ToolDef[] | Record<string, ToolDef>;
  requiredSteps?: string[];
  terminalTool: string | string[];
  systemPrompt: string;
}

/**
 * Define a workflow. Throws `WorkflowDefinitionError` naming the offending tool when a record key
 * differs from its tool's name, a required step, terminal tool or prerequisite is not a tool,
 * or a terminal tool is also a required step.
 */
export function defineWorkflow(options: DefineWorkflowOptions): Workflow {
  const { name, description, requiredSteps = [], systemPrompt } = options;
  if (typeof name !== "string" || name.length === 0) {
    throw new WorkflowDefinitionError("Workflow name must be a non-empty string");
  }
  if (typeof systemPrompt !== "string") {
    throw new WorkflowDefinitionError(`Workflow '${name}': systemPrompt must be a string`);
  }
  const tools = collectTools(name, options.tools);
  const terminalTools =
    typeof options.terminalTool === "string" ? [options.terminalTool] : [...options.terminalTool];
  if (terminalTools.length === 0) {
    throw new WorkflowDefinitionError(`Workflow '${name}': terminalTool must name at least one tool`);
  }
  for (const step of requiredSteps) {
    if (!(step in tools)) {
      throw new WorkflowDefinitionError(
        `Workflow '${name}': required step '${step}' is not one of its tools`,
      );
    }
  }
  for (const terminal of terminalTools) {
    if (!(terminal in tools)) {
      throw new WorkflowDefinitionError(
        `Workflow '${name}': terminal tool '${terminal}' is not one of its tools`,
      );
    }
    if (requiredSteps.includes(terminal)) {
      throw new WorkflowDefinitionError(
        `Workflow '${name}': terminal tool '${terminal}' is also a required step; a terminal tool ends the run`,
      );
    }
  }
  for (const [toolName, tool] of Object.entries(tools)) {
    for (const prerequisite of tool.prerequisites) {
      const needed = prerequisiteTool(prerequisite);
      if (!(needed in tools)) {
        throw new WorkflowDefinitionError(
          `Workflow '${name}': tool '${toolName}' has prerequisite '${needed}', which is not one of its tools`,
        );
      }
    }
  }
  placeholdersOf(systemPrompt);
  return { name, description, tools, requiredSteps: [...requiredSteps], terminalTools, systemPrompt };
}

function collectTools(
  workflowName: string,
  tools: ToolDef[] | Record<string, ToolDef>,
): Record<string, ToolDef> {
  const collected: Record<string, ToolDef> = {};
  const entries: [string | null, ToolDef][] = Array.isArray(tools)
    ? tools.map((tool) => [null, tool])
    : Object.entries(tools);
  if (entries.length === 0)
    throw new WorkflowDefinitionError(`Workflow '${workflowName}': needs at least one tool`);
  for (const [key, tool] of entries) {
    if (!tool || typeof tool !== "object" || !tool.spec || typeof tool.execute !== "function") {
      throw new WorkflowDefinitionError(
        `Workflow '${workflowName}': ${key ? `tool '${key}'` : "a tool"} is not a ToolDef; build it with defineTool()`,
      );
    }
    const toolName = tool.spec.name;
    if (key !== null && key !== toolName) {
      throw new WorkflowDefinitionError(
        `Workflow '${workflowName}': tools key '${key}' differs from its tool's name '${toolName}'`,
      );
    }
    if (toolName in collected) {
      throw new WorkflowDefinitionError(`Workflow '${workflowName}': tool '${toolName}' is defined twice`);
    }
    collected[toolName] = tool;
  }
  return collected;
}

/** The tool specs of a workflow, in definition order. */
export function workflowToolSpecs(workflow: Workflow): ToolSpec[] {
  return Object.values(workflow.tools).map((tool) => tool.spec);
}

const PLACEHOLDER = /\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** The `{name}` placeholders of a system prompt template: the `promptVars` a run must pass. */
export function promptPlaceholders(template: string): string[] {
  return [...placeholdersOf(template)];
}

function placeholdersOf(template: string): Set<string> {
  const names = new Set<string>();
  for (const match of template.matchAll(PLACEHOLDER)) if (match[1]) names.add(match[1]);
  return names;
}

/**
 * Render a system prompt template: `{name}` takes `vars.name`, `{{` and `}}` are literal braces.
 * Throws `PromptTemplateError` when a placeholder has no value or a var matches no placeholder.
 */
export function renderSystemPrompt(template: string, vars: Record<string, string> = {}): string {
  const placeholders = placeholdersOf(template);
  const missing = [...placeholders].filter((name) => !(name in vars));
  if (missing.length > 0) {
    throw new PromptTemplateError(
      `System prompt placeholder(s) {${missing.join("}, {")}} have no value: pass them in promptVars`,
    );
  }
  const unused = Object.keys(vars).filter((name) => !placeholders.has(name));
  if (unused.length > 0) {
    throw new PromptTemplateError(
      `promptVars key(s) ${unused.map((name) => `'${name}'`).join(", ")} match no placeholder in the system prompt${placeholders.size > 0 ? ` (placeholders: {${[...placeholders].join("}, {")}})` : " (it has none)"}`,
    );
  }
  return template.replace(PLACEHOLDER, (token, name: string | undefined) => {
    if (token === "{{") return "{";
    if (token === "}}") return "}";
    return String(vars[name as string]);
  });
}
