/** forge-guardrails: reliable tool calling for self-hosted LLMs. */

export * from "./clients/index.ts";
export * from "./context/index.ts";
export * from "./core/errors.ts";
export { appendMessages } from "./core/history.ts";
export * from "./core/messages.ts";
export * from "./core/tools.ts";
export * from "./core/types.ts";
export * from "./core/workflow.ts";
export * from "./guardrails/index.ts";
export { errorFromOutput } from "./loop/failure.ts";
export { type InferenceResult, type RunInferenceOptions, runInference } from "./loop/inference.ts";
export { type RunOptions, WorkflowRunner, type WorkflowRunnerOptions } from "./loop/runner.ts";
export { SlotWorker, SlotWorkerError, type SubmitOptions } from "./loop/slot-worker.ts";
export * from "./machines/index.ts";
export * from "./prompts/index.ts";
export * from "./proxy/index.ts";
export * from "./server/index.ts";
export { RESPOND_TOOL_NAME, respondTool } from "./tools/respond.ts";
