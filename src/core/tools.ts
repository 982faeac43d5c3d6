/**
 * Tool definitions: a zod schema the model sees as JSON Schema, bound to the function that runs it.
 */
import { z } from "zod";
import { WorkflowDefinitionError } from "./errors.ts";
import type { Message } from "./messages.ts";

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

/**
 * What running a tool does to the world, for runs resumed after a crash:
 * - `none`: reads only; re-running it is harmless.
 * - `idempotent`: running it twice with the same `idempotencyKey` has the effect of running it once.
 * - `unsafe`: a call interrupted mid-execution is never re-run; the model is told its outcome is
 *   unknown (a tool error) instead.
 * Unset, a tool is re-run after a crash (at least once, like `idempotent`).
 */
export type ToolEffects = "none" | "idempotent" | "unsafe";

/** Where a call runs: handed to `execute` as its second argument. */
export interface ToolCallContext {
  /** The run's id (the seed of its deterministic call ids). */
  runId: string;
  /** The call's id, as in the TOOL_CALL message: stable across resumes. */
  callId: string;
  /** `${runId}:${callId}`: pass it to the services the tool calls so a repeated call is recognised. */
  idempotencyKey: string;
  /**
   * Aborted when the run is cancelled. The run then waits for the call up to its grace
   * (`WorkflowRunnerOptions.cancelGraceMs`, default 5 s): a value returned within it is recorded
   * as the call's result; an error thrown after the abort records the call as cancelled. Also
   * aborted, with a `ToolTimeoutError` as its reason, when the call runs past its timeout
   * (`timeoutMs`, or the runner's `toolTimeoutMs`): the call is then answered with that error and
   * whatever it returns later is dropped.
   */
  signal: AbortSignal;
  /** 1 for the first execution; more when a resumed run re-runs a call that was started before. */
  attempt: number;
  /** True when an earlier process started this call (attempt > 1). */
  resumed: boolean;
}

/** What a `needsApproval` function is told about the call it decides on. */
export interface ApprovalCheckContext {
  /** The run's id. */
  runId: string;
  /** The call's id, as in the TOOL_CALL message. */
  callId: string;
  /** The run's history so far (the TOOL_CALL message of the batch last). Read only. */
  messages: readonly Message[];
}

/**
 * Whether a call must wait for a person before it runs: always (`true`), never (`false`, the
 * default), or as a function of the call's parsed arguments and the run decides (it may be async;
 * a throw fails the run). See docs/decisions/017-human-approval.md.
 */
export type NeedsApproval =
  | boolean
  | ((args: Record<string, unknown>, context: ApprovalCheckContext) => boolean | Promise<boolean>);

/** A tool's signature, implementation and prerequisites. */
export interface ToolDef<Args extends Record<string, unknown> = Record<string, unknown>> {
  spec: ToolSpec;
  /**
   * Run a call. The loop always passes `context`; a caller running the tool itself (a foreign loop)
   * may leave it out, and a tool built by `defineTool` then gets a context of its own (a fresh call id).
   */
  execute(args: Args, context?: ToolCallContext): unknown;
  prerequisites: Prerequisite[];
  /** Unset: re-run after a crash (at least once). */
  effects?: ToolEffects;
  /**
   * How long (ms) a call may run before it is answered with a `ToolTimeoutError` tool error and its
   * signal is aborted; over the runner's `toolTimeoutMs`. Unset: the runner's, else no limit.
   */
  timeoutMs?: number;
  /** Whether a call waits for a person's approval before it runs (see {@link NeedsApproval}). Unset: never. */
  needsApproval?: NeedsApproval;
}

/** Options of `defineTool`. */
export interface DefineToolOptions<Schema extends z.ZodObject> {
  name: string;
  description: string;
  parameters: Schema;
  /**
   * The JSON Schema the model sees, sent as-is, for a tool that arrived as one (an MCP server's, a
   * wire tool's); `parameters` is then its zod conversion, which validates the arguments. Spread
   * {@link toolSpecFromJsonSchema}'s spec to give both. Unset: `parameters` converted to JSON Schema.
   * @example
   * defineTool({ ...toolSpecFromJsonSchema("search", "Search the docs", schema), execute: search })
   */
  jsonSchema?: JsonSchema;
  /** Runs the call; `context` says which call it is (ids for idempotency, the run's abort signal). */
  execute: (args: z.output<Schema>, context: ToolCallContext) => unknown;
  prerequisites?: Prerequisite[];
  /** What the tool does to the world, for resumed runs (see {@link ToolEffects}). */
  effects?: ToolEffects;
  /**
   * How long (ms, a positive integer) one call may run: past it the call's `signal` is aborted and
   * the model is answered `[ToolError] ToolTimeoutError: '<name>' did not return within N ms`
   * (counted against `maxToolErrors`). Over the runner's `toolTimeoutMs`; unset: that, else none.
   */
  timeoutMs?: number;
  /**
   * A call waits for a person before it runs: the run ends its attempt with an
   * `AwaitingApprovalError` carrying the pending calls and a snapshot, and resumes once each is
   * approved or denied. `true`, or a (possibly async) function of the parsed arguments and the run.
   * @example
   * needsApproval: ({ amount }) => Number(amount) > 100
   */
  needsApproval?: NeedsApproval;
}

/** Tool names every OpenAI-compatible API accepts: {@link TOOL_NAME_RULE}. */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** {@link TOOL_NAME_PATTERN} in words, for error messages. */
export const TOOL_NAME_RULE = "1-64 letters, digits, '_' or '-'";

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
  const { name, description, parameters, execute, prerequisites = [], effects, timeoutMs } = options;
  const { needsApproval, jsonSchema } = options;
  assertToolName(name);
  if (
    needsApproval !== undefined &&
    typeof needsApproval !== "boolean" &&
    typeof needsApproval !== "function"
  ) {
    throw new WorkflowDefinitionError(
      `Tool '${name}': needsApproval must be a boolean or a function of the call's arguments, got ${JSON.stringify(needsApproval)}`,
    );
  }
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0)) {
    throw new WorkflowDefinitionError(
      `Tool '${name}': timeoutMs must be a positive integer (milliseconds), got ${JSON.stringify(timeoutMs)}`,
    );
  }
  if (effects !== undefined && !["none", "idempotent", "unsafe"].includes(effects)) {
    throw new WorkflowDefinitionError(
      `Tool '${name}': effects must be "none", "idempotent" or "unsafe", got ${JSON.stringify(effects)}`,
    );
  }
  if (typeof description !== "string") {
    throw new WorkflowDefinitionError(`Tool '${name}': description must be a string`);
  }
  if (!(parameters instanceof z.ZodObject)) {
    throw new WorkflowDefinitionError(
      `Tool '${name}': parameters must be a zod object schema (z.object({...})); for JSON Schema, spread toolSpecFromJsonSchema's spec`,
    );
  }
  if (
    jsonSchema !== undefined &&
    (typeof jsonSchema !== "object" || jsonSchema === null || Array.isArray(jsonSchema))
  ) {
    throw new WorkflowDefinitionError(`Tool '${name}': jsonSchema must be a JSON Schema object`);
  }
  if (typeof execute !== "function") {
    throw new WorkflowDefinitionError(`Tool '${name}': execute must be a function`);
  }
  assertPrerequisites(name, prerequisites);
  return {
    spec: { name, description, parameters, ...(jsonSchema !== undefined && { jsonSchema }) },
    execute: (args: Record<string, unknown>, context?: ToolCallContext) =>
      execute(args as z.output<Schema>, context ?? standaloneContext()),
    prerequisites: [...prerequisites],
    ...(effects !== undefined && { effects }),
    ...(timeoutMs !== undefined && { timeoutMs }),
    ...(needsApproval !== undefined && { needsApproval }),
  };
}

/** The context of a call made outside a run (a caller executing the tool itself). */
function standaloneContext(): ToolCallContext {
  const callId = Math.random().toString(36).slice(2, 11);
  return {
    runId: "standalone",
    callId,
    idempotencyKey: `standalone:${callId}`,
    signal: new AbortController().signal,
    attempt: 1,
    resumed: false,
  };
}

/**
 * Build a tool spec from a JSON Schema object (tools that arrive over the wire, MCP servers, …).
 * The schema is converted to zod for argument validation and kept as-is for the wire. Spread it
 * into `defineTool` to make the tool.
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
  if (typeof name !== "string" || !TOOL_NAME_PATTERN.test(name)) {
    throw new WorkflowDefinitionError(`Invalid tool name ${JSON.stringify(name)}: use ${TOOL_NAME_RULE}`);
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
