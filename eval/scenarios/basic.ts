/**
 * The frozen `basic` tier: short, plain scenarios for very small models (2–3 calls, 2–4 tools,
 * one-line descriptions, string parameters, a system prompt that names the order). Each copies a
 * value from the request into the first call and a value from its result into the terminal
 * call, and sets one trap a guardrail handles: a question that invites prose, a request that
 * tempts the terminal call first, a request naming a tool that does not exist, or a tool that
 * fails once with a transient error. Frozen: change a scenario only with a new id, so results
 * stay comparable across models and runs.
 */
import { z } from "zod";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { expectCall, mentions, sameText } from "./checks.ts";
import { defineScenario, type EvalScenario, ScenarioCategory } from "./scenario.ts";
import { rowOf, scenarioTool, submitTool } from "./tools.ts";

/** The trap a basic scenario sets, as its tag. */
export const BasicTrap = {
  PROSE: "trap_prose",
  PREMATURE_TERMINAL: "trap_premature_terminal",
  UNKNOWN_TOOL: "trap_unknown_tool",
  TRANSIENT_ERROR: "trap_transient_error",
} as const;
export type BasicTrap = (typeof BasicTrap)[keyof typeof BasicTrap];

/** A service that is briefly unavailable; the same call succeeds once it is retried. */
class ServiceUnavailableError extends Error {
  constructor(service: string) {
    super(`${service} is temporarily unavailable (503); try the same call again`);
    this.name = "ServiceUnavailable";
  }
}

/** `execute`, except that the first call of the run throws a transient error. */
function failsOnce<Args>(service: string, execute: (args: Args) => unknown): (args: Args) => unknown {
  let failed = false;
  return (args) => {
    if (!failed) {
      failed = true;
      throw new ServiceUnavailableError(service);
    }
    return execute(args);
  };
}

const FORECASTS = { ROVANIEMI: { place: "Rovaniemi", forecast: "-6°C and light snow" } };

const forecastProse = defineScenario({
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

const stockProse = defineScenario({
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

const fineProse = defineScenario({
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

const refundPremature = defineScenario({
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

const tablePremature = defineScenario({
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

const welcomePremature = defineScenario({
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

const gatePremature = defineScenario({
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

const courtPremature = defineScenario({
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

const RATES = { NOK: { pair: "NOK/CHF", rate: "0.081" } };

const rateUnknownTool = defineScenario({
  id: "basic_rate_unknown_tool",
  category: ScenarioCategory.BASIC,
  description: "The request names a 'currency converter', a tool that does not exist.",
  tags: [BasicTrap.UNKNOWN_TOOL],
  userMessage: "Use the currency converter to get the NOK to CHF rate and share it.",
  reference: [
    { tool: "rate_quote", args: { currency: "NOK" } },
    { tool: "share_rate", args: { pair: "NOK/CHF", rate: "0.081" } },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "exchange_rate",
      description: "Share an exchange rate",
      tools: [
        scenarioTool({
          name: "rate_quote",
          description: "Today's rate from a currency to Swiss francs",
          parameters: z.object({ currency: z.string() }),
          execute: ({ currency }) => rowOf(RATES, currency, "rate for"),
        }),
        submitTool(
          "share_rate",
          "Share a rate with the user",
          z.object({ pair: z.string(), rate: z.string() }),
        ),
      ],
      requiredSteps: ["rate_quote"],
      terminalTool: "share_rate",
      systemPrompt:
        "You are a currency assistant. First call rate_quote for the currency, then call share_rate with the pair and the rate.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "share_rate", { pair: sameText("NOK/CHF"), rate: sameText("0.081") }),
});

const CLOCKS = { ULAANBAATAR: { city: "Ulaanbaatar", time: "14:05" } };

const clockUnknownTool = defineScenario({
  id: "basic_clock_unknown_tool",
  category: ScenarioCategory.BASIC,
  description: "The request names a 'timezone tool', a tool that does not exist.",
  tags: [BasicTrap.UNKNOWN_TOOL],
  userMessage: "Ask the timezone tool what time it is in Ulaanbaatar.",
  reference: [
    { tool: "local_clock", args: { city: "Ulaanbaatar" } },
    { tool: "say_time", args: { city: "Ulaanbaatar", time: "14:05" } },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "world_clock",
      description: "Tell the local time of a city",
      tools: [
        scenarioTool({
          name: "local_clock",
          description: "The local time in a city",
          parameters: z.object({ city: z.string() }),
          execute: ({ city }) => rowOf(CLOCKS, city, "city"),
        }),
        submitTool("say_time", "Tell the user the time", z.object({ city: z.string(), time: z.string() })),
      ],
      requiredSteps: ["local_clock"],
      terminalTool: "say_time",
      systemPrompt:
        "You are a world clock assistant. First call local_clock for the city, then call say_time with the city and the time.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "say_time", { city: sameText("Ulaanbaatar"), time: sameText("14:05") }),
});

const CONSIGNMENTS = { "ZR-88213": { consignment: "ZR-88213", status: "held at customs" } };

const consignmentUnknownTool = defineScenario({
  id: "basic_consignment_unknown_tool",
  category: ScenarioCategory.BASIC,
  description: "The request names 'the tracker', a tool that does not exist; the status is free text.",
  tags: [BasicTrap.UNKNOWN_TOOL],
  userMessage: "Run the tracker on consignment ZR-88213 and text the customer its status.",
  reference: [
    { tool: "consignment_status", args: { consignment: "ZR-88213" } },
    {
      tool: "text_customer",
      args: { consignment: "ZR-88213", message: "Your consignment ZR-88213 is held at customs." },
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "consignment_update",
      description: "Text a customer the status of a consignment",
      tools: [
        scenarioTool({
          name: "consignment_status",
          description: "Where a consignment is now",
          parameters: z.object({ consignment: z.string() }),
          execute: ({ consignment }) => rowOf(CONSIGNMENTS, consignment, "consignment"),
        }),
        scenarioTool({
          name: "depot_hours",
          description: "Opening hours of the depot",
          parameters: z.object({}),
          execute: () => ({ hours: "07:00-19:00" }),
        }),
        submitTool(
          "text_customer",
          "Text the customer a message",
          z.object({ consignment: z.string(), message: z.string() }),
        ),
      ],
      requiredSteps: ["consignment_status"],
      terminalTool: "text_customer",
      systemPrompt:
        "You are a courier assistant. First call consignment_status for the consignment, then call text_customer with its status.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "text_customer", { consignment: sameText("ZR-88213"), message: mentions("customs") }),
});

const POINTS = { "AGNES HOLMQVIST": { member: "Agnes Holmqvist", points: "1820" } };

const pointsTransient = defineScenario({
  id: "basic_points_transient",
  category: ScenarioCategory.BASIC,
  description: "The points service fails once with a transient error; the same call then succeeds.",
  tags: [BasicTrap.TRANSIENT_ERROR],
  userMessage: "Tell Agnes Holmqvist how many loyalty points she has.",
  idealIterations: 3,
  reference: [
    { tool: "loyalty_points", args: { member: "Agnes Holmqvist" } },
    { tool: "points_notice", args: { member: "Agnes Holmqvist", message: "You have 1820 points." } },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "points_balance",
      description: "Tell a member their points",
      tools: [
        scenarioTool({
          name: "loyalty_points",
          description: "Loyalty points of a member",
          parameters: z.object({ member: z.string() }),
          execute: failsOnce("the points service", ({ member }: { member: string }) =>
            rowOf(POINTS, member, "member"),
          ),
        }),
        submitTool(
          "points_notice",
          "Send a member a message about their points",
          z.object({ member: z.string(), message: z.string() }),
        ),
      ],
      requiredSteps: ["loyalty_points"],
      terminalTool: "points_notice",
      systemPrompt:
        "You are a loyalty assistant. First call loyalty_points for the member, then call points_notice with the points. If a call fails, make the same call again.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "points_notice", { member: sameText("Agnes Holmqvist"), message: mentions("1820") }),
});

const SHELVES = { "978-0-14-044913-6": { isbn: "978-0-14-044913-6", shelf: "C-17" } };

const shelfTransient = defineScenario({
  id: "basic_shelf_transient",
  category: ScenarioCategory.BASIC,
  description: "The catalogue times out once; the hold needs the shelf from the retried call.",
  tags: [BasicTrap.TRANSIENT_ERROR],
  userMessage: "Hold the title with ISBN 978-0-14-044913-6 for Lotte Marchetti.",
  idealIterations: 3,
  reference: [
    { tool: "shelf_locate", args: { isbn: "978-0-14-044913-6" } },
    {
      tool: "reserve_title",
      args: { isbn: "978-0-14-044913-6", shelf: "C-17", patron: "Lotte Marchetti" },
      needs: [0],
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "library_hold",
      description: "Hold a library title for a patron",
      tools: [
        scenarioTool({
          name: "shelf_locate",
          description: "The shelf of a title by ISBN",
          parameters: z.object({ isbn: z.string() }),
          execute: failsOnce("the catalogue", ({ isbn }: { isbn: string }) => rowOf(SHELVES, isbn, "title")),
        }),
        submitTool(
          "reserve_title",
          "Hold a title for a patron",
          z.object({ isbn: z.string(), shelf: z.string(), patron: z.string() }),
        ),
      ],
      requiredSteps: ["shelf_locate"],
      terminalTool: "reserve_title",
      systemPrompt:
        "You are a library assistant. First call shelf_locate for the ISBN, then call reserve_title with the ISBN, the shelf and the patron. If a call fails, make the same call again.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "reserve_title", {
      isbn: sameText("978-0-14-044913-6"),
      shelf: sameText("C-17"),
      patron: sameText("Lotte Marchetti"),
    }),
});

const PETS = { "985112004417": { chip_id: "985112004417", owner: "Tobias Szabo", species: "cat" } };
const VACCINES = { "985112004417": { chip_id: "985112004417", vaccine: "rabies", due: "2026-03-14" } };

const vaccineTransient = defineScenario({
  id: "basic_vaccine_transient",
  category: ScenarioCategory.BASIC,
  description: "Three calls; the second fails once. The reminder needs the owner and the due date.",
  tags: [BasicTrap.TRANSIENT_ERROR],
  userMessage: "Remind the owner of the pet with chip 985112004417 about its next vaccine.",
  idealIterations: 4,
  reference: [
    { tool: "pet_details", args: { chip_id: "985112004417" } },
    { tool: "vaccine_due", args: { chip_id: "985112004417" }, needs: [] },
    {
      tool: "remind_owner",
      args: { owner: "Tobias Szabo", message: "Your cat is due for its rabies vaccine on 2026-03-14." },
      needs: [0, 1],
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "vaccine_reminder",
      description: "Remind a pet owner of a vaccine",
      tools: [
        scenarioTool({
          name: "pet_details",
          description: "Owner and species of a pet by chip number",
          parameters: z.object({ chip_id: z.string() }),
          execute: ({ chip_id }) => rowOf(PETS, chip_id, "pet with chip"),
        }),
        scenarioTool({
          name: "vaccine_due",
          description: "The next vaccine of a pet and its date",
          parameters: z.object({ chip_id: z.string() }),
          execute: failsOnce("the vaccine register", ({ chip_id }: { chip_id: string }) =>
            rowOf(VACCINES, chip_id, "pet with chip"),
          ),
        }),
        submitTool(
          "remind_owner",
          "Send the owner a reminder",
          z.object({ owner: z.string(), message: z.string() }),
        ),
      ],
      requiredSteps: ["pet_details", "vaccine_due"],
      terminalTool: "remind_owner",
      systemPrompt:
        "You are a vet clinic assistant. First call pet_details for the chip, then vaccine_due for the chip, then call remind_owner with the owner and the due date. If a call fails, make the same call again.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "remind_owner", { owner: sameText("Tobias Szabo"), message: mentions("2026-03-14") }),
});

const TIDES = { ZADAR: { harbour: "Zadar", high_tide: "16:40" } };

const tideProse = defineScenario({
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

/** The basic tier, frozen: 15 scenarios, in report order. */
export const BASIC_SCENARIOS: readonly EvalScenario[] = [
  forecastProse,
  stockProse,
  fineProse,
  tideProse,
  refundPremature,
  tablePremature,
  welcomePremature,
  gatePremature,
  courtPremature,
  rateUnknownTool,
  clockUnknownTool,
  consignmentUnknownTool,
  pointsTransient,
  shelfTransient,
  vaccineTransient,
];
