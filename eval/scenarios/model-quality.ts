/**
 * Model-quality scenarios: tool selection among distractors, argument fidelity across results,
 * sequential reasoning with data dependencies, conditional routing, data-gap recovery, and
 * relevance (declining what the tools cannot do).
 */
import { z } from "zod";
import type { ToolDef } from "../../src/core/tools.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { avoids, equals, expectCall, mentions, near, sameText } from "./checks.ts";
import { defineScenario, type EvalScenario, ScenarioCategory } from "./scenario.ts";
import { NotFoundError, rowOf, scenarioTool, submitTool } from "./tools.ts";

/** Tools that look plausible but do not serve the task. */
function distractors(): ToolDef[] {
  const unused = (name: string, description: string, parameters: z.ZodObject) =>
    scenarioTool({ name, description, parameters, execute: () => ({ status: "ok", note: `${name} done` }) });
  return [
    unused(
      "search_flights",
      "Search flights between two airports",
      z.object({ from: z.string(), to: z.string() }),
    ),
    unused("book_hotel", "Book a hotel room", z.object({ city: z.string(), nights: z.number() })),
    unused("get_city_weather", "Weather forecast for a city", z.object({ city: z.string() })),
    unused("cancel_booking", "Cancel a booking by reference", z.object({ booking_ref: z.string() })),
    unused(
      "convert_currency",
      "Convert an amount between currencies",
      z.object({ amount: z.number(), from: z.string(), to: z.string() }),
    ),
  ];
}

const FLIGHTS = {
  TP1234: { flight: "TP1234", status: "delayed", delay_minutes: 45, new_departure: "14:25" },
};
const GATES = { TP1234: { flight: "TP1234", terminal: "1", gate: "B12", boarding: "13:55" } };

const toolSelection = defineScenario({
  id: "tool_selection",
  category: ScenarioCategory.MODEL_QUALITY,
  description: "Route to the 2 right tools among 8 (5 distractors) before notifying the passenger.",
  userMessage: "Flight TP1234 departs today. Check its status and gate, then notify the passenger.",
  reference: [
    { tool: "get_flight_status", args: { flight_number: "TP1234" }, thought: "Status first." },
    { tool: "get_gate_info", args: { flight_number: "TP1234" }, needs: [], thought: "Now the gate." },
    {
      tool: "notify_passenger",
      args: {
        flight_number: "TP1234",
        message: "TP1234 is delayed 45 minutes, departing 14:25 from gate B12.",
      },
      needs: [0, 1],
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "passenger_update",
      description: "Notify a passenger about their flight",
      tools: [
        ...distractors(),
        scenarioTool({
          name: "get_flight_status",
          description: "Live status of a flight by number",
          parameters: z.object({ flight_number: z.string() }),
          execute: ({ flight_number }) => rowOf(FLIGHTS, flight_number, "flight"),
        }),
        scenarioTool({
          name: "get_gate_info",
          description: "Terminal, gate and boarding time of a flight",
          parameters: z.object({ flight_number: z.string() }),
          execute: ({ flight_number }) => rowOf(GATES, flight_number, "flight"),
        }),
        submitTool(
          "notify_passenger",
          "Send the passenger a message about their flight",
          z.object({ flight_number: z.string(), message: z.string() }),
        ),
      ],
      requiredSteps: ["get_flight_status", "get_gate_info"],
      terminalTool: "notify_passenger",
      systemPrompt: "You are an airline assistant. Use only the tools the task needs.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "notify_passenger", {
      flight_number: sameText("TP1234"),
      message: mentions("45", "B12"),
    }),
});

const CUSTOMERS = {
  "m.ortega@example.net": { customer_id: "CUST-4817", name: "Marisol Ortega", tier: "gold" },
};
const ORDERS = {
  "CUST-4817": {
    customer_id: "CUST-4817",
    orders: [
      {
        order_id: "ORD-55810",
        total: 89.9,
        placed: "2024-05-02",
        item: "wireless earbuds",
        status: "returned",
      },
      { order_id: "ORD-55102", total: 15, placed: "2024-03-11", item: "phone case", status: "delivered" },
    ],
  },
};

const argumentFidelity = defineScenario({
  id: "argument_fidelity",
  category: ScenarioCategory.MODEL_QUALITY,
  description: "Carry ids and amounts from results into later calls exactly (CUST-4817, ORD-55810, 89.90).",
  userMessage: "The customer m.ortega@example.net returned their earbuds. Refund that order in full.",
  reference: [
    { tool: "find_customer", args: { email: "m.ortega@example.net" } },
    { tool: "get_orders", args: { customer_id: "CUST-4817" } },
    { tool: "refund_order", args: { customer_id: "CUST-4817", order_id: "ORD-55810", amount: 89.9 } },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "refund",
      description: "Refund a returned order",
      tools: [
        scenarioTool({
          name: "find_customer",
          description: "Find a customer by email",
          parameters: z.object({ email: z.string() }),
          execute: ({ email }) => rowOf(CUSTOMERS, email.toLowerCase(), "customer with email"),
        }),
        scenarioTool({
          name: "get_orders",
          description: "Orders of a customer by customer_id",
          parameters: z.object({ customer_id: z.string() }),
          execute: ({ customer_id }) => rowOf(ORDERS, customer_id, "customer"),
        }),
        submitTool(
          "refund_order",
          "Refund an order",
          z.object({ customer_id: z.string(), order_id: z.string(), amount: z.number() }),
        ),
      ],
      requiredSteps: ["find_customer", "get_orders"],
      terminalTool: "refund_order",
      systemPrompt: "You are a support agent. Use exact ids from tool results.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "refund_order", {
      customer_id: equals("CUST-4817"),
      order_id: equals("ORD-55810"),
      amount: near(89.9),
    }),
});

const PEOPLE = {
  "PRIYA RAMAN": { employee_id: "E-2231", name: "Priya Raman", manager_id: "E-1009" },
};
const EMPLOYEES = {
  "E-1009": {
    employee_id: "E-1009",
    name: "Tomas Okafor",
    department_id: "D-40",
    title: "Engineering Manager",
  },
  "E-2231": { employee_id: "E-2231", name: "Priya Raman", department_id: "D-40", title: "Engineer" },
};
const DEPARTMENTS = {
  "D-40": { department_id: "D-40", name: "Platform Engineering", budget_code: "PE-7731" },
};

const sequentialReasoning = defineScenario({
  id: "sequential_reasoning",
  category: ScenarioCategory.MODEL_QUALITY,
  description: "A 4-step chain where each call needs the previous result (employee → manager → department).",
  userMessage:
    "File an expense approval for Priya Raman, routed to her manager, on her department's budget code.",
  reference: [
    { tool: "find_employee", args: { name: "Priya Raman" } },
    { tool: "get_employee", args: { employee_id: "E-1009" }, thought: "Her manager is E-1009." },
    { tool: "get_department", args: { department_id: "D-40" } },
    {
      tool: "file_expense_approval",
      args: { employee_id: "E-2231", approver_name: "Tomas Okafor", budget_code: "PE-7731" },
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "expense_approval",
      description: "Route an expense approval",
      tools: [
        scenarioTool({
          name: "find_employee",
          description: "Find an employee by full name",
          parameters: z.object({ name: z.string() }),
          execute: ({ name }) => rowOf(PEOPLE, name.toUpperCase(), "employee named"),
        }),
        scenarioTool({
          name: "get_employee",
          description: "An employee by employee_id",
          parameters: z.object({ employee_id: z.string() }),
          execute: ({ employee_id }) => rowOf(EMPLOYEES, employee_id, "employee"),
        }),
        scenarioTool({
          name: "get_department",
          description: "A department by department_id, with its budget code",
          parameters: z.object({ department_id: z.string() }),
          execute: ({ department_id }) => rowOf(DEPARTMENTS, department_id, "department"),
        }),
        submitTool(
          "file_expense_approval",
          "File the approval request",
          z.object({ employee_id: z.string(), approver_name: z.string(), budget_code: z.string() }),
        ),
      ],
      requiredSteps: ["find_employee", "get_employee", "get_department"],
      terminalTool: "file_expense_approval",
      systemPrompt: "You are an HR assistant. Resolve every id with the tools; never guess.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "file_expense_approval", {
      employee_id: equals("E-2231"),
      approver_name: mentions("Okafor"),
      budget_code: equals("PE-7731"),
    }),
});

const ALERTS = {
  "AL-5520": {
    alert_id: "AL-5520",
    service: "payments-api",
    metric: "p99_latency_ms",
    value: 2400,
    threshold: 800,
  },
};
const DEPLOYS = {
  "PAYMENTS-API": {
    service: "payments-api",
    deploys: [
      { deploy_id: "dep-771", minutes_ago: 12, author: "lee", change: "connection pool size 50 → 5" },
      { deploy_id: "dep-760", minutes_ago: 1440, author: "sam", change: "log format" },
    ],
  },
};

const conditionalRouting = defineScenario({
  id: "conditional_routing",
  category: ScenarioCategory.MODEL_QUALITY,
  tags: ["reasoning"],
  description:
    "Triage an alert: roll back when a deploy in the last 30 minutes explains it, else page on-call.",
  userMessage:
    "Alert AL-5520 fired. If a deploy in the last 30 minutes could explain it, roll that deploy back; otherwise page the on-call engineer.",
  reference: [
    { tool: "get_alert", args: { alert_id: "AL-5520" } },
    { tool: "get_recent_deploys", args: { service: "payments-api" } },
    {
      tool: "rollback_deploy",
      args: { deploy_id: "dep-771", reason: "p99 latency 2400ms after pool size 50 → 5" },
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "incident_triage",
      description: "Triage an alert",
      tools: [
        scenarioTool({
          name: "get_alert",
          description: "An alert by id",
          parameters: z.object({ alert_id: z.string() }),
          execute: ({ alert_id }) => rowOf(ALERTS, alert_id, "alert"),
        }),
        scenarioTool({
          name: "get_recent_deploys",
          description: "Recent deploys of a service, newest first",
          parameters: z.object({ service: z.string() }),
          execute: ({ service }) => rowOf(DEPLOYS, service.toUpperCase(), "service"),
        }),
        scenarioTool({
          name: "get_dependency_health",
          description: "Health of a service's dependencies",
          parameters: z.object({ service: z.string() }),
          execute: ({ service }) => ({ service, dependencies: [{ name: "postgres", healthy: true }] }),
        }),
        submitTool(
          "rollback_deploy",
          "Roll back a deploy",
          z.object({ deploy_id: z.string(), reason: z.string() }),
        ),
        submitTool(
          "page_oncall",
          "Page the on-call engineer of a service",
          z.object({ service: z.string(), summary: z.string() }),
        ),
      ],
      requiredSteps: ["get_alert", "get_recent_deploys"],
      terminalTool: ["rollback_deploy", "page_oncall"],
      systemPrompt: "You are an SRE assistant. Decide from the data, then take exactly one action.",
    }),
  }),
  checkAnswer: (call) => expectCall(call, "rollback_deploy", { deploy_id: equals("dep-771") }),
});

/** Live tracking that knows no old shipment: its note sends the model to the archive (data-gap scenarios). */
export function trackShipmentTool(): ToolDef {
  return scenarioTool({
    name: "track_shipment",
    description: "Live tracking of a shipment",
    parameters: z.object({ tracking: z.string() }),
    execute: ({ tracking }) => ({
      tracking,
      status: "not_found",
      note: "Shipments older than 30 days moved to the archive service: call archive_lookup with the same tracking number.",
    }),
  });
}

const ARCHIVE = {
  "ZX-4471": { tracking: "ZX-4471", carrier: "NorthFreight", last_scan: "Rotterdam hub", eta: "2024-06-14" },
};

const dataGapRecovery = defineScenario({
  id: "data_gap_recovery",
  category: ScenarioCategory.MODEL_QUALITY,
  tags: ["reasoning"],
  description: "The obvious lookup is a dead end whose note names another tool: recover and answer.",
  userMessage: "Where is shipment ZX-4471 and when will it arrive? Reply to the customer.",
  reference: [
    { tool: "track_shipment", args: { tracking: "ZX-4471" } },
    { tool: "archive_lookup", args: { tracking: "ZX-4471" }, thought: "The note says to use the archive." },
    {
      tool: "reply_customer",
      args: {
        tracking: "ZX-4471",
        message: "Your shipment is with NorthFreight at the Rotterdam hub, arriving 2024-06-14.",
      },
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "shipment_status",
      description: "Answer a shipment status question",
      tools: [
        trackShipmentTool(),
        scenarioTool({
          name: "archive_lookup",
          description: "Archived shipment records",
          parameters: z.object({ tracking: z.string() }),
          execute: ({ tracking }) => rowOf(ARCHIVE, tracking, "archived shipment"),
        }),
        submitTool(
          "reply_customer",
          "Reply to the customer",
          z.object({ tracking: z.string(), message: z.string() }),
        ),
      ],
      terminalTool: "reply_customer",
      systemPrompt: "You are a logistics assistant. Never answer without data from the tools.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "reply_customer", {
      tracking: sameText("ZX-4471"),
      message: mentions("NorthFreight", "2024-06-14"),
    }),
});

const relevanceDetection = defineScenario({
  id: "relevance_detection",
  category: ScenarioCategory.MODEL_QUALITY,
  description: "A request none of the tools serve: decline instead of inventing an answer.",
  userMessage: "Can you give me a good recipe for banana bread?",
  reference: [
    {
      tool: "decline",
      args: {
        reason: "I can only help with stock prices and exchange rates; recipes are outside what my tools do.",
      },
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "market_desk",
      description: "Market data questions",
      tools: [
        scenarioTool({
          name: "get_stock_price",
          description: "Latest price of a stock ticker",
          parameters: z.object({ ticker: z.string() }),
          execute: ({ ticker }) => {
            throw new NotFoundError(`Unknown ticker '${ticker}'`);
          },
        }),
        scenarioTool({
          name: "get_exchange_rate",
          description: "Exchange rate between two currencies",
          parameters: z.object({ from: z.string(), to: z.string() }),
          execute: ({ from, to }) => ({ from, to, rate: 1.08 }),
        }),
        submitTool("answer", "Answer a market-data question", z.object({ answer: z.string() })),
        submitTool(
          "decline",
          "Decline a request the tools cannot serve, saying why",
          z.object({ reason: z.string() }),
        ),
      ],
      terminalTool: ["answer", "decline"],
      systemPrompt:
        "You are a market-data desk. Answer only with data from your tools; decline anything else.",
    }),
  }),
  checkAnswer: (call) => expectCall(call, "decline", { reason: avoids("flour", "bake at", "preheat") }),
});

/** Model-quality scenarios. */
export const MODEL_QUALITY_SCENARIOS: readonly EvalScenario[] = [
  toolSelection,
  argumentFidelity,
  sequentialReasoning,
  conditionalRouting,
  dataGapRecovery,
  relevanceDetection,
];

export {
  ALERTS,
  ARCHIVE,
  CUSTOMERS,
  DEPARTMENTS,
  DEPLOYS,
  distractors,
  EMPLOYEES,
  FLIGHTS,
  GATES,
  ORDERS,
  PEOPLE,
};
