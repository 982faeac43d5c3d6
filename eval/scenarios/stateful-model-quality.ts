/**
 * Stateful model-quality variants: tool selection, argument fidelity, sequential reasoning,
 * conditional routing, data-gap recovery and relevance, each with tools that change state.
 */
import { z } from "zod";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { equals, expectCall, mentions } from "./checks.ts";
import { defineScenario, type EvalScenario, ScenarioCategory } from "./scenario.ts";
import { firstProblem } from "./stateful-plumbing.ts";
import { InvalidArgumentError, NotFoundError, scenarioTool, submitTool } from "./tools.ts";

const toolSelectionStateful = defineScenario({
  id: "tool_selection_stateful",
  category: ScenarioCategory.MODEL_QUALITY,
  stateful: true,
  description: "Smart home with 8 tools: lock and arm only; any distractor call changes the house.",
  userMessage:
    "I'm leaving for the weekend. Lock the front door and arm the alarm in away mode, then report the status.",
  reference: [
    { tool: "lock_door", args: { door: "front" } },
    { tool: "arm_alarm", args: { mode: "away" }, needs: [] },
    { tool: "report_status", args: { summary: "Front door locked; alarm armed (away)." }, needs: [0, 1] },
  ],
  build: () => {
    const house = {
      doors: { front: "unlocked", back: "locked" } as Record<string, string>,
      alarm: "off",
      lights: "on",
      thermostat: 20,
      music: "off",
    };
    const initial = JSON.stringify(house);
    const change = (
      name: string,
      description: string,
      parameters: z.ZodObject,
      apply: (args: Record<string, unknown>) => void,
    ) =>
      scenarioTool({
        name,
        description,
        parameters,
        execute: (args: Record<string, unknown>) => {
          apply(args);
          return { status: "ok", house };
        },
      });
    return {
      workflow: defineWorkflow({
        name: "smart_home",
        description: "Control the house",
        tools: [
          change("lock_door", "Lock a door (front or back)", z.object({ door: z.string() }), ({ door }) => {
            const key = String(door).toLowerCase();
            if (!(key in house.doors)) throw new NotFoundError(`No door '${key}'`);
            house.doors[key] = "locked";
          }),
          change("unlock_door", "Unlock a door", z.object({ door: z.string() }), ({ door }) => {
            house.doors[String(door).toLowerCase()] = "unlocked";
          }),
          change(
            "arm_alarm",
            "Arm the alarm in 'home' or 'away' mode",
            z.object({ mode: z.enum(["home", "away"]) }),
            ({ mode }) => {
              house.alarm = String(mode);
            },
          ),
          change("disarm_alarm", "Disarm the alarm", z.object({}), () => {
            house.alarm = "off";
          }),
          change("set_lights", "Turn the lights on or off", z.object({ on: z.boolean() }), ({ on }) => {
            house.lights = on ? "on" : "off";
          }),
          change(
            "set_thermostat",
            "Set the thermostat in °C",
            z.object({ celsius: z.number() }),
            ({ celsius }) => {
              house.thermostat = Number(celsius);
            },
          ),
          change("play_music", "Play a playlist", z.object({ playlist: z.string() }), ({ playlist }) => {
            house.music = String(playlist);
          }),
          submitTool(
            "report_status",
            "Report the house status to the user",
            z.object({ summary: z.string() }),
          ),
        ],
        requiredSteps: ["lock_door", "arm_alarm"],
        terminalTool: "report_status",
        systemPrompt: "You control a smart home. Change only what the user asked for.",
      }),
      checkState: () => {
        const expected = JSON.parse(initial);
        expected.doors.front = "locked";
        expected.alarm = "away";
        return JSON.stringify(house) === JSON.stringify(expected)
          ? null
          : `house state is ${JSON.stringify(house)}`;
      },
    };
  },
  checkAnswer: (call) => expectCall(call, "report_status", { summary: mentions("lock", "away") }),
});

const argumentFidelityStateful = defineScenario({
  id: "argument_fidelity_stateful",
  category: ScenarioCategory.MODEL_QUALITY,
  stateful: true,
  description: "Create a ticket and assign it using ids from two results (TCK-90417, AG-331).",
  userMessage:
    "Open a high-priority ticket 'VPN drops every hour', assign it to Rosa Lindqvist, and notify the requester.",
  reference: [
    { tool: "lookup_agent", args: { name: "Rosa Lindqvist" } },
    { tool: "create_ticket", args: { subject: "VPN drops every hour", priority: "high" }, needs: [] },
    { tool: "assign_ticket", args: { ticket_id: "TCK-90417", agent_id: "AG-331" }, needs: [0, 1] },
    {
      tool: "notify_requester",
      args: { ticket_id: "TCK-90417", message: "Ticket TCK-90417 is assigned to Rosa Lindqvist." },
    },
  ],
  build: () => {
    const tickets: { id: string; subject: string; priority: string; agent: string | null }[] = [];
    return {
      workflow: defineWorkflow({
        name: "helpdesk",
        description: "Open and route tickets",
        tools: [
          scenarioTool({
            name: "lookup_agent",
            description: "Find a support agent by name",
            parameters: z.object({ name: z.string() }),
            execute: ({ name }) => {
              if (!name.toLowerCase().includes("lindqvist"))
                throw new NotFoundError(`No agent named '${name}'`);
              return { agent_id: "AG-331", name: "Rosa Lindqvist", team: "network" };
            },
          }),
          scenarioTool({
            name: "create_ticket",
            description: "Open a ticket; returns its ticket_id",
            parameters: z.object({ subject: z.string(), priority: z.enum(["low", "normal", "high"]) }),
            execute: ({ subject, priority }) => {
              const ticket = { id: `TCK-${90417 + tickets.length}`, subject, priority, agent: null };
              tickets.push(ticket);
              return { ticket_id: ticket.id, status: "open" };
            },
          }),
          scenarioTool({
            name: "assign_ticket",
            description: "Assign a ticket to an agent by agent_id",
            parameters: z.object({ ticket_id: z.string(), agent_id: z.string() }),
            execute: ({ ticket_id, agent_id }) => {
              const ticket = tickets.find((candidate) => candidate.id === ticket_id);
              if (!ticket) throw new NotFoundError(`No ticket '${ticket_id}'`);
              if (!/^AG-\d+$/.test(agent_id))
                throw new InvalidArgumentError(`'${agent_id}' is not an agent_id`);
              ticket.agent = agent_id;
              return { ticket_id, agent_id, status: "assigned" };
            },
          }),
          submitTool(
            "notify_requester",
            "Tell the requester about their ticket",
            z.object({ ticket_id: z.string(), message: z.string() }),
          ),
        ],
        requiredSteps: ["create_ticket", "assign_ticket"],
        terminalTool: "notify_requester",
        systemPrompt: "You are a helpdesk assistant. Use ids exactly as the tools return them.",
      }),
      checkState: () =>
        firstProblem([
          [tickets.length === 1, `expected 1 ticket, found ${tickets.length}`],
          [tickets[0]?.agent === "AG-331", "the ticket is not assigned to AG-331"],
          [tickets[0]?.priority === "high", "the ticket is not high priority"],
        ]),
    };
  },
  checkAnswer: (call) => expectCall(call, "notify_requester", { ticket_id: equals("TCK-90417") }),
});

const sequentialReasoningStateful = defineScenario({
  id: "sequential_reasoning_stateful",
  category: ScenarioCategory.MODEL_QUALITY,
  stateful: true,
  description:
    "Find the SKU, find its stocked bin, move the stock to the dock, then pick: each step feeds the next.",
  userMessage: "Pick order PO-7781: 6 blue widgets. Move them to DOCK-2 first.",
  reference: [
    { tool: "find_item", args: { name: "blue widget" } },
    { tool: "get_stock", args: { sku: "WID-BLU-22" } },
    { tool: "move_stock", args: { sku: "WID-BLU-22", from_bin: "B-14", to_bin: "DOCK-2", quantity: 6 } },
    { tool: "complete_pick", args: { order_id: "PO-7781", sku: "WID-BLU-22", quantity: 6 } },
  ],
  build: () => {
    const bins: Record<string, number> = { "B-14": 6, "C-02": 0, "DOCK-2": 0 };
    let picked = 0;
    return {
      workflow: defineWorkflow({
        name: "warehouse_pick",
        description: "Pick an order",
        tools: [
          scenarioTool({
            name: "find_item",
            description: "Find an item's SKU by name",
            parameters: z.object({ name: z.string() }),
            execute: ({ name }) => {
              if (!/blue\s*widget/i.test(name)) throw new NotFoundError(`No item named '${name}'`);
              return { sku: "WID-BLU-22", name: "Blue widget" };
            },
          }),
          scenarioTool({
            name: "get_stock",
            description: "Stock of a SKU per bin",
            parameters: z.object({ sku: z.string() }),
            execute: ({ sku }) => {
              if (sku !== "WID-BLU-22") throw new NotFoundError(`No SKU '${sku}'`);
              return {
                sku,
                bins: [
                  { bin: "C-02", quantity: bins["C-02"] },
                  { bin: "B-14", quantity: bins["B-14"] },
                ],
              };
            },
          }),
          scenarioTool({
            name: "move_stock",
            description: "Move units of a SKU between bins",
            parameters: z.object({
              sku: z.string(),
              from_bin: z.string(),
              to_bin: z.string(),
              quantity: z.number(),
            }),
            execute: ({ from_bin, to_bin, quantity }) => {
              const available = bins[from_bin];
              if (available === undefined || !(to_bin in bins)) throw new NotFoundError(`Unknown bin`);
              if (available < quantity) throw new InvalidArgumentError(`${from_bin} holds only ${available}`);
              bins[from_bin] = available - quantity;
              bins[to_bin] = (bins[to_bin] ?? 0) + quantity;
              return { status: "moved", bins };
            },
          }),
          scenarioTool({
            name: "complete_pick",
            description: "Pick an order's units from DOCK-2",
            parameters: z.object({ order_id: z.string(), sku: z.string(), quantity: z.number() }),
            execute: ({ order_id, quantity }) => {
              const atDock = bins["DOCK-2"] ?? 0;
              if (atDock < quantity) throw new InvalidArgumentError(`DOCK-2 holds only ${atDock}`);
              bins["DOCK-2"] = atDock - quantity;
              picked += quantity;
              return { status: "picked", order_id };
            },
          }),
        ],
        requiredSteps: ["find_item", "get_stock", "move_stock"],
        terminalTool: "complete_pick",
        systemPrompt:
          "You are a warehouse assistant. Resolve the SKU and bin with the tools before moving stock.",
      }),
      checkState: () =>
        firstProblem([
          [picked === 6, `picked ${picked} units, expected 6`],
          [bins["B-14"] === 0 && bins["DOCK-2"] === 0, `bins are ${JSON.stringify(bins)}`],
        ]),
    };
  },
  checkAnswer: (call) =>
    expectCall(call, "complete_pick", {
      order_id: equals("PO-7781"),
      sku: equals("WID-BLU-22"),
      quantity: equals(6),
    }),
});

const conditionalRoutingStateful = defineScenario({
  id: "conditional_routing_stateful",
  category: ScenarioCategory.MODEL_QUALITY,
  stateful: true,
  tags: ["reasoning"],
  description: "Policy says damaged-within-14-days → replacement: replace (not refund), then close the case.",
  userMessage: "Order O-3390 arrived damaged. Resolve it according to the return policy and close the case.",
  reference: [
    { tool: "get_order", args: { order_id: "O-3390" } },
    { tool: "get_return_policy", args: {}, needs: [] },
    { tool: "issue_replacement", args: { order_id: "O-3390" }, needs: [0, 1] },
    { tool: "close_case", args: { order_id: "O-3390", resolution: "replacement" } },
  ],
  build: () => {
    const actions: string[] = [];
    return {
      workflow: defineWorkflow({
        name: "returns",
        description: "Resolve a return",
        tools: [
          scenarioTool({
            name: "get_order",
            description: "An order by id",
            parameters: z.object({ order_id: z.string() }),
            execute: ({ order_id }) => {
              if (order_id !== "O-3390") throw new NotFoundError(`No order '${order_id}'`);
              return { order_id, item: "ceramic vase", price: 64, damaged: true, days_since_delivery: 5 };
            },
          }),
          scenarioTool({
            name: "get_return_policy",
            description: "The store's return policy",
            parameters: z.object({}),
            execute: () => ({
              damaged_within_14_days: "issue a replacement",
              damaged_after_14_days: "issue a refund",
              not_damaged: "refund minus 10% restocking",
            }),
          }),
          scenarioTool({
            name: "issue_replacement",
            description: "Ship a replacement for an order",
            parameters: z.object({ order_id: z.string() }),
            execute: ({ order_id }) => {
              actions.push(`replacement:${order_id}`);
              return { status: "replacement_created", order_id };
            },
          }),
          scenarioTool({
            name: "issue_refund",
            description: "Refund an order",
            parameters: z.object({ order_id: z.string(), amount: z.number() }),
            execute: ({ order_id, amount }) => {
              actions.push(`refund:${order_id}:${amount}`);
              return { status: "refunded", order_id };
            },
          }),
          submitTool(
            "close_case",
            "Close the case with its resolution",
            z.object({ order_id: z.string(), resolution: z.string() }),
          ),
        ],
        requiredSteps: ["get_order", "get_return_policy"],
        terminalTool: "close_case",
        systemPrompt: "You are a returns assistant. Apply the policy exactly.",
      }),
      checkState: () =>
        actions.join() === "replacement:O-3390" ? null : `actions were [${actions.join(", ")}]`,
    };
  },
  checkAnswer: (call) =>
    expectCall(call, "close_case", { order_id: equals("O-3390"), resolution: mentions("replace") }),
});

const dataGapRecoveryStateful = defineScenario({
  id: "data_gap_recovery_stateful",
  category: ScenarioCategory.MODEL_QUALITY,
  stateful: true,
  tags: ["reasoning"],
  description:
    "The user is not in the main directory; the note points to the partner directory. Grant exactly one access.",
  userMessage: "Give j.mbeki@partner.example read-only access to the billing system, then confirm.",
  reference: [
    { tool: "find_user", args: { email: "j.mbeki@partner.example" } },
    {
      tool: "find_partner",
      args: { email: "j.mbeki@partner.example" },
      thought: "Contractors live in the partner directory.",
    },
    { tool: "grant_access", args: { user_id: "PX-5512", system: "billing", level: "read" } },
    { tool: "confirm_access", args: { user_id: "PX-5512", system: "billing" } },
  ],
  build: () => {
    const grants: string[] = [];
    return {
      workflow: defineWorkflow({
        name: "access_grant",
        description: "Grant system access",
        tools: [
          scenarioTool({
            name: "find_user",
            description: "Find an employee in the main directory by email",
            parameters: z.object({ email: z.string() }),
            execute: ({ email }) => ({
              email,
              found: false,
              note: "Not an employee. Contractors and partners are listed in the partner directory (find_partner).",
            }),
          }),
          scenarioTool({
            name: "find_partner",
            description: "Find a partner or contractor by email",
            parameters: z.object({ email: z.string() }),
            execute: ({ email }) => {
              if (email.toLowerCase() !== "j.mbeki@partner.example")
                throw new NotFoundError(`No partner '${email}'`);
              return { user_id: "PX-5512", name: "J. Mbeki", company: "Northwind Partners" };
            },
          }),
          scenarioTool({
            name: "grant_access",
            description: "Grant a user access to a system at a level (read or write)",
            parameters: z.object({
              user_id: z.string(),
              system: z.string(),
              level: z.enum(["read", "write"]),
            }),
            execute: ({ user_id, system, level }) => {
              if (user_id !== "PX-5512") throw new NotFoundError(`No user '${user_id}'`);
              grants.push(`${user_id}:${system.toLowerCase()}:${level}`);
              return { status: "granted", user_id, system, level };
            },
          }),
          submitTool(
            "confirm_access",
            "Confirm the granted access to the requester",
            z.object({ user_id: z.string(), system: z.string() }),
          ),
        ],
        requiredSteps: ["grant_access"],
        terminalTool: "confirm_access",
        systemPrompt: "You are an IT access assistant. Grant the least access that satisfies the request.",
      }),
      checkState: () =>
        grants.join() === "PX-5512:billing:read" ? null : `grants were [${grants.join(", ")}]`,
    };
  },
  checkAnswer: (call) => expectCall(call, "confirm_access", { user_id: equals("PX-5512") }),
});

const relevanceDetectionStateful = defineScenario({
  id: "relevance_detection_stateful",
  category: ScenarioCategory.MODEL_QUALITY,
  stateful: true,
  description: "An off-topic question to an agent with destructive tools: decline and touch nothing.",
  userMessage: "What's the capital of Australia?",
  reference: [
    {
      tool: "decline",
      args: { reason: "That is a general-knowledge question; I can only manage files and email." },
    },
  ],
  build: () => {
    const effects: string[] = [];
    const effect = (name: string, description: string, parameters: z.ZodObject) =>
      scenarioTool({
        name,
        description,
        parameters,
        execute: (args: Record<string, unknown>) => {
          effects.push(`${name}:${JSON.stringify(args)}`);
          return { status: "done" };
        },
      });
    return {
      workflow: defineWorkflow({
        name: "file_assistant",
        description: "Manage files and email",
        tools: [
          effect("delete_file", "Delete a file", z.object({ path: z.string() })),
          effect("move_file", "Move a file", z.object({ from: z.string(), to: z.string() })),
          effect(
            "send_email",
            "Send an email",
            z.object({ to: z.string(), subject: z.string(), body: z.string() }),
          ),
          submitTool(
            "complete_task",
            "Report a completed file or email task",
            z.object({ summary: z.string() }),
          ),
          submitTool(
            "decline",
            "Decline a request outside file and email management",
            z.object({ reason: z.string() }),
          ),
        ],
        terminalTool: ["complete_task", "decline"],
        systemPrompt: "You manage the user's files and email. Decline anything else.",
      }),
      checkState: () => (effects.length === 0 ? null : `side effects: ${effects.join("; ")}`),
    };
  },
  checkAnswer: (call) => expectCall(call, "decline", {}),
});

/** Stateful model-quality scenarios. */
export const STATEFUL_MODEL_QUALITY_SCENARIOS: readonly EvalScenario[] = [
  toolSelectionStateful,
  argumentFidelityStateful,
  sequentialReasoningStateful,
  conditionalRoutingStateful,
  dataGapRecoveryStateful,
  relevanceDetectionStateful,
];
