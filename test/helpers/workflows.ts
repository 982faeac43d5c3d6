import { z } from "zod";
import type { Message } from "../../src/core/messages.ts";
import { defineTool } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { WorkflowRunner, type WorkflowRunnerOptions } from "../../src/loop/runner.ts";
import { ScriptedClient } from "../../src/testing/index.ts";

/** A compactor that never compacts, for loop tests that are not about compaction. */
export const passthrough = {
  calls: [] as { stepIndex: number | undefined; stepHint: string | undefined }[],
  maybeCompact(messages: Message[], stepIndex?: number, stepHint?: string): Message[] {
    this.calls.push({ stepIndex, stepHint });
    return messages;
  },
};

export function createPassthrough() {
  const calls: { length: number; stepIndex: number | undefined; stepHint: string | undefined }[] = [];
  return {
    calls,
    maybeCompact(messages: Message[], stepIndex?: number, stepHint?: string): Message[] {
      calls.push({ length: messages.length, stepIndex, stepHint });
      return messages;
    },
  };
}

/** get_weather (required) → report_weather (terminal). */
export function weatherWorkflow(options: { failWeather?: number; weatherError?: () => Error } = {}) {
  let failures = options.failWeather ?? 0;
  const executed: string[] = [];
  const getWeather = defineTool({
    name: "get_weather",
    description: "Current weather for a city",
    parameters: z.object({ city: z.string() }),
    execute: ({ city }) => {
      executed.push(`get_weather:${city}`);
      if (failures > 0) {
        failures -= 1;
        throw options.weatherError ? options.weatherError() : new TypeError("weather service unavailable");
      }
      return `22°C and sunny in ${city}`;
    },
  });
  const report = defineTool({
    name: "report_weather",
    description: "Report the weather to the user",
    parameters: z.object({ city: z.string(), weather: z.string() }),
    execute: ({ city, weather }) => {
      executed.push(`report_weather:${city}`);
      return { reported: `${city}: ${weather}` };
    },
  });
  const workflow = defineWorkflow({
    name: "weather",
    description: "Look up the weather and report it",
    tools: [getWeather, report],
    requiredSteps: ["get_weather"],
    terminalTool: "report_weather",
    systemPrompt: "You are a weather assistant for {user}.",
  });
  return { workflow, executed };
}

/** The error a promise rejects with (fails the test if it resolves), typed loosely for field checks. */
// biome-ignore lint/suspicious/noExplicitAny: tests inspect the fields of whichever typed error arrives
export async function rejectionOf(promise: Promise<unknown>): Promise<any> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

/** A runner over a ScriptedClient playing `script`, with a passthrough compactor; `messages` hears onMessage. */
export function scriptedRunner(
  script: ConstructorParameters<typeof ScriptedClient>[0],
  options: Partial<WorkflowRunnerOptions> = {},
) {
  const client = new ScriptedClient(script);
  const messages: Message[] = [];
  const runner = new WorkflowRunner({
    client,
    contextManager: createPassthrough(),
    onMessage: (message) => messages.push(message),
    ...options,
  });
  return { client, runner, messages };
}
