/**
 * Runs every SDK path of docs/agents.md's client table once against one base URL (the proxy, or
 * llama-server directly) with a weather tool, and prints what each SDK parsed or the error it
 * raised: the measurement behind the table's "through the proxy" and "direct" columns on a real
 * model. The SDKs run with no retries; tools return a fixed result; the tracing of
 * `@openai/agents` is off, so nothing leaves the machine.
 *
 * Run: `npx tsx scripts/sdk-paths.ts --base-url http://127.0.0.1:8080 [--api-key KEY] [--only NAME]`
 */

import { parseArgs } from "node:util";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import Anthropic from "@anthropic-ai/sdk";
import { betaTool } from "@anthropic-ai/sdk/helpers/beta/json-schema";
import { tool as langchainTool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import { Agent, tool as agentsTool, OpenAIProvider, Runner } from "@openai/agents";
import { tool as aiTool, generateText, stepCountIs } from "ai";
import OpenAI from "openai";
import { z } from "zod";

const { values } = parseArgs({
  options: {
    "base-url": { type: "string" },
    "api-key": { type: "string", default: "unused" },
    only: { type: "string" },
    model: { type: "string", default: "local" },
  },
});
const baseUrl = values["base-url"];
if (baseUrl === undefined) {
  console.error("usage: npx tsx scripts/sdk-paths.ts --base-url http://127.0.0.1:8080 [--api-key KEY]");
  process.exit(2);
}
const apiKey = values["api-key"];
const model = values.model;
const prompt = "What is the weather in Oslo? Use the get_weather tool.";
const weatherResult = "4°C and cloudy";
const parameters = {
  type: "object" as const,
  properties: { city: { type: "string" as const } },
  required: ["city"],
};
const maxTokens = 128;

const openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey, maxRetries: 0, timeout: 300_000 });
const anthropic = new Anthropic({ baseURL: baseUrl, apiKey, maxRetries: 0, timeout: 300_000 });

const short = (text: unknown) => JSON.stringify(text).slice(0, 80);

/** Each path: its name, wire API, and a run that returns what the SDK parsed. */
const paths: { name: string; wire: string; run: () => Promise<string> }[] = [
  {
    name: "openai chat.completions.create",
    wire: "chat",
    run: async () => {
      const answer = await openai.chat.completions.create({
        model,
        max_tokens: maxTokens,
        messages: [{ role: "user", content: prompt }],
        tools: [{ type: "function", function: { name: "get_weather", parameters } }],
      });
      const message = answer.choices[0]?.message;
      return `${answer.choices[0]?.finish_reason}: ${short(message?.tool_calls?.[0] ?? message?.content)}`;
    },
  },
  {
    name: "openai chat.completions.runTools",
    wire: "chat",
    run: async () => {
      const runner = openai.chat.completions.runTools({
        model,
        max_tokens: maxTokens,
        messages: [{ role: "user", content: prompt }],
        tools: [
          {
            type: "function",
            function: {
              name: "get_weather",
              description: "Current weather for a city",
              parameters,
              parse: JSON.parse,
              function: () => weatherResult,
            },
          },
        ],
        stream: true,
      });
      const content = await runner.finalContent();
      return `${runner.messages.length} messages, final ${short(content)}`;
    },
  },
  {
    name: "openai responses.create (streamed)",
    wire: "responses",
    run: async () => {
      const stream = await openai.responses.create({
        model,
        max_output_tokens: maxTokens,
        input: prompt,
        tools: [{ type: "function", name: "get_weather", parameters, strict: false }],
        stream: true,
        store: false,
      });
      let last = "";
      for await (const event of stream) {
        if (event.type === "response.completed") {
          last = short(event.response.output.map((item) => item.type));
        }
      }
      return `completed, output ${last}`;
    },
  },
  ...[true, false].map((responses) => ({
    name: responses ? "AI SDK @ai-sdk/openai (default: Responses)" : "AI SDK @ai-sdk/openai-compatible",
    wire: responses ? "responses" : "chat",
    run: async () => {
      const result = await generateText({
        model: responses
          ? createOpenAI({ baseURL: `${baseUrl}/v1`, apiKey })(model)
          : createOpenAICompatible({ name: "local", baseURL: `${baseUrl}/v1`, apiKey })(model),
        prompt,
        maxOutputTokens: maxTokens,
        maxRetries: 0,
        stopWhen: stepCountIs(3),
        tools: {
          get_weather: aiTool({
            inputSchema: z.object({ city: z.string() }),
            execute: async () => weatherResult,
          }),
        },
      });
      return `${result.steps.length} steps (${result.steps.map((step) => step.finishReason).join(", ")}), text ${short(result.text)}`;
    },
  })),
  ...[true, false].map((useResponses) => ({
    name: `@openai/agents (${useResponses ? "default: Responses" : "chat completions model"})`,
    wire: useResponses ? "responses" : "chat",
    run: async () => {
      const runner = new Runner({
        modelProvider: new OpenAIProvider({ baseURL: `${baseUrl}/v1`, apiKey, useResponses }),
        tracingDisabled: true,
      });
      const getWeather = agentsTool({
        name: "get_weather",
        description: "Current weather for a city",
        parameters: z.object({ city: z.string() }),
        execute: async () => weatherResult,
      });
      const agent = new Agent({
        name: "Weather",
        model,
        tools: [getWeather],
        modelSettings: { maxTokens },
      });
      const result = await runner.run(agent, prompt, { maxTurns: 3 });
      return `${result.rawResponses.length} model calls, final ${short(result.finalOutput)}`;
    },
  })),
  ...[false, true].map((useResponsesApi) => ({
    name: `LangChain ChatOpenAI (${useResponsesApi ? "useResponsesApi" : "chat"})`,
    wire: useResponsesApi ? "responses" : "chat",
    run: async () => {
      const getWeather = langchainTool(async () => weatherResult, {
        name: "get_weather",
        description: "Current weather for a city",
        schema: z.object({ city: z.string() }),
      });
      const chat = new ChatOpenAI({
        model,
        apiKey,
        configuration: { baseURL: `${baseUrl}/v1` },
        maxRetries: 0,
        maxTokens,
        useResponsesApi,
      }).bindTools([getWeather]);
      const answer = await chat.invoke(prompt);
      return `tool_calls ${short(answer.tool_calls)}, text ${short(answer.text)}`;
    },
  })),
  {
    name: "@anthropic-ai/sdk messages.stream",
    wire: "messages",
    run: async () => {
      const message = await anthropic.messages
        .stream({
          model,
          max_tokens: maxTokens,
          messages: [{ role: "user", content: prompt }],
          tools: [{ name: "get_weather", input_schema: parameters }],
        })
        .finalMessage();
      return `${message.stop_reason}: ${short(message.content.map((block) => block.type))}`;
    },
  },
  {
    name: "@anthropic-ai/sdk beta.messages.toolRunner",
    wire: "messages",
    run: async () => {
      const requests: unknown[] = [];
      const counted = new Anthropic({
        baseURL: baseUrl,
        apiKey,
        maxRetries: 0,
        timeout: 300_000,
        fetch: async (input, init) => {
          requests.push(typeof init?.body === "string" ? JSON.parse(init.body).thread : undefined);
          return fetch(input, init);
        },
      });
      const final = await counted.beta.messages.toolRunner({
        model,
        max_tokens: maxTokens,
        max_iterations: 3,
        messages: [{ role: "user", content: prompt }],
        tools: [
          betaTool({
            name: "get_weather",
            description: "Weather",
            inputSchema: parameters,
            run: () => weatherResult,
          }),
        ],
      });
      return `${requests.length} requests (thread: ${short(requests)}), final ${final.stop_reason} ${short(final.content.map((block) => block.type))}`;
    },
  },
  {
    name: "@anthropic-ai/sdk messages.countTokens",
    wire: "messages",
    run: async () => {
      const count = await anthropic.messages.countTokens({
        model,
        messages: [{ role: "user", content: prompt }],
        tools: [{ name: "get_weather", input_schema: parameters }],
      });
      return `input_tokens ${count.input_tokens}`;
    },
  },
];

for (const path of paths) {
  if (values.only !== undefined && !path.name.includes(values.only)) continue;
  const started = performance.now();
  let outcome: string;
  try {
    outcome = `ok   ${await path.run()}`;
  } catch (error) {
    outcome =
      `FAIL ${error instanceof Error ? `${error.constructor.name}: ${error.message}` : String(error)}`.slice(
        0,
        240,
      );
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`${path.name} [${path.wire}] ${seconds} s: ${outcome.replaceAll("\n", " ")}`);
}
