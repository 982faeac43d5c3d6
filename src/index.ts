/**
 * forge-guardrails: reliable tool calling for self-hosted LLMs.
 *
 * The root entry is the loop and everything it needs, with no heavy dependency: data, tools and
 * workflows, errors, guardrails and middleware, context compaction, prompts and rescue parsing,
 * the workflow statechart, `WorkflowRunner`, `runInference` and `SlotWorker`. It composes the
 * faces of those folders (each folder's `index.ts` is its curated list). The statecharts' parts and
 * the pure decisions they branch on are `forge-guardrails/machines`; clients, the proxy and the
 * server manager are subpaths: `forge-guardrails/clients`, `/llama-cpp`, `/anthropic`, `/proxy`,
 * `/server`; test doubles are `forge-guardrails/testing`.
 */
export * from "./context/index.ts";
export * from "./core/index.ts";
export * from "./guardrails/index.ts";
export * from "./loop/index.ts";
export {
  type CheckpointHook,
  type CheckpointPoint,
  type CheckpointReason,
  createWorkflowMachine,
  type HistoryCompactor,
  type WorkflowActor,
  type WorkflowDepsLookup,
  type WorkflowEvent,
  type WorkflowMachine,
  type WorkflowMachineDeps,
  type WorkflowOutput,
  type WorkflowSnapshot,
} from "./machines/index.ts";
export * from "./prompts/index.ts";
export * from "./tools/index.ts";
