/**
 * Compaction scenarios: large tool results under a tight budget, a five-supplier audit that
 * needs phase 2, and a 10-step chain with budget variants that force phase 1, 2 and 3 (one of
 * them starting from a persisted snapshot taken mid-chain).
 */
import { z } from "zod";
import { defineWorkflow } from "../../src/core/workflow.ts";
import { equals, expectCall, mentions, sameSet, sameText } from "./checks.ts";
import { defineScenario, type EvalScenario, type ReferenceStep, ScenarioCategory } from "./scenario.ts";
import { rowOf, scenarioTool, submitTool } from "./tools.ts";

/**
 * Deterministic filler: `lines` plausible log/record lines after the key facts, so a result is
 * large but its facts sit in the first 200 characters (what phase-1 truncation keeps).
 */
export function padded(
  facts: Record<string, unknown>,
  label: string,
  lines: number,
): Record<string, unknown> {
  const detail = Array.from({ length: lines }, (_, index) => {
    const minute = String(index % 60).padStart(2, "0");
    return `${label} 10:${minute}:${String((index * 7) % 60).padStart(2, "0")} id=${(index * 7919) % 100000} status=ok latency_ms=${(index * 37) % 400}`;
  });
  return { ...facts, detail };
}

const stressTools = () => [
  scenarioTool({
    name: "fetch_logs",
    description: "Recent logs of a service (large)",
    parameters: z.object({ service: z.string() }),
    execute: ({ service }) =>
      padded({ service, first_error: "E1192 connection reset by db-primary", error_count: 37 }, "log", 52),
  }),
  scenarioTool({
    name: "fetch_metrics",
    description: "Metrics of a service for the last hour (large)",
    parameters: z.object({ service: z.string() }),
    execute: ({ service }) =>
      padded({ service, error_rate_pct: 4.2, saturation: "db pool 100%" }, "metric", 52),
  }),
  scenarioTool({
    name: "fetch_config",
    description: "Deployed configuration of a service (large)",
    parameters: z.object({ service: z.string() }),
    execute: ({ service }) => padded({ service, config_version: "cfg-2291", db_pool_size: 5 }, "config", 52),
  }),
];

const STRESS_REFERENCE: readonly ReferenceStep[] = [
  { tool: "fetch_logs", args: { service: "checkout" } },
  {
    tool: "fetch_metrics",
    args: { service: "checkout" },
    needs: [],
    thought: "Logs: first error E1192 (connection reset by db-primary), 37 errors. Metrics next.",
  },
  {
    tool: "fetch_config",
    args: { service: "checkout" },
    needs: [],
    thought: "Metrics: 4.2% errors, db pool saturated. Config next.",
  },
  {
    tool: "file_incident",
    args: {
      service: "checkout",
      error_code: "E1192",
      config_version: "cfg-2291",
      summary: "db pool exhausted (size 5): E1192 resets, 4.2% errors",
    },
    // The error code comes from the model's own note on the logs (made when it read them).
    needs: [2],
  },
];

const compactionStress = defineScenario({
  id: "compaction_stress",
  category: ScenarioCategory.COMPACTION,
  tags: ["plumbing"],
  description: "Three large results under a 2048-token budget: completion after compaction fires.",
  userMessage:
    "Investigate the checkout service: fetch its logs, metrics and config, then file an incident with the first error code and the config version.",
  budgetTokens: 2048,
  reference: STRESS_REFERENCE,
  build: () => ({
    workflow: defineWorkflow({
      name: "incident_investigation",
      description: "Investigate a service and file an incident",
      tools: [
        ...stressTools(),
        submitTool(
          "file_incident",
          "File an incident",
          z.object({
            service: z.string(),
            error_code: z.string(),
            config_version: z.string(),
            summary: z.string(),
          }),
        ),
      ],
      requiredSteps: ["fetch_logs", "fetch_metrics", "fetch_config"],
      terminalTool: "file_incident",
      systemPrompt: "You are an SRE assistant. Gather logs, metrics and config before filing.",
    }),
  }),
  checkAnswer: (call) =>
    expectCall(call, "file_incident", { error_code: equals("E1192"), config_version: equals("cfg-2291") }),
});

const SUPPLIERS: Record<
  string,
  { supplier_id: string; name: string; cert_expires: string; on_time_pct: number }
> = {
  "S-01": { supplier_id: "S-01", name: "Harbor Metals", cert_expires: "2026-01-31", on_time_pct: 97 },
  "S-02": { supplier_id: "S-02", name: "Linden Plastics", cert_expires: "2024-02-28", on_time_pct: 91 },
  "S-03": { supplier_id: "S-03", name: "Ostrava Castings", cert_expires: "2025-11-30", on_time_pct: 78 },
  "S-04": { supplier_id: "S-04", name: "Quay Fasteners", cert_expires: "2023-12-31", on_time_pct: 95 },
  "S-05": { supplier_id: "S-05", name: "Meridian Coatings", cert_expires: "2026-06-30", on_time_pct: 99 },
};

const supplierIds = Object.keys(SUPPLIERS);

const phase2Compaction = defineScenario({
  id: "phase2_compaction",
  category: ScenarioCategory.COMPACTION,
  tags: ["reasoning"],
  description: "Audit five suppliers (large records) under a budget that needs phase-2 compaction.",
  userMessage:
    "Audit suppliers S-01 to S-05 as of 2024-06-01: flag every supplier whose certification has expired or whose on-time rate is under 80%.",
  budgetTokens: 1000,
  reference: [
    ...supplierIds.map((id) => ({ tool: "get_supplier", args: { supplier_id: id }, needs: [] })),
    {
      tool: "submit_audit",
      args: {
        flagged: ["S-02", "S-03", "S-04"],
        notes: "S-02 and S-04 certificates expired; S-03 on-time 78%",
      },
      thought: "S-02 cert 2024-02-28 and S-04 2023-12-31 expired; S-03 on-time 78%.",
    },
  ],
  build: () => ({
    workflow: defineWorkflow({
      name: "supplier_audit",
      description: "Audit suppliers",
      tools: [
        scenarioTool({
          name: "get_supplier",
          description: "A supplier's record (large)",
          parameters: z.object({ supplier_id: z.string() }),
          execute: ({ supplier_id }) => padded(rowOf(SUPPLIERS, supplier_id, "supplier"), "delivery", 14),
        }),
        submitTool(
          "submit_audit",
          "Submit the audit with the flagged supplier ids",
          z.object({ flagged: z.array(z.string()), notes: z.string() }),
        ),
      ],
      terminalTool: "submit_audit",
      systemPrompt: "You are a procurement auditor. Review every supplier before submitting.",
    }),
  }),
  checkAnswer: (call) => expectCall(call, "submit_audit", { flagged: sameSet(["S-02", "S-03", "S-04"]) }),
});

/** The 10-step clinical chain: each lookup's facts feed the final assessment. */
const CHAIN: readonly (ReferenceStep & { result?: Record<string, unknown> })[] = [
  {
    tool: "get_patient",
    args: { patient_id: "P-2044" },
    thought: "Start with the patient record.",
    result: { patient_id: "P-2044", age: 67, sex: "F", chief_complaint: "fatigue and dizziness" },
  },
  {
    tool: "get_vitals",
    args: { patient_id: "P-2044" },
    thought: "Patient is 67 with fatigue and dizziness; checking vitals for haemodynamic clues.",
    result: { heart_rate: 48, bp: "104/62", spo2: 97 },
  },
  {
    tool: "get_labs",
    args: { patient_id: "P-2044" },
    thought: "Bradycardia at 48 bpm with soft BP; labs next, especially potassium and kidney function.",
    result: { potassium: 5.9, creatinine: 1.8, tsh: 2.1 },
  },
  {
    tool: "get_medications",
    args: { patient_id: "P-2044" },
    thought: "Potassium 5.9 and creatinine 1.8 are high; medication list may explain both.",
    result: { medications: ["metoprolol 100mg", "lisinopril 20mg", "spironolactone 25mg"] },
  },
  {
    tool: "check_interactions",
    args: { medications: ["metoprolol", "lisinopril", "spironolactone"] },
    thought: "Metoprolol, lisinopril and spironolactone: check their interactions.",
    result: {
      interactions: [
        { pair: "lisinopril+spironolactone", risk: "hyperkalemia", severity: "major" },
        { pair: "metoprolol+hyperkalemia", risk: "bradycardia", severity: "moderate" },
      ],
    },
  },
  {
    tool: "get_allergies",
    args: { patient_id: "P-2044" },
    thought:
      "Major hyperkalemia interaction (lisinopril + spironolactone); checking allergies before advice.",
    result: { allergies: ["sulfa"] },
  },
  {
    tool: "get_imaging",
    args: { patient_id: "P-2044" },
    thought: "Sulfa allergy noted. Imaging next to rule out structural causes.",
    result: { ecg: "sinus bradycardia, peaked T waves", echo: "EF 55%" },
  },
  {
    tool: "get_history",
    args: { patient_id: "P-2044" },
    thought: "Peaked T waves fit hyperkalemia; history for kidney disease and recent changes.",
    result: {
      conditions: ["CKD stage 3", "hypertension"],
      recent_change: "spironolactone started 3 weeks ago",
    },
  },
  {
    tool: "consult_guideline",
    args: { condition: "hyperkalemia" },
    thought: "Spironolactone started 3 weeks ago with CKD 3: consult the hyperkalemia guideline.",
    result: { guideline: "HK-2023", advice: "hold potassium-sparing diuretic, repeat K+ in 24h" },
  },
  {
    tool: "submit_assessment",
    args: {
      patient_id: "P-2044",
      diagnosis: "drug-induced hyperkalemia",
      culprit_medication: "spironolactone",
      plan: "hold spironolactone, repeat potassium in 24h per HK-2023",
    },
    thought: "Drug-induced hyperkalemia from spironolactone with lisinopril on CKD 3.",
  },
];

function chainWorkflow() {
  const lookups = CHAIN.slice(0, -1).map((step) =>
    scenarioTool({
      name: step.tool,
      description: `Clinical record: ${step.tool.replace(/_/g, " ")} (large)`,
      parameters:
        step.tool === "check_interactions"
          ? z.object({ medications: z.array(z.string()) })
          : step.tool === "consult_guideline"
            ? z.object({ condition: z.string() })
            : z.object({ patient_id: z.string() }),
      execute: (args: Record<string, unknown>) => {
        if (typeof args.patient_id === "string") rowOf({ "P-2044": true }, args.patient_id, "patient");
        return padded(step.result ?? {}, step.tool, 9);
      },
    }),
  );
  return defineWorkflow({
    name: "clinical_investigation",
    description: "A 10-step clinical investigation",
    tools: [
      ...lookups,
      submitTool(
        "submit_assessment",
        "Submit the assessment",
        z.object({
          patient_id: z.string(),
          diagnosis: z.string(),
          culprit_medication: z.string(),
          plan: z.string(),
        }),
      ),
    ],
    requiredSteps: CHAIN.slice(0, -1).map((step) => step.tool),
    terminalTool: "submit_assessment",
    systemPrompt:
      "You are a clinical decision-support assistant. Work through every record tool in order (patient, vitals, labs, medications, interactions, allergies, imaging, history, guideline), noting key findings as you go, then submit the assessment.",
  });
}

const CHAIN_REFERENCE: readonly ReferenceStep[] = CHAIN.map(({ result: _result, ...step }) => step);

function chainScenario(id: string, budgetTokens: number, description: string, startAfterSteps = 0) {
  return defineScenario({
    id,
    category: ScenarioCategory.COMPACTION,
    tags: ["chain"],
    description,
    userMessage: "Patient P-2044 feels tired and dizzy. Investigate and submit your assessment.",
    budgetTokens,
    maxIterations: 16,
    reference: CHAIN_REFERENCE,
    startAfterSteps,
    build: () => ({ workflow: chainWorkflow() }),
    checkAnswer: (call) =>
      expectCall(call, "submit_assessment", {
        patient_id: sameText("P-2044"),
        diagnosis: mentions("hyperkalemia"),
        culprit_medication: mentions("spironolactone"),
      }),
  });
}

/** Budgets of the chain variants: no pressure, and the smallest that keep each phase sufficient. */
export const CHAIN_BUDGETS = { baseline: 16384, p1: 1800, p2: 1400, p3: 1100 } as const;

/** Compaction scenarios. */
export const COMPACTION_SCENARIOS: readonly EvalScenario[] = [
  compactionStress,
  phase2Compaction,
  chainScenario(
    "compaction_chain_baseline",
    CHAIN_BUDGETS.baseline,
    "10-step chain, full budget: no compaction pressure.",
  ),
  chainScenario(
    "compaction_chain_p1",
    CHAIN_BUDGETS.p1,
    "10-step chain whose budget forces phase-1 compaction.",
  ),
  chainScenario(
    "compaction_chain_p2",
    CHAIN_BUDGETS.p2,
    "10-step chain whose budget forces phase-2 compaction.",
  ),
  chainScenario(
    "compaction_chain_p3",
    CHAIN_BUDGETS.p3,
    "10-step chain whose budget forces phase-3 compaction.",
  ),
  chainScenario(
    "compaction_chain_resume",
    CHAIN_BUDGETS.p2,
    "Starts from a workflow snapshot persisted after 6 chain steps, under the phase-2 budget.",
    6,
  ),
];

export { CHAIN, chainWorkflow, STRESS_REFERENCE, SUPPLIERS, stressTools };
