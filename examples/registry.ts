/**
 * A registry module for `forge worker --registry`: the workflows a worker can run, by name, and
 * the runner that runs them. Producers only name a workflow (`forge enqueue weather "…"`); the
 * worker looks it up here. The model is the one examples/backend.ts picks from the environment;
 * with none, a scripted model that answers any number of weather runs.
 *
 * `forge worker` imports this file with `import()`: from a clone, `npm run forge -- worker
 * --registry ./examples/registry.ts` runs it as it is; an installed `forge` needs JavaScript, or
 * TypeScript support loaded first: `NODE_OPTIONS="--import tsx" npx forge worker --registry ./registry.ts`.
 */
import { ContextManager, type LLMResponse, TieredCompact, WorkflowRunner } from "forge-guardrails";
import { defineRegistry } from "forge-guardrails/queue";
import { type RecordedCall, toolCall } from "forge-guardrails/testing";
import { exampleBackend } from "./backend.ts";
import { weather } from "./weather.ts";

/** What a scripted model answers in any weather run: look the city up, then report it. */
function scriptedWeatherAnswer(call: RecordedCall): LLMResponse {
  const city = /weather in (\p{Lu}[\p{L}-]*)/u.exec(JSON.stringify(call.messages))?.[1] ?? "Paris";
  const looked = call.messages.findLast((message) => message.role === "tool");
  return looked === undefined
    ? toolCall("get_weather", { city })
    : toolCall("report_weather", { city, weather: String(looked.content).replace(/ in .*$/, "") });
}

// Two calls per run: enough scripted answers for 500 runs of one worker process.
const { client, budgetTokens } = await exampleBackend(
  Array.from({ length: 1000 }, () => scriptedWeatherAnswer),
);

const runner = new WorkflowRunner({
  client,
  contextManager: new ContextManager({ strategy: new TieredCompact(), budgetTokens }),
});

export default defineRegistry({ workflows: [weather], runner });
