/**
 * Responses tools → `ToolSpec`s. Only function tools reach the model: a `namespace` tool's
 * functions are flattened into the list (the answer names their namespace again), and tools the
 * loop cannot serve — hosted ones (`web_search`, `file_search`, `code_interpreter`, …), freeform
 * `custom` tools, shells — are skipped and reported, never a 400, so a client that always sends
 * them (Codex) still works with the tools it has.
 */
import type { ToolSpec } from "../../core/tools.ts";
import { parseWith } from "../dialect.ts";
import { invalidField } from "../errors.ts";
import { toolSpecFromWire } from "../tool-specs.ts";
import { functionToolSchema, namespaceToolSchema, type ResponsesToolChoice } from "./schema.ts";

/** The request's tools as the guarded path serves them. */
export interface ResponsesTools {
  specs: ToolSpec[];
  /** The namespace of each flattened function, by function name. */
  namespaces: Map<string, string>;
  /** The types of the tools skipped, in order, once each (`web_search`, `namespace.custom`, …). */
  skipped: string[];
}

/**
 * Convert the `tools` list. Throws `ProxyHttpError` (400) naming a malformed function tool, or a
 * function name given twice (a namespace's functions included).
 */
export function toolsFromResponses(tools: readonly { type: string }[]): ResponsesTools {
  const result: ResponsesTools = { specs: [], namespaces: new Map(), skipped: [] };
  const skip = (type: string) => {
    if (!result.skipped.includes(type)) result.skipped.push(type);
  };
  const add = (spec: ToolSpec, param: string) => {
    if (result.specs.some((known) => known.name === spec.name)) {
      throw invalidField(
        param,
        `a second function named '${spec.name}' (namespaces are flattened: names must be unique)`,
      );
    }
    result.specs.push(spec);
  };
  tools.forEach((tool, index) => {
    const param = `tools[${index}]`;
    if (tool.type === "function") {
      add(functionSpec(tool, param), `${param}.name`);
    } else if (tool.type === "namespace") {
      const namespace = parseWith(namespaceToolSchema, tool, param);
      namespace.tools.forEach((inner, innerIndex) => {
        if (inner.type !== "function") {
          skip(`namespace.${inner.type}`);
          return;
        }
        const innerParam = `${param}.tools[${innerIndex}]`;
        const spec = functionSpec(inner, innerParam);
        add(spec, `${innerParam}.name`);
        result.namespaces.set(spec.name, namespace.name);
      });
    } else {
      skip(tool.type);
    }
  });
  return result;
}

/**
 * `tool_choice` in chat-completions terms, for the backend: `auto` and `required` as they are, a
 * named function as `{ type: "function", function: { name } }`, an `allowed_tools` list as its
 * mode; a hosted tool's choice (which the backend cannot honour) as nothing, the backend's `auto`.
 * `none` never gets here: the request then has no tools.
 */
export function toolChoiceForBackend(choice: ResponsesToolChoice | null | undefined): unknown {
  if (choice === null || choice === undefined || choice === "none") return undefined;
  if (typeof choice === "string") return choice;
  if (choice.type === "function" && choice.name) {
    return { type: "function", function: { name: choice.name } };
  }
  if (choice.type === "allowed_tools" && choice.mode === "required") return "required";
  return undefined;
}

function functionSpec(tool: unknown, param: string): ToolSpec {
  const parsed = parseWith(functionToolSchema, tool, param);
  return toolSpecFromWire(
    {
      name: parsed.name,
      description: parsed.description ?? undefined,
      parameters: parsed.parameters ?? undefined,
    },
    `${param}.parameters`,
  );
}
