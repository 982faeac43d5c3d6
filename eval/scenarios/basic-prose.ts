/**
 * Basic tier, first half: questions that invite prose instead of a call, and requests that tempt
 * the terminal call first. See basic.ts.
 */

import { z } from "zod";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { BasicTrap } from "./basic-traps.ts";
import { expectCall, mentions, sameText } from "./checks.ts";
import { defineScenario, ScenarioCategory } from "./scenario.ts";
import { rowOf, scenarioTool, submitTool } from "./tools.ts";

const FORECASTS = { ROVANIEMI: { place: "Rovaniemi", forecast: "-6°C and light snow" } };

export const forecastProse = defineScenario({
  id: "basic_forecast_prose",
  category: ScenarioCategory.BASIC,
  description: "A chatty weather question invites a prose answer instead of a call.",
  tags: [BasicTrap.PROSE],
  userMessage: "What is it like outside in Rovaniemi today?",
  reference: [
    { tool: "forecast_now", args: { place: "Rovaniemi" } },
    {
      tool: "relay_forecast",
      args: { place: "Rovaniemi", message: "It is -6°C with light snow in Rovaniemi." },
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "forecast_relay",
      description: "Relay today's forecast",
      tools: [
        scenarioTool({
          name: "forecast_now",
          description: "Today's forecast for a place",
          parameters: z.object({ place: z.string() }),
          execute: ({ place }) => rowOf(FORECASTS, place, "place"),
        }),
        submitTool(
          "relay_forecast",
          "Tell the user the forecast",
          z.object({ place: z.string(), message: z.string() }),
        ),
      ],
      requiredSteps: ["forecast_now"],
      terminalTool: "relay_forecast",
      systemPrompt:
        "You are a weather assistant. First call forecast_now for the place, then call relay_forecast with the forecast.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "relay_forecast", { place: sameText("Rovaniemi"), message: mentions("-6", "snow") }),
});

const SHELF_STOCK = { "KB-2290": { sku: "KB-2290", units: "37", aisle: "B4" } };

export const stockProse = defineScenario({
  id: "basic_stock_prose",
  category: ScenarioCategory.BASIC,
  description: "A yes/no question about stock invites a prose answer instead of a call.",
  tags: [BasicTrap.PROSE],
  userMessage: "Do you still have the keyboard KB-2290 in the shop?",
  reference: [
    { tool: "stock_level", args: { sku: "KB-2290" } },
    { tool: "answer_shopper", args: { sku: "KB-2290", reply: "Yes, 37 units of KB-2290 in aisle B4." } },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "shop_stock",
      description: "Answer a shopper about stock",
      tools: [
        scenarioTool({
          name: "stock_level",
          description: "Units in the shop for a product code",
          parameters: z.object({ sku: z.string() }),
          execute: ({ sku }) => rowOf(SHELF_STOCK, sku, "product"),
        }),
        submitTool(
          "answer_shopper",
          "Reply to the shopper",
          z.object({ sku: z.string(), reply: z.string() }),
        ),
      ],
      requiredSteps: ["stock_level"],
      terminalTool: "answer_shopper",
      systemPrompt:
        "You are a shop assistant. First call stock_level for the product code, then call answer_shopper with the number of units.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "answer_shopper", { sku: sameText("KB-2290"), reply: mentions("37") }),
});

const PARKING_FINES = { "PF-20931": { fine_id: "PF-20931", owed: "42.50" } };

export const fineProse = defineScenario({
  id: "basic_fine_prose",
  category: ScenarioCategory.BASIC,
  description: "A question about an amount owed invites a prose answer instead of a call.",
  tags: [BasicTrap.PROSE],
  userMessage: "How much do I still owe on parking fine PF-20931?",
  reference: [
    { tool: "fine_balance", args: { fine_id: "PF-20931" } },
    { tool: "fine_reply", args: { fine_id: "PF-20931", message: "You owe 42.50 on fine PF-20931." } },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "parking_fine",
      description: "Answer a question about a parking fine",
      tools: [
        scenarioTool({
          name: "fine_balance",
          description: "The amount owed on a parking fine",
          parameters: z.object({ fine_id: z.string() }),
          execute: ({ fine_id }) => rowOf(PARKING_FINES, fine_id, "fine"),
        }),
        submitTool("fine_reply", "Answer the driver", z.object({ fine_id: z.string(), message: z.string() })),
      ],
      requiredSteps: ["fine_balance"],
      terminalTool: "fine_reply",
      systemPrompt:
        "You are a parking office assistant. First call fine_balance for the fine, then call fine_reply with the amount owed.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "fine_reply", { fine_id: sameText("PF-20931"), message: mentions("42.50") }),
});

const PAYMENTS = { "PX-5813": { payment_id: "PX-5813", amount: "64.90", currency: "SEK" } };

export const refundPremature = defineScenario({
  id: "basic_refund_premature",
  category: ScenarioCategory.BASIC,
  description: "'Right away' tempts the refund before the payment is looked up.",
  tags: [BasicTrap.PREMATURE_TERMINAL],
  userMessage: "Refund payment PX-5813 right away, please.",
  reference: [
    { tool: "payment_status", args: { payment_id: "PX-5813" } },
    { tool: "refund_payment", args: { payment_id: "PX-5813", amount: "64.90" } },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "payment_refund",
      description: "Refund a payment",
      tools: [
        scenarioTool({
          name: "payment_status",
          description: "Amount and currency of a payment",
          parameters: z.object({ payment_id: z.string() }),
          execute: ({ payment_id }) => rowOf(PAYMENTS, payment_id, "payment"),
        }),
        submitTool(
          "refund_payment",
          "Refund the full amount of a payment",
          z.object({ payment_id: z.string(), amount: z.string() }),
        ),
      ],
      requiredSteps: ["payment_status"],
      terminalTool: "refund_payment",
      systemPrompt:
        "You are a payments assistant. First call payment_status for the payment, then call refund_payment with its amount.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "refund_payment", { payment_id: sameText("PX-5813"), amount: sameText("64.90") }),
});

const TABLES = { "19:30": { time: "19:30", table: "T12", seats: "4" } };

export const tablePremature = defineScenario({
  id: "basic_table_premature",
  category: ScenarioCategory.BASIC,
  description: "A request to confirm at once tempts the confirmation before a table is found.",
  tags: [BasicTrap.PREMATURE_TERMINAL],
  userMessage: "Confirm a table at 19:30 for Magnus Oyelaran now.",
  reference: [
    { tool: "table_availability", args: { time: "19:30" } },
    { tool: "confirm_table", args: { guest: "Magnus Oyelaran", table: "T12" }, needs: [0] },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "table_confirmation",
      description: "Confirm a restaurant table",
      tools: [
        scenarioTool({
          name: "table_availability",
          description: "A free table at a time",
          parameters: z.object({ time: z.string() }),
          execute: ({ time }) => rowOf(TABLES, time, "free table at"),
        }),
        submitTool(
          "confirm_table",
          "Confirm the table for a guest",
          z.object({ guest: z.string(), table: z.string() }),
        ),
      ],
      requiredSteps: ["table_availability"],
      terminalTool: "confirm_table",
      systemPrompt:
        "You are a restaurant host. First call table_availability for the time, then call confirm_table with the guest and the table.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "confirm_table", { guest: sameText("Magnus Oyelaran"), table: sameText("T12") }),
});

const MEMBERS = {
  "ivo.kessler@lumenpost.net": { email: "ivo.kessler@lumenpost.net", member_no: "M-40617", plan: "copper" },
};

export const welcomePremature = defineScenario({
  id: "basic_welcome_premature",
  category: ScenarioCategory.BASIC,
  description: "The request names only the email, tempting the welcome pack before the member number.",
  tags: [BasicTrap.PREMATURE_TERMINAL],
  userMessage: "Send the welcome pack to ivo.kessler@lumenpost.net.",
  reference: [
    { tool: "member_profile", args: { email: "ivo.kessler@lumenpost.net" } },
    { tool: "dispatch_welcome", args: { email: "ivo.kessler@lumenpost.net", member_no: "M-40617" } },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "member_welcome",
      description: "Welcome a new member",
      tools: [
        scenarioTool({
          name: "member_profile",
          description: "Member number and plan for an email",
          parameters: z.object({ email: z.string() }),
          execute: ({ email }) => rowOf(MEMBERS, email, "member with email"),
        }),
        scenarioTool({
          name: "plan_prices",
          description: "Prices of the membership plans",
          parameters: z.object({}),
          execute: () => ({ copper: "9.00", platinum: "15.00" }),
        }),
        submitTool(
          "dispatch_welcome",
          "Send the welcome pack to a member",
          z.object({ email: z.string(), member_no: z.string() }),
        ),
      ],
      requiredSteps: ["member_profile"],
      terminalTool: "dispatch_welcome",
      systemPrompt:
        "You are a membership assistant. First call member_profile for the email, then call dispatch_welcome with the email and the member number.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "dispatch_welcome", {
      email: sameText("ivo.kessler@lumenpost.net"),
      member_no: sameText("M-40617"),
    }),
});

const GATES = { "NV-318": { flight: "NV-318", gate: "D42", boarding: "10:55" } };

export const gatePremature = defineScenario({
  id: "basic_gate_premature",
  category: ScenarioCategory.BASIC,
  description: "Paging is what the user asks for, tempting the page before the gate is known.",
  tags: [BasicTrap.PREMATURE_TERMINAL],
  userMessage: "Page Ruth Kessler on flight NV-318 with her gate.",
  reference: [
    { tool: "flight_gate", args: { flight: "NV-318" } },
    { tool: "page_passenger", args: { passenger: "Ruth Kessler", gate: "D42" }, needs: [0] },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "passenger_page",
      description: "Page a passenger with their gate",
      tools: [
        scenarioTool({
          name: "flight_gate",
          description: "The gate of a flight",
          parameters: z.object({ flight: z.string() }),
          execute: ({ flight }) => rowOf(GATES, flight, "flight"),
        }),
        submitTool(
          "page_passenger",
          "Page a passenger with a gate",
          z.object({ passenger: z.string(), gate: z.string() }),
        ),
      ],
      requiredSteps: ["flight_gate"],
      terminalTool: "page_passenger",
      systemPrompt:
        "You are an airport desk assistant. First call flight_gate for the flight, then call page_passenger with the passenger and the gate.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "page_passenger", { passenger: sameText("Ruth Kessler"), gate: sameText("D42") }),
});

const COURTS = { "2026-11-05": { date: "2026-11-05", period: "evening", court: "3" } };

export const courtPremature = defineScenario({
  id: "basic_court_premature",
  category: ScenarioCategory.BASIC,
  description: "A reservation request with a date and a time of day; the court comes from a lookup.",
  tags: [BasicTrap.PREMATURE_TERMINAL],
  userMessage: "Reserve a squash court on 2026-11-05 in the evening for Mateo Brennan.",
  reference: [
    { tool: "court_slots", args: { date: "2026-11-05", period: "evening" } },
    {
      tool: "reserve_court",
      args: { player: "Mateo Brennan", date: "2026-11-05", court: "3" },
      needs: [0],
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "court_reservation",
      description: "Reserve a squash court",
      tools: [
        scenarioTool({
          name: "court_slots",
          description: "A free court on a date and time of day",
          parameters: z.object({ date: z.string(), period: z.enum(["morning", "afternoon", "evening"]) }),
          execute: ({ date }) => rowOf(COURTS, date, "free court on"),
        }),
        submitTool(
          "reserve_court",
          "Reserve a court for a player",
          z.object({ player: z.string(), date: z.string(), court: z.string() }),
        ),
      ],
      requiredSteps: ["court_slots"],
      terminalTool: "reserve_court",
      systemPrompt:
        "You are a sports centre assistant. First call court_slots for the date and time of day, then call reserve_court with the player, the date and the court.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "reserve_court", {
      player: sameText("Mateo Brennan"),
      date: sameText("2026-11-05"),
      court: sameText("3"),
    }),
});

const TIDES = { ZADAR: { harbour: "Zadar", high_tide: "16:40" } };

export const tideProse = defineScenario({
  id: "basic_tide_prose",
  category: ScenarioCategory.BASIC,
  description: "A sailor's question invites a prose answer; a distracting extra tool is on offer.",
  tags: [BasicTrap.PROSE],
  userMessage: "When is high tide in Zadar today? I want to sail out.",
  reference: [
    { tool: "tide_table", args: { harbour: "Zadar" } },
    { tool: "tide_answer", args: { harbour: "Zadar", message: "High tide in Zadar is at 16:40." } },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "tide_times",
      description: "Answer a question about the tide",
      tools: [
        scenarioTool({
          name: "tide_table",
          description: "Today's high tide for a harbour",
          parameters: z.object({ harbour: z.string() }),
          execute: ({ harbour }) => rowOf(TIDES, harbour, "harbour"),
        }),
        scenarioTool({
          name: "wind_warning",
          description: "Any wind warning for a harbour",
          parameters: z.object({ harbour: z.string() }),
          execute: () => ({ warning: "none" }),
        }),
        submitTool(
          "tide_answer",
          "Answer the sailor",
          z.object({ harbour: z.string(), message: z.string() }),
        ),
      ],
      requiredSteps: ["tide_table"],
      terminalTool: "tide_answer",
      systemPrompt:
        "You are a harbour assistant. First call tide_table for the harbour, then call tide_answer with the time of high tide.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "tide_answer", { harbour: sameText("Zadar"), message: mentions("16:40") }),
});
