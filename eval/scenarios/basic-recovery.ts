/**
 * Basic tier, second half: requests naming a tool that does not exist, and tools that fail once
 * with a transient error. See basic.ts.
 */

import { z } from "zod";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { BasicTrap, failsOnce } from "./basic-traps.ts";
import { expectCall, mentions, sameText } from "./checks.ts";
import { defineScenario, ScenarioCategory } from "./scenario.ts";
import { rowOf, scenarioTool, submitTool } from "./tools.ts";

const RATES = { NOK: { pair: "NOK/CHF", rate: "0.081" } };

export const rateUnknownTool = defineScenario({
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

export const clockUnknownTool = defineScenario({
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

export const consignmentUnknownTool = defineScenario({
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

export const pointsTransient = defineScenario({
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

export const shelfTransient = defineScenario({
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

export const vaccineTransient = defineScenario({
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
