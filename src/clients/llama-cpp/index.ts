/**
 * `forge-guardrails/llama-cpp`: LlamaCppClient, a GGUF model run in process by node-llama-cpp (an
 * optional peer dependency: `npm install node-llama-cpp@3`).
 */
export {
  LlamaCppClient,
  type LlamaCppClientOptions,
  type LlamaCppMode,
  type LlamaCppModelInfo,
  type LlamaCppUsage,
} from "./client.ts";
export { ModelNotFoundError, NodeLlamaCppMissingError } from "./engine.ts";
