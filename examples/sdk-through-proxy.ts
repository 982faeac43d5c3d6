/**
 * The official OpenAI SDK through the guardrail proxy: the SDK is unchanged but for its base URL.
 * The proxy stands in front of `FORGE_BASE_URL` (llama-server, vLLM, any OpenAI-compatible server;
 * with or without its `/v1`) when set; otherwise in front of a scripted model that first answers in prose naming the tool and then writes
 * its tool call as text, which the proxy nudges and rescues. Either way the SDK gets clean
 * `tool_calls`.
 *
 * Run it: `npx tsx examples/sdk-through-proxy.ts`
 *   or    `FORGE_BASE_URL=http://127.0.0.1:8080/v1 npx tsx examples/sdk-through-proxy.ts`
 * The same proxy from the command line: `npx forge proxy --backend-url http://127.0.0.1:8080`.
 */
import { pathToFileURL } from "node:url";
import { createHttpBackend, type ProxyBackend, startProxy } from "forge-guardrails/proxy";
import { ScriptedClient, text } from "forge-guardrails/testing";
import OpenAI from "openai";

/** A backend answering from a script, for running the example without a model server. */
function scriptedBackend(): ProxyBackend {
  const model = new ScriptedClient([
    // Prose that names a tool shows a call attempt: the proxy nudges for the call (clean prose,
    // under tool_choice auto, would be the answer as it stands: the prose policy).
    text("Let me check get_weather for Paris."),
    text('[TOOL_CALLS]get_weather{"city": "Paris"}'), // a call written as text: rescued
  ]);
  return {
    format: "openai",
    url: "scripted://model",
    client: () => model,
    forward: async () =>
      Response.json(
        { error: { message: "the scripted model only answers guarded requests" } },
        { status: 501 },
      ),
    contextLength: async () => 8192,
    health: async () => ({ status: "ok", url: "scripted://model", format: "openai" }),
  };
}

/** Start a proxy, ask for a tool call through the OpenAI SDK, and return the calls it got. */
export async function main(log: (line: string) => void = console.log, env: NodeJS.ProcessEnv = process.env) {
  // The proxy wants the server's root (`forge proxy --backend-url http://127.0.0.1:8080`).
  const backendUrl = env.FORGE_BASE_URL?.replace(/\/v1\/?$/, "");
  const backend = backendUrl ? createHttpBackend({ url: backendUrl }) : scriptedBackend();
  const proxy = await startProxy({ backend, port: 0 }); // port 0: a free one
  try {
    const openai = new OpenAI({ baseURL: `${proxy.url}/v1`, apiKey: "unused" });
    const completion = await openai.chat.completions.create({
      model: "local",
      messages: [{ role: "user", content: "What's the weather in Paris?" }],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            description: "Current weather for a city",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          },
        },
      ],
    });
    const calls = completion.choices[0]?.message.tool_calls ?? [];
    for (const call of calls) {
      if (call.type === "function") log(`${call.function.name}(${call.function.arguments})`);
    }
    return calls;
  } finally {
    await proxy.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
