/**
 * Reasoning scenarios: multi-hop hints with lures, argument transformation, inconsistent APIs,
 * and grounded synthesis under a hard constraint.
 */
import { z } from "zod";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { equals, expectCall, mentions, near } from "./checks.ts";
import { defineScenario, type EvalScenario, ScenarioCategory } from "./scenario.ts";
import { InvalidArgumentError, rowOf, scenarioTool, submitTool } from "./tools.ts";

const TICKETS = {
  "T-5512": {
    ticket_id: "T-5512",
    product_sku: "SKU-ORBIT-9",
    order_region: "EU-West",
    note: "Customer mentions visiting the US store, but the order was placed in EU-West.",
  },
};
const WAREHOUSES = {
  "SKU-ORBIT-9": [
    { warehouse_id: "WH-NJ", region: "US-East", stock: 120 },
    { warehouse_id: "WH-DUB", region: "EU-West", stock: 0 },
    { warehouse_id: "WH-AMS", region: "EU-West", stock: 14 },
  ],
};

const multiHopLures = defineScenario({
  id: "multi_hop_lures",
  category: ScenarioCategory.REASONING,
  description: "Follow the ticket's region hint past two lures (the big US stock, the empty first EU row).",
  userMessage: "Ship a replacement for ticket T-5512 from the right warehouse.",
  reference: [
    { tool: "get_ticket", args: { ticket_id: "T-5512" } },
    { tool: "find_warehouses", args: { sku: "SKU-ORBIT-9" } },
    {
      tool: "create_shipment",
      args: { ticket_id: "T-5512", warehouse_id: "WH-AMS" },
      needs: [0, 1],
      thought: "EU-West order; WH-DUB has no stock, so WH-AMS.",
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "replacement_shipment",
      description: "Ship a replacement",
      tools: [
        scenarioTool({
          name: "get_ticket",
          description: "A support ticket by id",
          parameters: z.object({ ticket_id: z.string() }),
          execute: ({ ticket_id }) => rowOf(TICKETS, ticket_id, "ticket"),
        }),
        scenarioTool({
          name: "find_warehouses",
          description: "Warehouses stocking a SKU, with region and stock",
          parameters: z.object({ sku: z.string() }),
          execute: ({ sku }) => ({ sku, warehouses: rowOf(WAREHOUSES, sku, "SKU") }),
        }),
        submitTool(
          "create_shipment",
          "Ship a replacement from a warehouse. It must be in the order's region and have stock.",
          z.object({ ticket_id: z.string(), warehouse_id: z.string() }),
        ),
      ],
      requiredSteps: ["get_ticket", "find_warehouses"],
      terminalTool: "create_shipment",
      systemPrompt:
        "You are a fulfilment assistant. Ship from the order's region, from a warehouse with stock.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "create_shipment", { ticket_id: equals("T-5512"), warehouse_id: equals("WH-AMS") }),
});

const CONTACTS = {
  "ANA SOUSA": { name: "Ana Sousa", email: "Ana.Sousa@Example.COM", timezone: "Europe/Lisbon" },
};

const ISO_MINUTE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/;

const argumentTransformation = defineScenario({
  id: "argument_transformation",
  category: ScenarioCategory.REASONING,
  description: "Transform prose into the API's formats: ISO start, minutes, lower-case email.",
  userMessage: "Book a meeting with Ana Sousa on 5 March 2025 at 3 pm for an hour and a half.",
  reference: [
    { tool: "lookup_contact", args: { name: "Ana Sousa" } },
    {
      tool: "schedule_meeting",
      args: {
        attendee_email: "ana.sousa@example.com",
        start: "2025-03-05T15:00",
        duration_minutes: 90,
        timezone: "Europe/Lisbon",
      },
      thought: "3 pm → 15:00; an hour and a half → 90 minutes; emails lower-case.",
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "meeting_booking",
      description: "Book a meeting",
      tools: [
        scenarioTool({
          name: "lookup_contact",
          description: "A contact's email and timezone by name",
          parameters: z.object({ name: z.string() }),
          execute: ({ name }) => rowOf(CONTACTS, name.toUpperCase(), "contact"),
        }),
        scenarioTool({
          name: "schedule_meeting",
          description:
            "Schedule a meeting. start is local time as YYYY-MM-DDTHH:MM, duration in whole minutes, email lower-case.",
          parameters: z.object({
            attendee_email: z.string(),
            start: z.string(),
            duration_minutes: z.number(),
            timezone: z.string(),
          }),
          execute: ({ attendee_email, start, duration_minutes }) => {
            if (!ISO_MINUTE.test(start))
              throw new InvalidArgumentError(`start must be YYYY-MM-DDTHH:MM, got '${start}'`);
            if (!Number.isInteger(duration_minutes))
              throw new InvalidArgumentError("duration_minutes must be whole minutes");
            if (attendee_email !== attendee_email.toLowerCase()) {
              throw new InvalidArgumentError("attendee_email must be lower-case");
            }
            return { status: "scheduled", meeting_id: "MTG-3301" };
          },
        }),
      ],
      requiredSteps: ["lookup_contact"],
      terminalTool: "schedule_meeting",
      systemPrompt:
        "You are a scheduling assistant. Convert the user's wording into the tool's exact formats.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "schedule_meeting", {
      attendee_email: equals("ana.sousa@example.com"),
      start: equals("2025-03-05T15:00"),
      duration_minutes: equals(90),
      timezone: equals("Europe/Lisbon"),
    }),
});

const USERS = { MKOVAL: { id: 9031, username: "mkoval", account: { ref: "acct_9031_eu", region: "eu" } } };
const SUBSCRIPTIONS = { acct_9031_eu: { plan: "pro", price_cents: 4900, renews_on: "2025-07-01" } };

const inconsistentApiRecovery = defineScenario({
  id: "inconsistent_api_recovery",
  category: ScenarioCategory.REASONING,
  description:
    "APIs disagree on names and units (account.ref vs account_ref, cents vs dollars); the credit tool rejects cents.",
  userMessage: "User mkoval was double-charged this month. Credit them one month of their plan.",
  reference: [
    { tool: "get_user", args: { username: "mkoval" } },
    { tool: "get_subscription", args: { account_ref: "acct_9031_eu" } },
    {
      tool: "issue_credit",
      args: { account_ref: "acct_9031_eu", amount_usd: 49, reason: "double charge: one month of pro" },
      thought: "4900 cents is $49.00.",
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "billing_credit",
      description: "Credit a customer",
      tools: [
        scenarioTool({
          name: "get_user",
          description: "A user by username",
          parameters: z.object({ username: z.string() }),
          execute: ({ username }) => rowOf(USERS, username.toUpperCase(), "user"),
        }),
        scenarioTool({
          name: "get_subscription",
          description: "Subscription of an account (account_ref is the user's account.ref)",
          parameters: z.object({ account_ref: z.string() }),
          execute: ({ account_ref }) => rowOf(SUBSCRIPTIONS, account_ref, "account"),
        }),
        scenarioTool({
          name: "issue_credit",
          description: "Credit an account, amount in US dollars",
          parameters: z.object({ account_ref: z.string(), amount_usd: z.number(), reason: z.string() }),
          execute: ({ account_ref, amount_usd }) => {
            rowOf(SUBSCRIPTIONS, account_ref, "account");
            if (amount_usd > 500) {
              throw new InvalidArgumentError(
                `amount_usd ${amount_usd} is over the $500 limit: amounts are dollars, not cents`,
              );
            }
            return { status: "credited", account_ref, amount_usd };
          },
        }),
      ],
      requiredSteps: ["get_user", "get_subscription"],
      terminalTool: "issue_credit",
      systemPrompt: "You are a billing assistant. Watch field names and units between APIs.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "issue_credit", { account_ref: equals("acct_9031_eu"), amount_usd: near(49) }),
});

const CATALOG = {
  LAPTOP: [
    { product_id: "LP-210", name: "Aero 13", price_usd: 899, ram_gb: 8 },
    { product_id: "LP-377", name: "Forge 15 Pro", price_usd: 1499, ram_gb: 32 },
    { product_id: "LP-352", name: "Vector 14", price_usd: 1149, ram_gb: 16 },
    { product_id: "LP-118", name: "Slate 14", price_usd: 1249, ram_gb: 16 },
    { product_id: "LP-090", name: "Nimbus 12", price_usd: 649, ram_gb: 4 },
  ],
};
const DETAILS = Object.fromEntries(
  CATALOG.LAPTOP.map((product, index) => [
    product.product_id,
    { ...product, in_stock: true, battery_h: 8 + index, warranty_years: 2 },
  ]),
);

const groundedSynthesis = defineScenario({
  id: "grounded_synthesis",
  category: ScenarioCategory.REASONING,
  description:
    "Recommend from the catalog under a hard constraint (< $1200 and ≥ 16 GB); only one item qualifies.",
  userMessage:
    "Recommend one laptop from our catalog that costs under $1200 and has at least 16 GB of RAM. Check its details before recommending.",
  reference: [
    { tool: "search_catalog", args: { category: "laptop" } },
    { tool: "get_product", args: { product_id: "LP-352" } },
    {
      tool: "recommend",
      args: {
        product_id: "LP-352",
        price_usd: 1149,
        justification: "Vector 14: 16 GB RAM at $1149, in stock",
      },
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "product_recommendation",
      description: "Recommend a product",
      tools: [
        scenarioTool({
          name: "search_catalog",
          description: "Products of a category",
          parameters: z.object({ category: z.string() }),
          execute: ({ category }) => ({
            category,
            products: rowOf(CATALOG, category.toUpperCase(), "category"),
          }),
        }),
        scenarioTool({
          name: "get_product",
          description: "Details of a product",
          parameters: z.object({ product_id: z.string() }),
          execute: ({ product_id }) => rowOf(DETAILS, product_id, "product details for"),
        }),
        submitTool(
          "recommend",
          "Recommend one product, grounded in tool data",
          z.object({ product_id: z.string(), price_usd: z.number(), justification: z.string() }),
        ),
      ],
      requiredSteps: ["search_catalog", "get_product"],
      terminalTool: "recommend",
      systemPrompt:
        "You are a shopping assistant. Only recommend what the data supports and the constraints allow.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "recommend", {
      product_id: equals("LP-352"),
      price_usd: near(1149),
      justification: mentions("16"),
    }),
});

/** Reasoning scenarios. */
export const REASONING_SCENARIOS: readonly EvalScenario[] = [
  multiHopLures,
  argumentTransformation,
  inconsistentApiRecovery,
  groundedSynthesis,
];

export { CATALOG, CONTACTS, DETAILS, SUBSCRIPTIONS, TICKETS, USERS, WAREHOUSES };
