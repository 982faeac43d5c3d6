/**
 * forge-guardrails: reliable tool calling for self-hosted LLMs.
 *
 * The root entry is the loop and everything it needs, with no heavy dependency: data, tools and
 * workflows, errors, guardrails and middleware, context compaction, prompts and rescue parsing,
 * the workflow statechart (`createWorkflowMachine`), `WorkflowRunner`, `runInference` and
 * `SlotWorker`. It composes the faces of those folders (each folder's `index.ts` is its curated
 * list); a public name has one entry point. The other entry points are subpaths:
 * - `forge-guardrails/machines`: the statecharts' parts and the pure decisions they branch on;
 * - `/clients`, `/llama-cpp`, `/anthropic`: LLM clients (OpenAI-compatible, node-llama-cpp, Anthropic);
 * - `/proxy`: the guardrail proxy; `/server`: the llama-server manager;
 * - `/watch`: the run viewer and its event reporting; `/queue`: the durable run queue;
 * - `/mcp`: tools from MCP servers; `/testing`: test doubles (`ScriptedClient`).
 */
export * from "./context/index.ts";
export * from "./core/index.ts";
export * from "./guardrails/index.ts";
export * from "./loop/index.ts";
export {
  createWorkflowMachine,
  type HistoryCompactor,
  type WorkflowActor,
  type WorkflowDepsLookup,
  type WorkflowEvent,
  type WorkflowMachine,
  type WorkflowMachineDeps,
  type WorkflowOutput,
  type WorkflowSnapshot,
} from "./machines/workflow.machine.ts";
export type { CheckpointHook, CheckpointPoint, CheckpointReason } from "./machines/workflow-actors.ts";
export * from "./prompts/index.ts";
export * from "./tools/index.ts";
