/**
 * Plumbing scenarios: does the model call tools at all, follow required steps, and recover from
 * a failing tool?
 */
import { z } from "zod";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { equals, expectCall, mentions, near, sameText } from "./checks.ts";
import { defineScenario, type EvalScenario, ScenarioCategory } from "./scenario.ts";
import { rowOf, scenarioTool, submitTool } from "./tools.ts";

const WEATHER: Record<string, { city: string; temp_c: number; conditions: string; wind_kmh: number }> = {
  LISBON: { city: "Lisbon", temp_c: 18, conditions: "light rain", wind_kmh: 22 },
  PORTO: { city: "Porto", temp_c: 15, conditions: "overcast", wind_kmh: 30 },
};

const basic2Step = defineScenario({
  id: "basic_2step",
  category: ScenarioCategory.PLUMBING,
  description: "Look up the weather, then report it: does the model call tools at all?",
  userMessage: "What's the weather in Lisbon right now? Report it to me.",
  reference: [
    { tool: "get_weather", args: { city: "Lisbon" }, thought: "I need the current weather first." },
    {
      tool: "report_weather",
      args: { city: "Lisbon", summary: "18°C with light rain, wind 22 km/h" },
      thought: "I have the data; reporting it.",
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "weather_report",
      description: "Report the current weather",
      tools: [
        scenarioTool({
          name: "get_weather",
          description: "Current weather for a city",
          parameters: z.object({ city: z.string().describe("City name") }),
          execute: ({ city }) => rowOf(WEATHER, city.toUpperCase(), "city"),
        }),
        submitTool(
          "report_weather",
          "Report the weather to the user. Call this last.",
          z.object({ city: z.string(), summary: z.string().describe("Temperature and conditions") }),
        ),
      ],
      requiredSteps: ["get_weather"],
      terminalTool: "report_weather",
      systemPrompt:
        "You are a weather assistant. Always call get_weather before answering, then call report_weather with a one-line summary.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "report_weather", { city: sameText("Lisbon"), summary: mentions("18", "rain") }),
});

const ACCOUNTS = { "AC-311": { account_id: "AC-311", owner: "Dana Whitfield", currency: "EUR" } };
const INVOICES = {
  "AC-311": {
    account_id: "AC-311",
    invoices: [
      { id: "INV-9", amount: 120.5, status: "unpaid" },
      { id: "INV-12", amount: 79.5, status: "unpaid" },
      { id: "INV-3", amount: 300, status: "paid" },
    ],
  },
};

const sequential3Step = defineScenario({
  id: "sequential_3step",
  category: ScenarioCategory.PLUMBING,
  description: "Two required lookups before the terminal call: are required steps followed?",
  userMessage: "Send account AC-311 its statement with the total amount still due.",
  reference: [
    { tool: "get_account", args: { account_id: "AC-311" }, thought: "First the account details." },
    { tool: "list_invoices", args: { account_id: "AC-311" }, needs: [], thought: "Now the invoices." },
    {
      tool: "send_statement",
      args: { account_id: "AC-311", owner: "Dana Whitfield", total_due: 200, currency: "EUR" },
      needs: [0, 1],
      thought: "Unpaid: 120.50 + 79.50 = 200.00 EUR.",
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "account_statement",
      description: "Send an account statement",
      tools: [
        scenarioTool({
          name: "get_account",
          description: "Account owner and currency",
          parameters: z.object({ account_id: z.string() }),
          execute: ({ account_id }) => rowOf(ACCOUNTS, account_id, "account"),
        }),
        scenarioTool({
          name: "list_invoices",
          description: "Every invoice of an account with its status",
          parameters: z.object({ account_id: z.string() }),
          execute: ({ account_id }) => rowOf(INVOICES, account_id, "account"),
          prerequisites: ["get_account"],
        }),
        submitTool(
          "send_statement",
          "Send the statement. total_due is the sum of unpaid invoices.",
          z.object({
            account_id: z.string(),
            owner: z.string(),
            total_due: z.number(),
            currency: z.string(),
          }),
        ),
      ],
      requiredSteps: ["get_account", "list_invoices"],
      terminalTool: "send_statement",
      systemPrompt:
        "You are a billing assistant. Look up the account, then its invoices, then send the statement.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "send_statement", {
      account_id: sameText("AC-311"),
      owner: mentions("Whitfield"),
      total_due: near(200),
      currency: sameText("EUR"),
    }),
});

const REPORTS = {
  "R-88": { report_id: "R-88", quarter: "Q3", revenue_musd: 14.2, growth_pct: 6.5, top_region: "Nordics" },
};

/** A report service that times out on its first call of the run. */
function flakyReportTool(failures: { left: number }) {
  return scenarioTool({
    name: "fetch_report",
    description: "Fetch a quarterly report by id",
    parameters: z.object({ report_id: z.string(), format: z.enum(["json", "csv"]) }),
    execute: ({ report_id }) => {
      if (failures.left > 0) {
        failures.left -= 1;
        const error = new Error("report service busy (503); the same call will succeed if retried");
        error.name = "UpstreamTimeout";
        throw error;
      }
      return rowOf(REPORTS, report_id, "report");
    },
  });
}

const errorRecovery = defineScenario({
  id: "error_recovery",
  category: ScenarioCategory.PLUMBING,
  description: "The first fetch fails with a transient error: does the model retry instead of giving up?",
  userMessage: "Publish a one-line headline for report R-88 (fetch it as json).",
  idealIterations: 3,
  reference: [
    { tool: "fetch_report", args: { report_id: "R-88", format: "json" }, thought: "Fetching the report." },
    {
      tool: "publish_summary",
      args: { report_id: "R-88", headline: "Q3 revenue $14.2M, up 6.5%, led by the Nordics" },
      thought: "Writing the headline from the report.",
    },
  ],
  build: () => {
    const failures = { left: 1 };
    return {
      workflow: defineWorkflow({
        name: "report_headline",
        description: "Publish a report headline",
        tools: [
          flakyReportTool(failures),
          submitTool(
            "publish_summary",
            "Publish the headline of a report",
            z.object({ report_id: z.string(), headline: z.string() }),
          ),
        ],
        requiredSteps: ["fetch_report"],
        terminalTool: "publish_summary",
        systemPrompt:
          "You publish report headlines. Fetch the report, then call publish_summary. If a tool fails with a transient error, retry it.",
      }),
    };
  },
  checkAnswer: (call) =>
    expectCall(call, "publish_summary", { report_id: equals("R-88"), headline: mentions("14.2", "6.5") }),
});

/** Plumbing scenarios. */
export const PLUMBING_SCENARIOS: readonly EvalScenario[] = [basic2Step, sequential3Step, errorRecovery];

export { ACCOUNTS, flakyReportTool, INVOICES, REPORTS, WEATHER };
