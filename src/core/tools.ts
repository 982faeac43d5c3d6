/**
 * Tool definitions: a zod schema the model sees as JSON Schema, bound to the function that runs it.
 */
import { z } from "zod";
import { WorkflowDefinitionError } from "./errors.ts";

/** A JSON object schema, as it travels on the wire. */
export type JsonSchema = Record<string, unknown>;

/** What the model sees of a tool. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: z.ZodObject;
  /** The JSON Schema the tool arrived as, when it was built from one; sent as-is on the wire. */
  jsonSchema?: JsonSchema;
}

/** A prerequisite: any earlier call of `tool`, or one whose `matchArg` argument had the same value. */
export type Prerequisite = string | { tool: string; matchArg: string };

/** A tool's signature, implementation and prerequisites. */
export interface ToolDef<Args extends Record<string, unknown> = Record<string, unknown>> {
  spec: ToolSpec;
  execute: (args: Args) => unknown;
  prerequisites: Prerequisite[];
}

/** Options of `defineTool`. */
export interface DefineToolOptions<Schema extends z.ZodObject> {
  name: string;
  description: string;
  parameters: Schema;
  execute: (args: z.output<Schema>) => unknown;
  prerequisites?: Prerequisite[];
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Define a tool. Throws `WorkflowDefinitionError` naming the problem when the definition is invalid.
 * @example
 * const getWeather = defineTool({
 *   name: "get_weather",
 *   description: "Current weather for a city",
 *   parameters: z.object({ city: z.string() }),
 *   execute: ({ city }) => `22°C and sunny in ${city}`,
 * });
 */
export function defineTool<Schema extends z.ZodObject>(options: DefineToolOptions<Schema>): ToolDef {
  const { name, description, parameters, execute, prerequisites = [] } = options;
  assertToolName(name);
  if (typeof description !== "string") {
    throw new WorkflowDefinitionError(`Tool '${name}': description must be a string`);
  }
  if (!(parameters instanceof z.ZodObject)) {
    throw new WorkflowDefinitionError(
      `Tool '${name}': parameters must be a zod object schema (z.object({...})); use toolSpecFromJsonSchema for JSON Schema`,
    );
  }
  if (typeof execute !== "function") {
    throw new WorkflowDefinitionError(`Tool '${name}': execute must be a function`);
  }
  assertPrerequisites(name, prerequisites);
  return {
    spec: { name, description, parameters },
    execute: execute as (args: Record<string, unknown>) => unknown,
    prerequisites: [...prerequisites],
  };
}

/**
 * Build a tool spec from a JSON Schema object (tools that arrive over the wire, MCP servers, …).
 * The schema is converted to zod for argument validation and kept as-is for the wire.
 */
export function toolSpecFromJsonSchema(name: string, description: string, jsonSchema: JsonSchema): ToolSpec {
  assertToolName(name);
  if (typeof jsonSchema !== "object" || jsonSchema === null || Array.isArray(jsonSchema)) {
    throw new WorkflowDefinitionError(`Tool '${name}': parameters must be a JSON Schema object`);
  }
  const type = jsonSchema.type ?? "object";
  if (type !== "object") {
    throw new WorkflowDefinitionError(
      `Tool '${name}': parameters schema must have type "object", got ${JSON.stringify(type)}`,
    );
  }
  const normalized: JsonSchema = { properties: {}, ...jsonSchema, type: "object" };
  let parameters: z.ZodType;
  try {
    parameters = z.fromJSONSchema(normalized as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (error) {
    throw new WorkflowDefinitionError(
      `Tool '${name}': JSON Schema could not be converted: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  if (!(parameters instanceof z.ZodObject)) {
    throw new WorkflowDefinitionError(`Tool '${name}': JSON Schema did not describe an object`);
  }
  return { name, description, parameters, jsonSchema: normalized };
}

/** The JSON Schema of a tool's parameters, as sent to the model. */
export function toolJsonSchema(spec: ToolSpec): JsonSchema {
  if (spec.jsonSchema) return spec.jsonSchema;
  const cached = schemaCache.get(spec.parameters);
  if (cached) return cached;
  const { $schema: _ignored, ...schema } = z.toJSONSchema(spec.parameters, { io: "input" }) as JsonSchema;
  schemaCache.set(spec.parameters, schema);
  return schema;
}

const schemaCache = new WeakMap<z.ZodType, JsonSchema>();

/** A tool spec in OpenAI's `tools` wire shape. */
export function toOpenAITool(spec: ToolSpec): Record<string, unknown> {
  return {
    type: "function",
    function: { name: spec.name, description: spec.description, parameters: toolJsonSchema(spec) },
  };
}

function assertToolName(name: unknown): asserts name is string {
  if (typeof name !== "string" || !TOOL_NAME.test(name)) {
    throw new WorkflowDefinitionError(
      `Invalid tool name ${JSON.stringify(name)}: use 1-64 letters, digits, '_' or '-'`,
    );
  }
}

function assertPrerequisites(name: string, prerequisites: unknown): void {
  if (!Array.isArray(prerequisites)) {
    throw new WorkflowDefinitionError(`Tool '${name}': prerequisites must be an array`);
  }
  for (const prerequisite of prerequisites) {
    const valid =
      typeof prerequisite === "string" ||
      (typeof prerequisite === "object" &&
        prerequisite !== null &&
        typeof (prerequisite as { tool?: unknown }).tool === "string" &&
        typeof (prerequisite as { matchArg?: unknown }).matchArg === "string");
    if (!valid) {
      throw new WorkflowDefinitionError(
        `Tool '${name}': invalid prerequisite ${JSON.stringify(prerequisite)}; use "tool" or { tool, matchArg }`,
      );
    }
  }
}

/** The tool name a prerequisite refers to. */
export function prerequisiteTool(prerequisite: Prerequisite): string {
  return typeof prerequisite === "string" ? prerequisite : prerequisite.tool;
}
