/**
 * Scenarios the design's list names that the first set lacked: the ToolResolutionError variant
 * of the basic stateful scenario, a stateful phase-2 compaction audit, a supplier deep dive, a
 * longer data-gap recovery (plain and stateful) and a stateful inconsistent-API recovery.
 */
import { z } from "zod";
import { ToolResolutionError } from "../../src/core/errors.ts";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { equals, expectCall, mentions, near, sameSet, sameText } from "./checks.ts";
import { padded } from "./compaction.ts";
import { trackShipmentTool } from "./model-quality.ts";
import { defineScenario, type EvalScenario, ScenarioCategory } from "./scenario.ts";
import { firstProblem } from "./stateful-plumbing.ts";
import { InvalidArgumentError, NotFoundError, rowOf, scenarioTool, submitTool } from "./tools.ts";

const basic2StepStatefulTre = defineScenario({
  id: "basic_2step_stateful_tre",
  category: ScenarioCategory.PLUMBING,
  stateful: true,
  description:
    "Find a note by its exact title, then share it: a title that does not resolve is a ToolResolutionError (fed back, not counted as a tool error).",
  userMessage: "Share my standup note with kai@example.com.",
  reference: [
    { tool: "find_note", args: { title: "Standup" }, thought: "The note is titled Standup.", needs: [] },
    { tool: "share_note", args: { note_id: "N-7", email: "kai@example.com" } },
  ],
  build: () => {
    const notes = [
      { id: "N-7", title: "Standup", sharedWith: [] as string[] },
      { id: "N-8", title: "Retro", sharedWith: [] as string[] },
    ];
    const titles = notes.map((note) => note.title).join(", ");
    return {
      workflow: defineWorkflow({
        name: "notes_share",
        description: "Find and share notes",
        tools: [
          scenarioTool({
            name: "find_note",
            description: "Find a note by its exact title; returns its note_id",
            parameters: z.object({ title: z.string() }),
            execute: ({ title }) => {
              const note = notes.find(
                (candidate) => candidate.title.toLowerCase() === title.trim().toLowerCase(),
              );
              if (!note)
                throw new ToolResolutionError(`No note titled '${title}'. Titles: ${titles}`, "find_note");
              return { note_id: note.id, title: note.title };
            },
          }),
          scenarioTool({
            name: "share_note",
            description: "Share a note with someone by email. Call this last.",
            parameters: z.object({ note_id: z.string(), email: z.string() }),
            execute: ({ note_id, email }) => {
              const note = notes.find((candidate) => candidate.id === note_id);
              if (!note) {
                throw new ToolResolutionError(
                  `No note '${note_id}': look its id up with find_note first`,
                  "share_note",
                );
              }
              note.sharedWith.push(email.toLowerCase());
              return { status: "shared", note_id, email };
            },
          }),
        ],
        requiredSteps: ["find_note"],
        terminalTool: "share_note",
        systemPrompt: "You manage the user's notes. Look notes up by their exact title before sharing them.",
      }),
      checkState: () =>
        firstProblem([
          [
            notes[0]?.sharedWith.join() === "kai@example.com",
            "Standup is not shared with kai@example.com only",
          ],
          [notes[1]?.sharedWith.length === 0, "Retro was shared"],
        ]),
    };
  },
  checkAnswer: (call) =>
    expectCall(call, "share_note", { note_id: equals("N-7"), email: sameText("kai@example.com") }),
});

const AUDITED: Record<
  string,
  { supplier_id: string; name: string; cert_expires: string; on_time_pct: number }
> = {
  "S-11": { supplier_id: "S-11", name: "Brightwater Steel", cert_expires: "2025-08-31", on_time_pct: 93 },
  "S-12": { supplier_id: "S-12", name: "Kestrel Polymers", cert_expires: "2024-01-31", on_time_pct: 96 },
  "S-13": { supplier_id: "S-13", name: "Tamsin Foundry", cert_expires: "2026-02-28", on_time_pct: 74 },
  "S-14": { supplier_id: "S-14", name: "Oakridge Bolts", cert_expires: "2025-03-31", on_time_pct: 88 },
};

const phase2CompactionStateful = defineScenario({
  id: "phase2_compaction_stateful",
  category: ScenarioCategory.COMPACTION,
  stateful: true,
  tags: ["reasoning"],
  description:
    "Audit four suppliers (large records) under a budget that needs phase-2 compaction, flagging each failing one exactly once.",
  userMessage:
    "Audit suppliers S-11 to S-14 as of 2024-06-01: flag every supplier whose certification has expired or whose on-time rate is under 80% (one flag each, with the reason), then submit the audit.",
  budgetTokens: 1000,
  reference: [
    { tool: "get_supplier", args: { supplier_id: "S-11" }, needs: [] },
    { tool: "get_supplier", args: { supplier_id: "S-12" }, needs: [] },
    { tool: "flag_supplier", args: { supplier_id: "S-12", reason: "certification expired 2024-01-31" } },
    { tool: "get_supplier", args: { supplier_id: "S-13" }, needs: [] },
    { tool: "flag_supplier", args: { supplier_id: "S-13", reason: "on-time rate 74%" } },
    { tool: "get_supplier", args: { supplier_id: "S-14" }, needs: [] },
    {
      tool: "submit_audit",
      args: { suppliers_checked: ["S-11", "S-12", "S-13", "S-14"] },
      thought: "S-12 and S-13 are flagged; S-11 and S-14 pass.",
      needs: [],
    },
  ],
  build: () => {
    const flags: string[] = [];
    const reviewed = new Set<string>();
    return {
      workflow: defineWorkflow({
        name: "supplier_audit_flags",
        description: "Audit suppliers and flag the failing ones",
        tools: [
          scenarioTool({
            name: "get_supplier",
            description: "A supplier's record (large)",
            parameters: z.object({ supplier_id: z.string() }),
            execute: ({ supplier_id }) => {
              const row = rowOf(AUDITED, supplier_id, "supplier");
              reviewed.add(row.supplier_id);
              return padded(row, "delivery", 14);
            },
          }),
          scenarioTool({
            name: "flag_supplier",
            description: "Flag a supplier that fails the audit, with the reason",
            parameters: z.object({ supplier_id: z.string(), reason: z.string() }),
            execute: ({ supplier_id, reason }) => {
              if (!reviewed.has(supplier_id.toUpperCase())) {
                throw new InvalidArgumentError(`Review ${supplier_id} with get_supplier before flagging it`);
              }
              flags.push(supplier_id.toUpperCase());
              return { status: "flagged", supplier_id, reason };
            },
          }),
          submitTool(
            "submit_audit",
            "Submit the audit with every supplier checked",
            z.object({ suppliers_checked: z.array(z.string()) }),
          ),
        ],
        requiredSteps: ["get_supplier", "flag_supplier"],
        terminalTool: "submit_audit",
        systemPrompt:
          "You are a procurement auditor. Review every supplier, flag each failing one once, then submit.",
      }),
      checkState: () =>
        firstProblem([
          [reviewed.size === 4, `reviewed ${reviewed.size} of 4 suppliers`],
          [[...flags].sort().join() === "S-12,S-13", `flags were [${flags.join(", ")}]`],
        ]),
    };
  },
  checkAnswer: (call) =>
    expectCall(call, "submit_audit", { suppliers_checked: sameSet(["S-11", "S-12", "S-13", "S-14"]) }),
});

const DEEP_DIVE = {
  profile: { supplier_id: "S-31", name: "Calder Components", category: "machined parts", since: "2019-04" },
  deliveries: { supplier_id: "S-31", shipments_12m: 48, late_12m: 11, on_time_pct: 77 },
  quality: { supplier_id: "S-31", lots_inspected: 40, lots_rejected: 2, defect_rate_pct: 1.9 },
  contract: {
    supplier_id: "S-31",
    contract_id: "CT-5520",
    probation_rule: "probation when on-time rate is under 85% or defect rate is over 3%",
  },
};

const supplierDeepDive = defineScenario({
  id: "supplier_deep_dive",
  category: ScenarioCategory.COMPACTION,
  stateful: true,
  tags: ["reasoning"],
  description:
    "Four large records about one supplier under a tight budget; the decision needs facts from the first ones after compaction.",
  userMessage:
    "Do a deep dive on supplier S-31: read its profile, delivery history, quality reports and contract, apply the contract's probation rule, record the decision, then submit the review.",
  budgetTokens: 1000,
  reference: [
    { tool: "get_profile", args: { supplier_id: "S-31" }, needs: [] },
    { tool: "get_deliveries", args: { supplier_id: "S-31" }, needs: [] },
    { tool: "get_quality", args: { supplier_id: "S-31" }, needs: [] },
    { tool: "get_contract", args: { supplier_id: "S-31" }, needs: [] },
    {
      tool: "record_decision",
      args: { supplier_id: "S-31", decision: "probation", reason: "on-time rate 77% is under 85%" },
      thought: "On-time 77% < 85% → probation; the defect rate 1.9% is within 3%.",
      needs: [],
    },
    {
      tool: "submit_review",
      args: {
        supplier_id: "S-31",
        decision: "probation",
        summary: "Calder Components: on-time 77% (under 85%), defects 1.9%: probation under CT-5520.",
      },
      needs: [],
    },
  ],
  build: () => {
    const decisions: string[] = [];
    const lookup = (part: keyof typeof DEEP_DIVE, lines: number) =>
      scenarioTool({
        name: `get_${part}`,
        description: `The supplier's ${part} record (large)`,
        parameters: z.object({ supplier_id: z.string() }),
        execute: ({ supplier_id }) => {
          if (supplier_id.toUpperCase() !== "S-31") throw new NotFoundError(`No supplier '${supplier_id}'`);
          return padded(DEEP_DIVE[part], part, lines);
        },
      });
    return {
      workflow: defineWorkflow({
        name: "supplier_deep_dive",
        description: "Review one supplier in depth",
        tools: [
          lookup("profile", 8),
          lookup("deliveries", 18),
          lookup("quality", 18),
          lookup("contract", 8),
          scenarioTool({
            name: "record_decision",
            description: "Record the review decision (keep, probation or terminate) with its reason",
            parameters: z.object({
              supplier_id: z.string(),
              decision: z.enum(["keep", "probation", "terminate"]),
              reason: z.string(),
            }),
            execute: ({ supplier_id, decision, reason }) => {
              decisions.push(`${supplier_id.toUpperCase()}:${decision}`);
              return { status: "recorded", supplier_id, decision, reason };
            },
          }),
          submitTool(
            "submit_review",
            "Submit the review",
            z.object({ supplier_id: z.string(), decision: z.string(), summary: z.string() }),
          ),
        ],
        requiredSteps: ["get_profile", "get_deliveries", "get_quality", "get_contract", "record_decision"],
        terminalTool: "submit_review",
        systemPrompt:
          "You are a supplier-quality reviewer. Read every record, apply the contract's rule exactly, record one decision, then submit.",
      }),
      checkState: () =>
        decisions.join() === "S-31:probation" ? null : `decisions were [${decisions.join(", ")}]`,
    };
  },
  checkAnswer: (call) =>
    expectCall(call, "submit_review", {
      supplier_id: sameText("S-31"),
      decision: sameText("probation"),
      summary: mentions("77"),
    }),
});

const CARRIER_RECORDS = {
  "NF-88213": {
    reference: "NF-88213",
    carrier: "NorthFreight",
    location: "Rotterdam hub",
    eta: "2024-06-18",
  },
};

/** The dead-end chain of the extended data-gap scenarios: live tracking → archive → partner carrier. */
const dataGapTools = () => [
  trackShipmentTool(),
  scenarioTool({
    name: "archive_lookup",
    description: "Archived shipment records",
    parameters: z.object({ tracking: z.string() }),
    execute: ({ tracking }) => {
      if (tracking.trim().toUpperCase() !== "ZX-5120")
        throw new NotFoundError(`No archived shipment '${tracking}'`);
      return {
        tracking: "ZX-5120",
        status: "handed_over",
        promised_by: "2024-06-14",
        note: "Handed over to partner carrier NorthFreight under reference NF-88213: call carrier_lookup with that reference for the current position.",
      };
    },
  }),
  scenarioTool({
    name: "carrier_lookup",
    description: "A partner carrier's record by its own reference",
    parameters: z.object({ reference: z.string() }),
    execute: ({ reference }) => rowOf(CARRIER_RECORDS, reference.trim().toUpperCase(), "carrier reference"),
  }),
  scenarioTool({
    name: "customs_status",
    description: "Customs clearance of an international shipment",
    parameters: z.object({ tracking: z.string() }),
    execute: ({ tracking }) => ({ tracking, customs: "not applicable (domestic EU shipment)" }),
  }),
];

const CHAIN_STEPS = [
  { tool: "track_shipment", args: { tracking: "ZX-5120" } },
  { tool: "archive_lookup", args: { tracking: "ZX-5120" }, thought: "The note says to use the archive." },
  {
    tool: "carrier_lookup",
    args: { reference: "NF-88213" },
    thought: "Handed over to NorthFreight, NF-88213.",
  },
] as const;

const REPLY =
  "Your shipment ZX-5120 is with NorthFreight (NF-88213) at the Rotterdam hub, arriving 2024-06-18.";

const dataGapRecoveryExtended = defineScenario({
  id: "data_gap_recovery_extended",
  category: ScenarioCategory.MODEL_QUALITY,
  tags: ["reasoning"],
  description:
    "Two dead ends in a row (live tracking, then the archive) each name the next tool: follow both and answer.",
  userMessage: "Where is shipment ZX-5120 and when will it arrive? Reply to the customer.",
  reference: [...CHAIN_STEPS, { tool: "reply_customer", args: { tracking: "ZX-5120", message: REPLY } }],
  build: () => ({
    workflow: defineWorkflow({
      name: "shipment_status_extended",
      description: "Answer a shipment status question",
      tools: [
        ...dataGapTools(),
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
      tracking: sameText("ZX-5120"),
      message: mentions("NorthFreight", "2024-06-18"),
    }),
});

const dataGapRecoveryExtendedStateful = defineScenario({
  id: "data_gap_recovery_extended_stateful",
  category: ScenarioCategory.MODEL_QUALITY,
  stateful: true,
  tags: ["reasoning"],
  description:
    "The two-dead-end chain, then a delay credit exactly once (the new ETA is after the promised date) before replying.",
  userMessage:
    "Where is shipment ZX-5120 and when will it arrive? If it will arrive after the promised date, issue the standard 10.00 delay credit, then reply to the customer.",
  reference: [
    ...CHAIN_STEPS,
    {
      tool: "issue_delay_credit",
      args: { tracking: "ZX-5120", amount: 10 },
      thought: "2024-06-18 is after the promised 2024-06-14.",
      needs: [1, 2],
    },
    {
      tool: "reply_customer",
      args: { tracking: "ZX-5120", message: `${REPLY} We have credited 10.00 for the delay.` },
      needs: [2],
    },
  ],
  build: () => {
    const credits: string[] = [];
    return {
      workflow: defineWorkflow({
        name: "shipment_delay_credit",
        description: "Answer a shipment status question and credit delays",
        tools: [
          ...dataGapTools(),
          scenarioTool({
            name: "issue_delay_credit",
            description: "Credit the customer for a late shipment (amount in EUR)",
            parameters: z.object({ tracking: z.string(), amount: z.number() }),
            execute: ({ tracking, amount }) => {
              if (amount <= 0 || amount > 50)
                throw new InvalidArgumentError(`amount ${amount} is outside 0–50 EUR`);
              credits.push(`${tracking.trim().toUpperCase()}:${amount}`);
              return { status: "credited", tracking, amount };
            },
          }),
          submitTool(
            "reply_customer",
            "Reply to the customer",
            z.object({ tracking: z.string(), message: z.string() }),
          ),
        ],
        requiredSteps: ["carrier_lookup", "issue_delay_credit"],
        terminalTool: "reply_customer",
        systemPrompt:
          "You are a logistics assistant. Never answer without data from the tools; credit a delay once, and only when the shipment is late.",
      }),
      checkState: () => (credits.join() === "ZX-5120:10" ? null : `credits were [${credits.join(", ")}]`),
    };
  },
  checkAnswer: (call) =>
    expectCall(call, "reply_customer", {
      tracking: sameText("ZX-5120"),
      message: mentions("2024-06-18", "10"),
    }),
});

const API_USERS = {
  TLINDGREN: { id: 7710, username: "tlindgren", account: { ref: "acct_7710_us", region: "us" } },
};
const API_SUBSCRIPTIONS = { acct_7710_us: { plan: "team", price_cents: 12900, renews_on: "2025-09-01" } };

const inconsistentApiRecoveryStateful = defineScenario({
  id: "inconsistent_api_recovery_stateful",
  category: ScenarioCategory.REASONING,
  stateful: true,
  description:
    "APIs disagree on names and units (account.ref vs account_ref, cents vs dollars); the credit goes into a ledger exactly once, then the user is told.",
  userMessage:
    "User tlindgren was charged twice for this month. Credit one month of their plan and let them know.",
  reference: [
    { tool: "get_user", args: { username: "tlindgren" } },
    { tool: "get_subscription", args: { account_ref: "acct_7710_us" } },
    {
      tool: "issue_credit",
      args: { account_ref: "acct_7710_us", amount_usd: 129, reason: "double charge: one month of team" },
      thought: "12900 cents is $129.00.",
    },
    {
      tool: "notify_user",
      args: { username: "tlindgren", message: "We credited $129.00 for the duplicate charge this month." },
      needs: [2],
    },
  ],
  build: () => {
    const ledger: string[] = [];
    return {
      workflow: defineWorkflow({
        name: "billing_credit_ledger",
        description: "Credit a customer and tell them",
        tools: [
          scenarioTool({
            name: "get_user",
            description: "A user by username",
            parameters: z.object({ username: z.string() }),
            execute: ({ username }) => rowOf(API_USERS, username.toUpperCase(), "user"),
          }),
          scenarioTool({
            name: "get_subscription",
            description: "Subscription of an account (account_ref is the user's account.ref)",
            parameters: z.object({ account_ref: z.string() }),
            execute: ({ account_ref }) => rowOf(API_SUBSCRIPTIONS, account_ref, "account"),
          }),
          scenarioTool({
            name: "issue_credit",
            description: "Credit an account, amount in US dollars; writes one ledger entry",
            parameters: z.object({ account_ref: z.string(), amount_usd: z.number(), reason: z.string() }),
            execute: ({ account_ref, amount_usd }) => {
              rowOf(API_SUBSCRIPTIONS, account_ref, "account");
              if (amount_usd > 1000) {
                throw new InvalidArgumentError(
                  `amount_usd ${amount_usd} is over the $1000 limit: amounts are dollars, not cents`,
                );
              }
              ledger.push(`${account_ref}:${amount_usd}`);
              return { status: "credited", account_ref, amount_usd, ledger_entry: `LE-${ledger.length}` };
            },
          }),
          submitTool(
            "notify_user",
            "Tell the user what was done",
            z.object({ username: z.string(), message: z.string() }),
          ),
        ],
        requiredSteps: ["get_user", "get_subscription", "issue_credit"],
        terminalTool: "notify_user",
        systemPrompt: "You are a billing assistant. Watch field names and units between APIs; credit once.",
      }),
      checkState: () => {
        const [entry, ...extra] = ledger;
        const amount = Number(entry?.split(":")[1]);
        return firstProblem([
          [
            extra.length === 0 && entry?.startsWith("acct_7710_us:") === true,
            `ledger was [${ledger.join(", ")}]`,
          ],
          [near(129)(amount) === null, `credited ${amount}, expected 129 (dollars, not cents)`],
        ]);
      },
    };
  },
  checkAnswer: (call) =>
    expectCall(call, "notify_user", { username: sameText("tlindgren"), message: mentions("129") }),
});

/** The seed-listed variants, placed with their categories in the report order. */
export const SEED_VARIANT_SCENARIOS: readonly EvalScenario[] = [
  basic2StepStatefulTre,
  phase2CompactionStateful,
  supplierDeepDive,
  dataGapRecoveryExtended,
  dataGapRecoveryExtendedStateful,
  inconsistentApiRecoveryStateful,
];
