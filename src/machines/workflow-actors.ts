/**
 * The workflow machine's invoked actors: a worker for LLM calls (inference-actor.ts) and one for
 * tool batches (tool-actor.ts), each invoked once for the whole run and sent one request per
 * iteration (see request-worker.ts). Factories take their dependencies, or a lookup that finds them
 * per workflow actor (for a machine built once and run with different clients); data enters through
 * the requests. This file is the two workers' face for the rest of the library.
 */
export type {
  CheckpointHook,
  CheckpointPoint,
  CheckpointReason,
  DepsSource,
} from "./actor-deps.ts";
export { createInferenceLogic, type InferenceDeps, type InferenceRequest } from "./inference-actor.ts";
export {
  createToolExecutionLogic,
  serializeToolResult,
  type ToolExecutionDeps,
  type ToolExecutionRequest,
} from "./tool-actor.ts";
