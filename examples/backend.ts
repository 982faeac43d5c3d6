/**
 * The model the examples run on: a `ScriptedClient` by default, so each runs anywhere with no
 * model, or a real one when an environment variable names it:
 *
 *   FORGE_BASE_URL=http://127.0.0.1:8080/v1   llama-server (started with --jinja), vLLM, llamafile
 *   FORGE_OLLAMA_MODEL=qwen3:8b                Ollama (OLLAMA_HOST, default http://127.0.0.1:11434)
 *   FORGE_GGUF=./Qwen3-8B-Q4_K_M.gguf          in process (`npm install node-llama-cpp@3`)
 *
 * Copy the branch you need into your own code; `budgetTokens` is the window less a reply reserve.
 */
import type { LLMClient } from "forge-guardrails";
import { OllamaClient, OpenAICompatibleClient } from "forge-guardrails/clients";
import { ScriptedClient, type ScriptStep } from "forge-guardrails/testing";

/** Tokens kept free for the model's reply when sizing the history's budget. */
const REPLY_RESERVE = 1024;

/** A client, the budget to give its `ContextManager`, and a line saying which model it is. */
export interface ExampleBackend {
  client: LLMClient;
  budgetTokens: number;
  label: string;
}

/** The real model the environment names, else a `ScriptedClient` replaying `script`. */
export async function exampleBackend(
  script: ScriptStep[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<ExampleBackend> {
  let client: LLMClient;
  let label: string;
  if (env.FORGE_BASE_URL) {
    client = new OpenAICompatibleClient({ baseUrl: env.FORGE_BASE_URL });
    label = `OpenAI-compatible server at ${env.FORGE_BASE_URL}`;
  } else if (env.FORGE_OLLAMA_MODEL) {
    client = new OllamaClient({
      model: env.FORGE_OLLAMA_MODEL,
      numCtx: 8192,
      ...(env.OLLAMA_HOST && { baseUrl: env.OLLAMA_HOST }),
    });
    label = `Ollama model ${env.FORGE_OLLAMA_MODEL}`;
  } else if (env.FORGE_GGUF) {
    // An optional peer: imported only when asked for.
    const { LlamaCppClient } = await import("forge-guardrails/llama-cpp");
    client = new LlamaCppClient({ modelPath: env.FORGE_GGUF });
    label = `${env.FORGE_GGUF} in process`;
  } else {
    return { client: new ScriptedClient(script), budgetTokens: 8192, label: "a scripted model" };
  }
  const window = (await client.getContextLength()) ?? 8192;
  return { client, budgetTokens: Math.max(window - REPLY_RESERVE, 1024), label };
}
