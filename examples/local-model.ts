/**
 * Guarded tool calling in your app: the weather workflow run by `WorkflowRunner` on a local model.
 * With no environment it runs on a scripted model that first reports too early (the guardrails
 * nudge it); `FORGE_BASE_URL`, `FORGE_OLLAMA_MODEL` or `FORGE_GGUF` runs it on a real one
 * (examples/backend.ts).
 *
 * Run it: `npx tsx examples/local-model.ts`
 *   or    `FORGE_BASE_URL=http://127.0.0.1:8080/v1 npx tsx examples/local-model.ts`
 */
import { pathToFileURL } from "node:url";
import { ContextManager, TieredCompact, WorkflowRunner } from "forge-guardrails";
import { exampleBackend } from "./backend.ts";
import { weather, weatherScript } from "./weather.ts";

/** Run the weather workflow for Paris; resolves with the terminal tool's result. */
export async function main(log: (line: string) => void = console.log, env: NodeJS.ProcessEnv = process.env) {
  const { client, budgetTokens, label } = await exampleBackend(weatherScript("Paris"), env);
  log(`model: ${label}, budget ${budgetTokens} tokens`);
  const runner = new WorkflowRunner({
    client,
    contextManager: new ContextManager({ strategy: new TieredCompact(), budgetTokens }),
    onMessage: (message) =>
      log(`${message.metadata.type}: ${message.content || JSON.stringify(message.toolCalls)}`),
  });
  const result = await runner.run(weather, "What's the weather in Paris?");
  log(`result: ${String(result)}`);
  return result;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
