/**
 * The user's repairToolCall hook and the forced tool choice on a retry, driven with ScriptedClient.
 */
import { describe, expect, it } from "vitest";
import { ToolCallRepairError } from "../../src/core/errors.ts";
import { type Message, MessageType } from "../../src/core/messages.ts";
import type { ToolCallRepairInput } from "../../src/guardrails/repair.ts";
import { runInference } from "../../src/loop/inference.ts";
import { ScriptedClient, text, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, rejectionOf, scriptedRunner, weatherWorkflow } from "../helpers/workflows.ts";

const vars = { promptVars: { user: "Ada" } };
const prose = "I think the weather in Paris is probably nice.";

const setup = scriptedRunner;

const nudges = (messages: Message[]) =>
  messages.filter((message) => message.metadata.type === MessageType.RETRY_NUDGE).length;

describe("forceToolChoiceOnRetry", () => {
  it("asks for a required tool call on the retry after a prose answer, and only then", async () => {
    const { workflow } = weatherWorkflow();
    const { client, runner } = setup([
      toolCall("get_weather", { city: "Paris" }),
      text(prose),
      toolCall("report_weather", { city: "Paris", weather: "sunny" }),
    ]);
    await expect(runner.run(workflow, "Weather in Paris?", vars)).resolves.toEqual({
      reported: "Paris: sunny",
    });
    client.assertDone();
    expect(client.calls.map((call) => call.toolChoice)).toEqual([undefined, undefined, "required"]);
  });

  it("forces again on each retry in a row, and stops once a call came", async () => {
    const { workflow } = weatherWorkflow();
    const { client, runner } = setup([
      text(prose),
      text(prose),
      toolCall("get_weather", { city: "Paris" }),
      toolCall("report_weather", { city: "Paris", weather: "sunny" }),
    ]);
    await runner.run(workflow, "Weather in Paris?", vars);
    expect(client.calls.map((call) => call.toolChoice)).toEqual([
      undefined,
      "required",
      "required",
      undefined,
    ]);
  });

  it("leaves the choice to the model when turned off", async () => {
    const { workflow } = weatherWorkflow();
    const { client, runner } = setup(
      [
        text(prose),
        toolCall("get_weather", { city: "Paris" }),
        toolCall("report_weather", { city: "Paris", weather: "sunny" }),
      ],
      { forceToolChoiceOnRetry: false },
    );
    await runner.run(workflow, "Weather in Paris?", vars);
    expect(client.calls.map((call) => call.toolChoice)).toEqual([undefined, undefined, undefined]);
  });

  it("does not force after an unknown tool (the tool channel answers it, not a prose retry)", async () => {
    const { workflow } = weatherWorkflow();
    const { client, runner } = setup([
      toolCall("get_wether", { city: "Paris" }),
      toolCall("get_weather", { city: "Paris" }),
      toolCall("report_weather", { city: "Paris", weather: "sunny" }),
    ]);
    await runner.run(workflow, "Weather in Paris?", vars);
    expect(client.calls.map((call) => call.toolChoice)).toEqual([undefined, undefined, undefined]);
  });

  it("forces the retry of runInference (the proxy's front half) too", async () => {
    const { workflow } = weatherWorkflow();
    const client = new ScriptedClient([text(prose), toolCall("get_weather", { city: "Paris" })]);
    const result = await runInference({
      client,
      contextManager: createPassthrough(),
      messages: [],
      tools: Object.values(workflow.tools).map((tool) => tool.spec),
    });
    expect(result.toolCalls).toEqual([{ tool: "get_weather", args: { city: "Paris" } }]);
    expect(client.calls.map((call) => call.toolChoice)).toEqual([undefined, "required"]);
  });
});

describe("repairToolCall", () => {
  it("turns a would-be nudge into an executed call", async () => {
    const { workflow, executed } = weatherWorkflow();
    const inputs: ToolCallRepairInput[] = [];
    const { client, runner, messages } = setup(
      [text(prose), toolCall("report_weather", { city: "Paris", weather: "sunny" })],
      {
        repairToolCall: (input) => {
          inputs.push(input);
          return input.text.includes("Paris") ? [{ tool: "get_weather", args: { city: "Paris" } }] : null;
        },
      },
    );
    await expect(runner.run(workflow, "Weather in Paris?", vars)).resolves.toEqual({
      reported: "Paris: sunny",
    });
    client.assertDone();
    expect(executed).toEqual(["get_weather:Paris", "report_weather:Paris"]);
    expect(nudges(messages)).toBe(0);
    expect(inputs).toHaveLength(1);
    expect(inputs[0]).toMatchObject({
      text: prose,
      failedCall: null,
      calls: [],
      error: { reason: "no_tool_call" },
    });
    expect(inputs[0]?.tools.map((tool) => tool.name)).toEqual(["get_weather", "report_weather"]);
  });

  it("leaves the nudge when the hook returns null", async () => {
    const { workflow } = weatherWorkflow();
    let asked = 0;
    const { client, runner, messages } = setup(
      [
        text(prose),
        toolCall("get_weather", { city: "Paris" }),
        toolCall("report_weather", { city: "Paris", weather: "sunny" }),
      ],
      {
        repairToolCall: () => {
          asked += 1;
          return null;
        },
      },
    );
    await runner.run(workflow, "Weather in Paris?", vars);
    client.assertDone();
    expect(asked).toBe(1);
    expect(nudges(messages)).toBe(1);
    // The nudge's retry is still forced.
    expect(client.calls[1]?.toolChoice).toBe("required");
  });

  it("repairs an unknown tool name and arguments that do not fit the schema", async () => {
    const { workflow, executed } = weatherWorkflow();
    const inputs: ToolCallRepairInput[] = [];
    const { runner, messages } = setup(
      [toolCall("get_wether", { city: "Paris" }), toolCall("report_weather", { city: "Paris", weather: 22 })],
      {
        repairToolCall: async (input) => {
          inputs.push(input);
          const call = input.failedCall;
          if (call === null) return null;
          if (input.error.reason === "unknown_tool") return [{ ...call, tool: "get_weather" }];
          return [{ ...call, args: { ...call.args, weather: String(call.args.weather) } }];
        },
      },
    );
    await expect(runner.run(workflow, "Weather in Paris?", vars)).resolves.toEqual({
      reported: "Paris: 22",
    });
    expect(executed).toEqual(["get_weather:Paris", "report_weather:Paris"]);
    expect(inputs.map((input) => input.error.reason)).toEqual(["unknown_tool", "invalid_arguments"]);
    expect(inputs[1]?.error.message).toContain("weather");
    expect(messages.some((message) => message.content.startsWith("[UnknownTool]"))).toBe(false);
  });

  it("is not asked about a valid batch, nor about text rescue reads", async () => {
    const { workflow } = weatherWorkflow();
    let asked = 0;
    const { runner } = setup(
      [text('[get_weather(city="Paris")]'), toolCall("report_weather", { city: "Paris", weather: "sunny" })],
      {
        repairToolCall: () => {
          asked += 1;
          return null;
        },
      },
    );
    await runner.run(workflow, "Weather in Paris?", vars);
    expect(asked).toBe(0);
  });

  it("puts its calls through the same validation: an unknown tool is still rejected", async () => {
    const { workflow } = weatherWorkflow();
    const { runner, messages } = setup(
      [
        text(prose),
        toolCall("get_weather", { city: "Paris" }),
        toolCall("report_weather", { city: "Paris", weather: "sunny" }),
      ],
      {
        repairToolCall: ({ failedCall }) =>
          failedCall === null ? [{ tool: "no_such_tool", args: {} }] : null,
      },
    );
    await runner.run(workflow, "Weather in Paris?", vars);
    const rejection = messages.find((message) => message.content.startsWith("[UnknownTool]"));
    expect(rejection?.content).toContain("no_such_tool");
  });

  it("fails the run with ToolCallRepairError when the hook throws", async () => {
    const { workflow } = weatherWorkflow();
    const broken = new RangeError("repair service down");
    const { runner } = setup([text(prose)], {
      repairToolCall: () => {
        throw broken;
      },
    });
    const error = await rejectionOf(runner.run(workflow, "Weather in Paris?", vars));
    expect(error).toBeInstanceOf(ToolCallRepairError);
    expect(error.name).toBe("ToolCallRepairError");
    expect(error.cause).toBe(broken);
    expect(error.rawResponse).toBe(prose);
    expect(error.message).toContain("repair service down");
  });

  it("fails the run with ToolCallRepairError when the hook returns something else than calls", async () => {
    const { workflow } = weatherWorkflow();
    const { runner } = setup([text(prose)], {
      // biome-ignore lint/suspicious/noExplicitAny: a hook written in plain JS that returns the wrong shape
      repairToolCall: () => [{ name: "get_weather" }] as any,
    });
    await expect(runner.run(workflow, "Weather in Paris?", vars)).rejects.toBeInstanceOf(ToolCallRepairError);
  });
});
