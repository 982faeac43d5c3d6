import { describe, expect, it } from "vitest";
import { type Message, MessageType } from "../../src/core/messages.ts";
import { isSameCall, repeatedCallNote } from "../../src/guardrails/repeated-call.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient, toolCall } from "../../src/testing/index.ts";
import { createPassthrough, weatherWorkflow } from "../helpers/workflows.ts";

const rules = { terminalTools: ["report_weather"] };
const paris = { tool: "get_weather", args: { city: "Paris" } };

describe("repeatedCallNote", () => {
  it("compares tool and arguments, key order ignored", () => {
    expect(
      isSameCall(
        { tool: "f", args: { a: 1, b: [1, { c: 2, d: 3 }] } },
        { tool: "f", args: { b: [1, { d: 3, c: 2 }], a: 1 } },
      ),
    ).toBe(true);
    expect(isSameCall({ tool: "f", args: { a: 1 } }, { tool: "f", args: { a: 2 } })).toBe(false);
    expect(isSameCall({ tool: "f", args: {} }, { tool: "g", args: {} })).toBe(false);
  });

  it("names the terminal tool when no required step is pending", () => {
    const note = repeatedCallNote(paris, [paris], rules, []);
    expect(note).toContain("[RepeatedCall]");
    expect(note).toContain("'report_weather'");
    expect(note).toContain("to finish");
  });

  it("names the pending required steps first", () => {
    expect(repeatedCallNote(paris, [paris], rules, ["get_forecast"])).toContain("'get_forecast'");
  });

  it("is silent for a new call, other arguments, and terminal tools", () => {
    expect(repeatedCallNote(paris, [], rules, [])).toBeNull();
    expect(repeatedCallNote(paris, [{ tool: "get_weather", args: { city: "Lyon" } }], rules, [])).toBeNull();
    const report = { tool: "report_weather", args: { city: "Paris" } };
    expect(repeatedCallNote(report, [report], rules, [])).toBeNull();
  });
});

describe("the loop notes a repeated call on its result", () => {
  function run(
    script: ConstructorParameters<typeof ScriptedClient>[0],
    options: { failWeather?: number; stepEnforcement?: boolean } = {},
  ) {
    const { workflow, executed } = weatherWorkflow({ failWeather: options.failWeather ?? 0 });
    const client = new ScriptedClient(script);
    const messages: Message[] = [];
    const runner = new WorkflowRunner({
      client,
      contextManager: createPassthrough(),
      onMessage: (message) => messages.push(message),
      ...(options.stepEnforcement !== undefined && { stepEnforcement: options.stepEnforcement }),
    });
    const results = () =>
      messages
        .filter((message) => message.metadata.type === MessageType.TOOL_RESULT)
        .map((message) => message.content);
    return {
      promise: runner.run(workflow, "Weather in Paris?", { promptVars: { user: "Ada" } }),
      executed,
      results,
      client,
    };
  }

  it("runs the repeated call and appends a note naming the terminal tool", async () => {
    const { promise, executed, results, client } = run([
      toolCall("get_weather", { city: "Paris" }),
      toolCall("get_weather", { city: "Paris" }),
      toolCall("report_weather", { city: "Paris", weather: "sunny" }),
    ]);
    await expect(promise).resolves.toEqual({ reported: "Paris: sunny" });
    client.assertDone();
    expect(executed).toEqual(["get_weather:Paris", "get_weather:Paris", "report_weather:Paris"]);
    const [first, second] = results();
    expect(first).not.toContain("[RepeatedCall]");
    expect(second).toMatch(/^22°C and sunny in Paris\n\n\[RepeatedCall\] .*'report_weather'/s);
    // The model sees the note in its next request, whose tool list leaves the repeated tool out.
    expect(JSON.stringify(client.calls[2]?.messages)).toContain("[RepeatedCall]");
    expect(client.calls.map((call) => call.tools.map((tool) => tool.name))).toEqual([
      ["get_weather", "report_weather"],
      ["get_weather", "report_weather"],
      ["report_weather"],
    ]);
  });

  it("says nothing when the previous call failed (a retry is not a repeat), or with step enforcement off", async () => {
    const retried = run(
      [
        toolCall("get_weather", { city: "Paris" }),
        toolCall("get_weather", { city: "Paris" }),
        toolCall("report_weather", { city: "Paris", weather: "sunny" }),
      ],
      { failWeather: 1 },
    );
    await retried.promise;
    expect(retried.results().some((content) => content.includes("[RepeatedCall]"))).toBe(false);
    const ablated = run(
      [
        toolCall("get_weather", { city: "Paris" }),
        toolCall("get_weather", { city: "Paris" }),
        toolCall("report_weather", { city: "Paris", weather: "sunny" }),
      ],
      { stepEnforcement: false },
    );
    await ablated.promise;
    expect(ablated.results().some((content) => content.includes("[RepeatedCall]"))).toBe(false);
  });
});
