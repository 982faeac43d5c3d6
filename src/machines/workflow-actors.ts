/**
 * The workflow machine's invoked actors: a worker for LLM calls (inference-actor.ts) and one for
 * tool batches (tool-actor.ts), each invoked once for the whole run and sent one request per
 * iteration (see request-worker.ts), and the approval screen (approval-actor.ts), a promise actor
 * of the `approve` state. Factories take their dependencies, or a lookup that finds them per
 * workflow actor (for a machine built once and run with different clients); data enters through
 * the requests and the input. This file is their face for the rest of the library.
 */
export type {
  CheckpointHook,
  CheckpointPoint,
  CheckpointReason,
  DepsSource,
} from "./actor-deps.ts";
export { type ApprovalScreenDeps, createApprovalScreenLogic } from "./approval-actor.ts";
export type { ApprovalScreenRequest } from "./approval-screen.ts";
export { createInferenceLogic, type InferenceDeps, type InferenceRequest } from "./inference-actor.ts";
export {
  createToolExecutionLogic,
  serializeToolResult,
  type ToolExecutionDeps,
  type ToolExecutionRequest,
} from "./tool-actor.ts";
