/**
 * Loop behaviour that the decision core added or fixed: malformed tool arguments on the tool
 * channel (with their budget), a cancelled batch keeping the calls that ran, and
 * ToolExecutionError carrying the error the tool threw.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { ToolExecutionError, WorkflowCancelledError } from "../../src/core/errors.ts";
import { type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import { defineTool } from "../../src/core/tools.ts";
import type { LLMResponse } from "../../src/core/types.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, rejectionOf, weatherWorkflow } from "../helpers/workflows.ts";

const vars = { promptVars: { user: "Ada" } };
const malformed = (
  tool: string,
  reason = 'invalid JSON: Unexpected end; received {"city": "Par',
): LLMResponse => [{ tool, args: {}, argumentsError: reason }];
const finish = () => [
  toolCall("get_weather", { city: "Paris" }),
  toolCall("report_weather", { city: "Paris", weather: "sunny" }),
];

function runnerFor(script: ConstructorParameters<typeof ScriptedClient>[0], maxToolErrors?: number) {
  const messages: Message[] = [];
  const client = new ScriptedClient(script);
  const runner = new WorkflowRunner({
    client,
    contextManager: createPassthrough(),
    onMessage: (message) => messages.push(message),
    ...(maxToolErrors !== undefined && { maxToolErrors }),
  });
  return { runner, messages, client };
}

describe("malformed tool arguments", () => {
  it("are answered on the tool channel, not with a user-channel retry", async () => {
    const { workflow, executed } = weatherWorkflow();
    const { runner, messages } = runnerFor([malformed("get_weather"), ...finish()]);
    await expect(runner.run(workflow, "Weather?", vars)).resolves.toEqual({ reported: "Paris: sunny" });

    const types = messages.map((message) => message.metadata.type);
    expect(types).not.toContain(MessageType.RETRY_NUDGE);
    expect(types).not.toContain(MessageType.TEXT_RESPONSE);
    const [call, reply] = messages.slice(2, 4);
    expect(call?.toolCalls?.[0]).toMatchObject({ name: "get_weather", args: {} });
    expect(reply).toMatchObject({ role: MessageRole.TOOL, toolCallId: call?.toolCalls?.[0]?.callId });
    expect(reply?.content).toMatch(
      /^\[ToolError\] ToolArgumentError: the arguments of 'get_weather' are not a JSON object/,
    );
    expect(reply?.content).toContain('received {"city": "Par');
    // The malformed call never ran.
    expect(executed).toEqual(["get_weather:Paris", "report_weather:Paris"]);
  });

  it("answer every call of the batch: the well-formed ones are not run", async () => {
    const { workflow, executed } = weatherWorkflow();
    const batch: LLMResponse = [
      { tool: "get_weather", args: { city: "Oslo" } },
      { tool: "get_weather", args: {}, argumentsError: 'not a JSON object; received ["Paris"]' },
    ];
    const { runner, messages } = runnerFor([batch, ...finish()]);
    await runner.run(workflow, "Weather?", vars);
    const replies = messages.filter((message) => message.role === MessageRole.TOOL).slice(0, 2);
    expect(replies[0]?.content).toMatch(/^\[ToolError\] \[NotRun\] 'get_weather' was not run/);
    expect(replies[1]?.content).toContain("ToolArgumentError");
    expect(executed).not.toContain("get_weather:Oslo");
  });

  it("drain the tool-error budget: past maxToolErrors the run fails with ToolExecutionError", async () => {
    const { workflow } = weatherWorkflow();
    const { runner, messages } = runnerFor([malformed("get_weather"), malformed("get_weather")], 1);
    const error = await rejectionOf(runner.run(workflow, "Weather?", vars));
    expect(error).toBeInstanceOf(ToolExecutionError);
    expect((error as ToolExecutionError).toolName).toBe("get_weather");
    expect(((error as ToolExecutionError).cause as Error).name).toBe("ToolArgumentError");
    // The exhausting batch is still answered in the history.
    expect(messages.at(-1)?.content).toContain("ToolArgumentError");
  });

  it("share the budget with failing tools", async () => {
    const { workflow } = weatherWorkflow({ failWeather: 1 });
    const { runner } = runnerFor([malformed("get_weather"), toolCall("get_weather", { city: "Oslo" })], 1);
    const error = await rejectionOf(runner.run(workflow, "Weather?", vars));
    expect(error).toBeInstanceOf(ToolExecutionError);
    expect(((error as ToolExecutionError).cause as Error).message).toBe("weather service unavailable");
  });

  it("arrive as such from a real OpenAI-compatible server (native tool_calls with broken JSON)", async () => {
    const answers = [
      { tool_calls: [{ name: "get_weather", arguments: '{"city": "Par' }] },
      { tool_calls: [{ name: "get_weather", arguments: '{"city": "Paris"}' }] },
      { tool_calls: [{ name: "report_weather", arguments: '{"city": "Paris", "weather": "sunny"}' }] },
    ];
    const server = await serveChat(answers);
    try {
      const { workflow } = weatherWorkflow();
      const messages: Message[] = [];
      const runner = new WorkflowRunner({
        client: new OpenAICompatibleClient({ baseUrl: server.url, model: "m", mode: "native" }),
        contextManager: createPassthrough(),
        onMessage: (message) => messages.push(message),
      });
      await expect(runner.run(workflow, "Weather?", vars)).resolves.toEqual({ reported: "Paris: sunny" });
      const reply = messages.find((message) => message.role === MessageRole.TOOL);
      expect(reply?.content).toContain("invalid JSON");
      // The model saw its broken call answered on the tool channel in the next request.
      const second = server.bodies[1] as { messages: { role: string; content: string }[] };
      expect(second.messages.at(-1)).toMatchObject({ role: "tool" });
      expect(second.messages.at(-1)?.content).toContain("ToolArgumentError");
    } finally {
      await server.close();
    }
  });
});

describe("cancellation mid-batch", () => {
  // cancelGraceMs 0: the call in flight is not waited for (cancel-grace.test.ts covers the wait).
  it("keeps the results and steps of the calls that ran; the rest are answered [Cancelled]", async () => {
    const controller = new AbortController();
    const ran: string[] = [];
    const lookup = defineTool({
      name: "lookup",
      description: "Look a key up",
      parameters: z.object({ key: z.string() }),
      execute: ({ key }) => {
        ran.push(key);
        return `value of ${key}`;
      },
    });
    const slow = defineTool({
      name: "slow",
      description: "Never returns before the run is cancelled",
      parameters: z.object({}),
      execute: () =>
        new Promise((resolve) => {
          controller.abort();
          setTimeout(() => resolve("late"), 50);
        }),
    });
    const done = defineTool({
      name: "done",
      description: "Finish",
      parameters: z.object({}),
      execute: () => "ok",
    });
    const workflow = defineWorkflow({
      name: "batch",
      description: "A batch cancelled halfway",
      tools: [lookup, slow, done],
      requiredSteps: [],
      terminalTool: "done",
      systemPrompt: "Go.",
    });
    const batch: LLMResponse = [
      { tool: "lookup", args: { key: "a" } },
      { tool: "slow", args: {} },
    ];
    const runner = new WorkflowRunner({
      client: new ScriptedClient([batch]),
      contextManager: createPassthrough(),
      cancelGraceMs: 0,
    });
    const error = await rejectionOf(runner.run(workflow, "Go", { signal: controller.signal }));
    expect(error).toBeInstanceOf(WorkflowCancelledError);
    const cancelled = error as WorkflowCancelledError;
    expect(ran).toEqual(["a"]);
    expect(cancelled.completedSteps).toEqual(["lookup"]);
    const results = cancelled.messages.filter((message) => message.metadata.type === MessageType.TOOL_RESULT);
    expect(results.map((message) => message.content)).toEqual([
      "value of a",
      "[Cancelled] The run was cancelled before this tool returned.",
    ]);
  });
});

describe("ToolExecutionError.cause", () => {
  it("is the very error the tool threw", async () => {
    class WeatherDown extends Error {
      readonly code = "E_DOWN";
    }
    const thrown: Error[] = [];
    const { workflow } = weatherWorkflow({
      failWeather: 3,
      weatherError: () => {
        const error = new WeatherDown("down");
        thrown.push(error);
        return error;
      },
    });
    const { runner } = runnerFor([1, 2, 3].map(() => toolCall("get_weather", { city: "Paris" })));
    const error = (await rejectionOf(runner.run(workflow, "Weather?", vars))) as ToolExecutionError;
    expect(error).toBeInstanceOf(ToolExecutionError);
    expect(error.cause).toBe(thrown.at(-1));
    expect((error.cause as WeatherDown).code).toBe("E_DOWN");
  });
});

/** A local OpenAI-compatible chat server answering `answers` in order; records request bodies. */
async function serveChat(answers: { tool_calls: { name: string; arguments: string }[] }[]) {
  const bodies: unknown[] = [];
  let next = 0;
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      bodies.push(JSON.parse(body));
      const answer = answers[next++] ?? answers.at(-1);
      response.setHeader("content-type", "application/json");
      response.end(
        JSON.stringify({
          id: "c",
          object: "chat.completion",
          created: 0,
          model: "m",
          choices: [
            {
              index: 0,
              finish_reason: "tool_calls",
              message: {
                role: "assistant",
                content: null,
                tool_calls: answer?.tool_calls.map((call, index) => ({
                  id: `call_${index}`,
                  type: "function",
                  function: call,
                })),
              },
            },
          ],
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
