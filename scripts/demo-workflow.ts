/**
 * The demo's workflow (get_weather, required → report_weather, terminal) and its question, shared
 * by `npm run demo` and the backends benchmark's forge-tiny rows.
 */
import { z } from "zod";
import { defineTool, defineWorkflow, type Workflow } from "../src/index.ts";

/** What the demo asks. */
export const DEMO_QUESTION = "What's the weather in Paris?";

/** The demo's weather workflow, with tools that answer from the city name alone. */
export function weatherWorkflow(): Workflow {
  const getWeather = defineTool({
    name: "get_weather",
    description: "Current weather for a city",
    parameters: z.object({ city: z.string() }),
    execute: ({ city }) =>
      `${12 + (city.length % 15)}°C and ${city.length % 2 === 0 ? "sunny" : "cloudy"} in ${city}`,
  });
  const reportWeather = defineTool({
    name: "report_weather",
    description: "Report the weather to the user. Call it last, once you know the weather.",
    parameters: z.object({ city: z.string(), report: z.string() }),
    execute: ({ city, report }) => ({ city, report }),
  });
  return defineWorkflow({
    name: "weather",
    description: "Look up the weather for a city and report it",
    tools: [getWeather, reportWeather],
    requiredSteps: ["get_weather"],
    terminalTool: "report_weather",
    systemPrompt:
      "You are a weather assistant. First call get_weather for the city the user asks about, then call report_weather with a one-sentence report.",
  });
}
