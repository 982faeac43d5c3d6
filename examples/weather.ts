/**
 * The weather workflow several examples share: `get_weather` must run before `report_weather`,
 * whose result ends the run. `weatherScript` is what a scripted model answers for one city.
 */
import { defineTool, defineWorkflow } from "forge-guardrails";
import { type ScriptStep, toolCall } from "forge-guardrails/testing";
import { z } from "zod";

export const getWeather = defineTool({
  name: "get_weather",
  description: "Current weather for a city",
  parameters: z.object({ city: z.string() }),
  execute: ({ city }) => `22°C and sunny in ${city}`,
});

export const reportWeather = defineTool({
  name: "report_weather",
  description: "Tell the user the weather",
  parameters: z.object({ city: z.string(), weather: z.string() }),
  execute: ({ city, weather }) => `${city}: ${weather}`,
});

export const weather = defineWorkflow({
  name: "weather",
  description: "Look up the weather and report it",
  tools: [getWeather, reportWeather],
  requiredSteps: ["get_weather"],
  terminalTool: "report_weather",
  systemPrompt: "You are a weather assistant. Look the weather up, then report it.",
});

/** A scripted model's answers for one city: a premature report (nudged), the lookup, the report. */
export function weatherScript(city: string): ScriptStep[] {
  return [
    toolCall("report_weather", { city, weather: "?" }),
    toolCall("get_weather", { city }),
    toolCall("report_weather", { city, weather: "22°C and sunny" }),
  ];
}
