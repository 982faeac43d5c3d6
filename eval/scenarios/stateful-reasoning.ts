/**
 * Stateful reasoning and compaction variants: format transformation into a calendar, a purchase
 * under a hard budget, a migration and a bin audit whose large results force compaction.
 */
import { z } from "zod";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { equals, expectCall, near, sameSet } from "./checks.ts";
import { padded } from "./compaction.ts";
import { defineScenario, type EvalScenario, ScenarioCategory } from "./scenario.ts";
import { firstProblem } from "./stateful-plumbing.ts";
import { InvalidArgumentError, NotFoundError, scenarioTool } from "./tools.ts";

const argumentTransformationStateful = defineScenario({
  id: "argument_transformation_stateful",
  category: ScenarioCategory.REASONING,
  stateful: true,
  description:
    "Create a calendar event in ISO/minutes and invite lower-cased emails; bad formats are rejected.",
  userMessage:
    "Set up 'Budget review' on 12 May 2025 at 9:30 am for 45 minutes and invite Lee.Park@Corp.IO and ZOE@corp.io.",
  reference: [
    {
      tool: "create_event",
      args: { title: "Budget review", start: "2025-05-12T09:30", duration_minutes: 45 },
    },
    { tool: "invite", args: { event_id: "EV-1", emails: ["lee.park@corp.io", "zoe@corp.io"] } },
    { tool: "confirm_event", args: { event_id: "EV-1" } },
  ],
  build: () => {
    const events: {
      id: string;
      title: string;
      start: string;
      minutes: number;
      invitees: string[];
      confirmed: boolean;
    }[] = [];
    const find = (id: string) => {
      const event = events.find((candidate) => candidate.id === id);
      if (!event) throw new NotFoundError(`No event '${id}'`);
      return event;
    };
    return {
      workflow: defineWorkflow({
        name: "calendar",
        description: "Schedule events",
        tools: [
          scenarioTool({
            name: "create_event",
            description: "Create an event. start is YYYY-MM-DDTHH:MM (24h), duration in whole minutes.",
            parameters: z.object({ title: z.string(), start: z.string(), duration_minutes: z.number() }),
            execute: ({ title, start, duration_minutes }) => {
              if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(start)) {
                throw new InvalidArgumentError(`start must be YYYY-MM-DDTHH:MM, got '${start}'`);
              }
              const event = {
                id: `EV-${events.length + 1}`,
                title,
                start,
                minutes: duration_minutes,
                invitees: [],
                confirmed: false,
              };
              events.push(event);
              return { event_id: event.id, start };
            },
          }),
          scenarioTool({
            name: "invite",
            description: "Invite people (lower-case emails) to an event",
            parameters: z.object({ event_id: z.string(), emails: z.array(z.string()) }),
            execute: ({ event_id, emails }) => {
              const event = find(event_id);
              const upper = emails.find((email) => email !== email.toLowerCase());
              if (upper) throw new InvalidArgumentError(`emails must be lower-case: '${upper}'`);
              event.invitees.push(...emails);
              return { event_id, invited: event.invitees };
            },
          }),
          scenarioTool({
            name: "confirm_event",
            description: "Confirm an event and send the invitations",
            parameters: z.object({ event_id: z.string() }),
            execute: ({ event_id }) => {
              find(event_id).confirmed = true;
              return { event_id, status: "confirmed" };
            },
          }),
        ],
        requiredSteps: ["create_event", "invite"],
        terminalTool: "confirm_event",
        systemPrompt:
          "You are a calendar assistant. Convert the user's wording into the tools' exact formats.",
      }),
      checkState: () =>
        firstProblem([
          [events.length === 1, `expected 1 event, found ${events.length}`],
          [events[0]?.start === "2025-05-12T09:30" && events[0]?.minutes === 45, "wrong start or duration"],
          [
            [...(events[0]?.invitees ?? [])].sort().join() === "lee.park@corp.io,zoe@corp.io",
            `invitees are ${JSON.stringify(events[0]?.invitees)}`,
          ],
          [events[0]?.confirmed === true, "the event is not confirmed"],
        ]),
    };
  },
  checkAnswer: (call) => expectCall(call, "confirm_event", { event_id: equals("EV-1") }),
});

const MONITORS = [
  { product_id: "M-27Q", name: "27in QHD", refresh_hz: 240, price_usd: 289 },
  { product_id: "M-24A", name: "24in FHD", refresh_hz: 75, price_usd: 229 },
  { product_id: "M-24G", name: "24in FHD gaming", refresh_hz: 165, price_usd: 239 },
  { product_id: "M-22C", name: "22in office", refresh_hz: 60, price_usd: 149 },
];

const groundedSynthesisStateful = defineScenario({
  id: "grounded_synthesis_stateful",
  category: ScenarioCategory.REASONING,
  stateful: true,
  description:
    "Buy two identical monitors under $500 with the best refresh rate: the 240 Hz lure breaks the budget.",
  userMessage:
    "Buy two identical monitors for the office, total under $500, with the highest refresh rate possible.",
  reference: [
    { tool: "list_products", args: { category: "monitor" } },
    {
      tool: "add_to_cart",
      args: { product_id: "M-24G", quantity: 2 },
      thought: "2 × 289 = 578 is over; 2 × 239 = 478 at 165 Hz.",
    },
    { tool: "checkout", args: { max_total_usd: 500 }, needs: [] },
  ],
  build: () => {
    const cart = new Map<string, number>();
    let order: { total: number } | null = null;
    const total = () =>
      [...cart].reduce(
        (sum, [id, quantity]) =>
          sum + (MONITORS.find((item) => item.product_id === id)?.price_usd ?? 0) * quantity,
        0,
      );
    return {
      workflow: defineWorkflow({
        name: "purchasing",
        description: "Buy equipment",
        tools: [
          scenarioTool({
            name: "list_products",
            description: "Products of a category with price and specs",
            parameters: z.object({ category: z.string() }),
            execute: ({ category }) => {
              if (!category.toLowerCase().startsWith("monitor"))
                throw new NotFoundError(`No category '${category}'`);
              return { category: "monitor", products: MONITORS };
            },
          }),
          scenarioTool({
            name: "add_to_cart",
            description: "Add units of a product to the cart",
            parameters: z.object({ product_id: z.string(), quantity: z.number() }),
            execute: ({ product_id, quantity }) => {
              if (!MONITORS.some((item) => item.product_id === product_id))
                throw new NotFoundError(`No product '${product_id}'`);
              cart.set(product_id, (cart.get(product_id) ?? 0) + quantity);
              return { cart: Object.fromEntries(cart), total_usd: total() };
            },
          }),
          scenarioTool({
            name: "checkout",
            description: "Place the order; fails when the cart total exceeds max_total_usd",
            parameters: z.object({ max_total_usd: z.number() }),
            execute: ({ max_total_usd }) => {
              const sum = total();
              if (sum > max_total_usd)
                throw new InvalidArgumentError(`cart total ${sum} exceeds ${max_total_usd}`);
              order = { total: sum };
              return { status: "ordered", total_usd: sum };
            },
          }),
        ],
        requiredSteps: ["list_products", "add_to_cart"],
        terminalTool: "checkout",
        systemPrompt: "You are a purchasing assistant. Respect the user's constraints exactly.",
      }),
      checkState: () =>
        firstProblem([
          [
            JSON.stringify(Object.fromEntries(cart)) === '{"M-24G":2}',
            `cart is ${JSON.stringify(Object.fromEntries(cart))}`,
          ],
          [order !== null && (order as { total: number }).total === 478, "no order for $478"],
        ]),
    };
  },
  checkAnswer: (call) => expectCall(call, "checkout", { max_total_usd: near(500, 0.5) }),
});

const compactionStressStateful = defineScenario({
  id: "compaction_stress_stateful",
  category: ScenarioCategory.COMPACTION,
  stateful: true,
  description:
    "Migrate three batches (large logs) under 2048 tokens: each batch exactly once, then finalize.",
  userMessage: "Migrate customer batches 1, 2 and 3 to the new database, then finalize the migration.",
  budgetTokens: 2048,
  reference: [
    { tool: "migrate_batch", args: { batch: 1 }, needs: [] },
    { tool: "migrate_batch", args: { batch: 2 }, needs: [] },
    { tool: "migrate_batch", args: { batch: 3 }, needs: [] },
    { tool: "finalize_migration", args: { batches: [1, 2, 3] } },
  ],
  build: () => {
    const migrated: number[] = [];
    let finalized = false;
    return {
      workflow: defineWorkflow({
        name: "migration",
        description: "Migrate data in batches",
        tools: [
          scenarioTool({
            name: "migrate_batch",
            description: "Migrate one batch (1-3); returns a large log",
            parameters: z.object({ batch: z.number() }),
            execute: ({ batch }) => {
              if (![1, 2, 3].includes(batch)) throw new NotFoundError(`No batch ${batch}`);
              migrated.push(batch);
              return padded({ batch, rows: 1200 * batch, status: "migrated" }, `batch${batch}`, 52);
            },
          }),
          scenarioTool({
            name: "finalize_migration",
            description: "Finalize once every batch is migrated",
            parameters: z.object({ batches: z.array(z.number()) }),
            execute: ({ batches }) => {
              const missing = [1, 2, 3].filter((batch) => !migrated.includes(batch));
              if (missing.length > 0)
                throw new InvalidArgumentError(`batches not migrated yet: ${missing.join(", ")}`);
              finalized = true;
              return { status: "finalized", batches };
            },
          }),
        ],
        requiredSteps: ["migrate_batch"],
        terminalTool: "finalize_migration",
        systemPrompt: "You run data migrations. Migrate each batch exactly once, then finalize.",
      }),
      checkState: () =>
        firstProblem([
          [[...migrated].sort().join() === "1,2,3", `migrated batches ${JSON.stringify(migrated)}`],
          [finalized, "the migration was not finalized"],
        ]),
    };
  },
  checkAnswer: (call) => expectCall(call, "finalize_migration", { batches: sameSet([1, 2, 3]) }),
});

const BIN_COUNTS: Record<string, { system: number; counted: number }> = {
  "B-1": { system: 40, counted: 40 },
  "B-2": { system: 25, counted: 22 },
  "B-3": { system: 12, counted: 12 },
  "B-4": { system: 8, counted: 10 },
};

const inventoryAudit = defineScenario({
  id: "inventory_audit",
  category: ScenarioCategory.COMPACTION,
  stateful: true,
  description:
    "Count four bins (large scan logs) and record each discrepancy exactly once under a tight budget.",
  userMessage:
    "Audit bins B-1 to B-4: count each, record a discrepancy (counted minus system) for every bin that does not match, then submit the audit.",
  budgetTokens: 1400,
  reference: [
    { tool: "count_bin", args: { bin: "B-1" }, needs: [] },
    { tool: "count_bin", args: { bin: "B-2" }, needs: [] },
    { tool: "record_discrepancy", args: { bin: "B-2", delta: -3 } },
    { tool: "count_bin", args: { bin: "B-3" }, needs: [] },
    { tool: "count_bin", args: { bin: "B-4" }, needs: [] },
    { tool: "record_discrepancy", args: { bin: "B-4", delta: 2 } },
    { tool: "submit_audit", args: { bins_checked: ["B-1", "B-2", "B-3", "B-4"] }, needs: [] },
  ],
  build: () => {
    const discrepancies: string[] = [];
    const counted = new Set<string>();
    return {
      workflow: defineWorkflow({
        name: "bin_audit",
        description: "Audit warehouse bins",
        tools: [
          scenarioTool({
            name: "count_bin",
            description: "Scan a bin; returns system and counted quantities and a large scan log",
            parameters: z.object({ bin: z.string() }),
            execute: ({ bin }) => {
              const row = BIN_COUNTS[bin.toUpperCase()];
              if (!row) throw new NotFoundError(`No bin '${bin}'`);
              counted.add(bin.toUpperCase());
              return padded(
                { bin: bin.toUpperCase(), system_quantity: row.system, counted_quantity: row.counted },
                "scan",
                26,
              );
            },
          }),
          scenarioTool({
            name: "record_discrepancy",
            description: "Record a bin's discrepancy (counted minus system)",
            parameters: z.object({ bin: z.string(), delta: z.number() }),
            execute: ({ bin, delta }) => {
              discrepancies.push(`${bin.toUpperCase()}:${delta}`);
              return { status: "recorded", bin, delta };
            },
          }),
          scenarioTool({
            name: "submit_audit",
            description: "Submit the audit",
            parameters: z.object({ bins_checked: z.array(z.string()) }),
            execute: ({ bins_checked }) => ({ status: "submitted", bins_checked }),
          }),
        ],
        requiredSteps: ["count_bin", "record_discrepancy"],
        terminalTool: "submit_audit",
        systemPrompt:
          "You are an inventory auditor. Count every bin, record each mismatch once, then submit.",
      }),
      checkState: () =>
        firstProblem([
          [counted.size === 4, `counted ${counted.size} of 4 bins`],
          [
            [...discrepancies].sort().join() === "B-2:-3,B-4:2",
            `discrepancies were [${discrepancies.join(", ")}]`,
          ],
        ]),
    };
  },
  checkAnswer: (call) =>
    expectCall(call, "submit_audit", { bins_checked: sameSet(["B-1", "B-2", "B-3", "B-4"]) }),
});

/** Stateful reasoning and compaction scenarios. */
export const STATEFUL_REASONING_SCENARIOS: readonly EvalScenario[] = [
  argumentTransformationStateful,
  groundedSynthesisStateful,
  compactionStressStateful,
  inventoryAudit,
];
