/**
 * Quick check of forge-tiny in the built llama-server (`--jinja`, 2 threads) on held-out generated
 * conversations: for every assistant step, with the correct earlier steps as history,
 *
 * - raw: the prompt from llama-server's chat template, completed with no grammar at temperature 0,
 *   parsed here: a well-formed `<tool_call>{...}</tool_call>` with a known tool name? the right
 *   tool? the exact arguments?
 * - chat: the same step through `/v1/chat/completions` with `tools`, where llama-server parses the
 *   Hermes calls natively (and its lazy grammar constrains the JSON once `<tool_call>` starts).
 *
 * Also reports generation tokens/s and time to first token (fresh prompt, no cache).
 * Usage: npx tsx tools/tiny-model/measure.ts [--model models/forge-tiny.gguf] [--count 20]
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { cachedLlamaServerPath } from "../../src/server/llama-server-path.ts";
import type { Conversation } from "./generate.ts";
import { renderPrompt, startTemplateServer } from "./render.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));

function argument(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? (process.argv[index + 1] as string) : fallback;
}

interface Timings {
  prompt_ms: number;
  prompt_n: number;
  predicted_ms: number;
  predicted_n: number;
}

function parseRawCall(text: string): { name: string; args: unknown } | null {
  const match = /^\s*<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/.exec(text);
  if (!match) return null;
  try {
    const parsed = JSON.parse(match[1] as string) as { name?: unknown; arguments?: unknown };
    if (
      typeof parsed.name !== "string" ||
      typeof parsed.arguments !== "object" ||
      parsed.arguments === null
    ) {
      return null;
    }
    return { name: parsed.name, args: parsed.arguments };
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  const model = argument("model", join(root, "models", "forge-tiny.gguf"));
  const count = Number(argument("count", "20"));
  const conversations = readFileSync(join(root, ".cache", "tiny-model", "heldout.jsonl"), "utf8")
    .trim()
    .split("\n")
    .slice(0, count)
    .map((line) => JSON.parse(line) as Conversation);
  const server = await startTemplateServer(cachedLlamaServerPath(), model, 19930 + (process.pid % 1000), [
    "-t",
    "2",
    "-tb",
    "2",
  ]);
  const tally = {
    steps: 0,
    rawParsed: 0,
    rawWellFormed: 0,
    rawRightTool: 0,
    rawExact: 0,
    chatCall: 0,
    chatRightTool: 0,
    chatExact: 0,
  };
  let conversationsAllRight = 0;
  const timings: Timings[] = [];
  const mistakes: string[] = [];
  try {
    for (const conversation of conversations) {
      let allRight = true;
      const messages = conversation.messages;
      for (let index = 0; index < messages.length; index++) {
        const message = messages[index] as { role: string; tool_calls?: unknown[] };
        if (message.role !== "assistant") continue;
        const expected = conversation.calls[
          messages.slice(0, index).filter((m) => m.role === "assistant").length
        ] as {
          name: string;
          args: Record<string, unknown>;
        };
        const history = messages.slice(0, index);
        tally.steps += 1;

        const prompt = await renderPrompt(server, history, conversation.tools);
        const raw = await fetch(`${server.url}/completion`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            prompt,
            n_predict: 96,
            temperature: 0,
            cache_prompt: false,
            stop: ["<|im_end|>"],
          }),
        });
        const rawBody = (await raw.json()) as { content: string; timings: Timings };
        timings.push(rawBody.timings);
        const call = parseRawCall(rawBody.content);
        if (call) tally.rawParsed += 1;
        if (call && conversation.toolNames.includes(call.name)) tally.rawWellFormed += 1;
        if (call?.name === expected.name) tally.rawRightTool += 1;
        if (call?.name === expected.name && isDeepStrictEqual(call.args, expected.args)) tally.rawExact += 1;
        else {
          allRight = false;
          if (mistakes.length < 12) {
            mistakes.push(
              `expected ${JSON.stringify(expected)}\n  got ${JSON.stringify(rawBody.content.slice(0, 200))}`,
            );
          }
        }

        const chat = await fetch(`${server.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            messages: history,
            tools: conversation.tools,
            temperature: 0,
            max_tokens: 96,
          }),
        });
        const chatBody = (await chat.json()) as {
          choices?: { message: { tool_calls?: { function: { name: string; arguments: string } }[] } }[];
        };
        const toolCall = chatBody.choices?.[0]?.message.tool_calls?.[0]?.function;
        if (toolCall && conversation.toolNames.includes(toolCall.name)) tally.chatCall += 1;
        if (toolCall?.name === expected.name) {
          tally.chatRightTool += 1;
          try {
            if (isDeepStrictEqual(JSON.parse(toolCall.arguments), expected.args)) tally.chatExact += 1;
          } catch {
            // malformed arguments
          }
        }
      }
      if (allRight) conversationsAllRight += 1;
    }
  } finally {
    await server.stop();
  }
  const percent = (value: number, total = tally.steps) => `${((100 * value) / total).toFixed(0)}%`;
  const sum = (key: keyof Timings) => timings.reduce((total, each) => total + each[key], 0);
  const tokensPerSecond = (1000 * sum("predicted_n")) / sum("predicted_ms");
  const promptTokensPerSecond = (1000 * sum("prompt_n")) / sum("prompt_ms");
  const ttft = (sum("prompt_ms") + sum("predicted_ms") / sum("predicted_n")) / timings.length;
  console.log(`held-out conversations: ${conversations.length}, assistant steps: ${tally.steps}`);
  console.log(
    `raw (no grammar): well-formed <tool_call> JSON ${percent(tally.rawParsed)}, well-formed with a known tool ${percent(tally.rawWellFormed)}, right tool ${percent(tally.rawRightTool)}, right tool and exact arguments ${percent(tally.rawExact)}`,
  );
  console.log(
    `chat (llama-server native parsing): a known tool called ${percent(tally.chatCall)}, right tool ${percent(tally.chatRightTool)}, exact arguments ${percent(tally.chatExact)}`,
  );
  console.log(
    `conversations with every step exactly right (raw, teacher-forced): ${percent(conversationsAllRight, conversations.length)}`,
  );
  console.log(
    `speed (2 threads): ${tokensPerSecond.toFixed(0)} tokens/s generation, ${promptTokensPerSecond.toFixed(0)} tokens/s prompt, mean prompt ${(sum("prompt_n") / timings.length).toFixed(0)} tokens, time to first token ${ttft.toFixed(0)} ms`,
  );
  console.log(`first mistakes:\n${mistakes.join("\n")}`);
}

await main();
