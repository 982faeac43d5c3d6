/**
 * One scenario run through this library's loop: the workflow statechart driven as an actor
 * (fresh, or restored from a persisted snapshot), with every message, compaction, state
 * transition and LLM exchange recorded, and the final persisted snapshot kept.
 */
import { createActor, type Snapshot, toPromise } from "xstate";
import {
  type CompactEvent,
  type CompactStrategy,
  ContextManager,
  charRatioEstimator,
  NoCompact,
  SlidingWindowCompact,
  TieredCompact,
} from "../../src/context/index.ts";
import type { Message } from "../../src/core/messages.ts";
import type { LLMClient } from "../../src/core/types.ts";
import { type EscalationTier, escalationCount } from "../../src/guardrails/escalation.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import type { WorkflowOutput, WorkflowSnapshot } from "../../src/machines/workflow.machine.ts";
import type { TemplateCallFormat } from "../../src/prompts/chat-template.ts";
import type { CompactStrategyName, LoopConfig } from "../ablation.ts";
import {
  countNudges,
  countRescues,
  countToolCalls,
  countToolErrors,
  efficiencyOf,
  summarizeCompactions,
  terminalCallOf,
  tokenTotals,
} from "../metrics/run-metrics.ts";
import type { EvalScenario } from "../scenarios/scenario.ts";
import {
  CONTEXT_EXCEEDED,
  ContextLimitedClient,
  isContextOverflow,
  type PromptTokenizer,
  resolveRunLimit,
} from "./context-limit.ts";
import { createExchangeRecorder } from "./recording-client.ts";
import { createStartSnapshot, restoreToolState } from "./start-snapshot.ts";
import { type RunOutcome, RunStatus, type RunTrace, type TimedCompaction } from "./types.ts";

/** Inputs of one run through the forge loop. */
export interface ForgeRunInput {
  key: string;
  scenario: EvalScenario;
  config: LoopConfig;
  client: LLMClient;
  /** Seeds the run's tool-call ids, so a replay reproduces the history exactly. */
  runId: string;
  stream?: boolean;
  /** Start from this stored snapshot (a replay) instead of generating the scenario's. */
  initialSnapshot?: unknown;
  /**
   * The backend's tokenizer: caps the budget at its real context and ends a run whose prompt
   * would not fit with `context_exceeded`. Without it the scenario's budget is used as is.
   */
  tokenizer?: PromptTokenizer;
  /** The ContextManager's `compactTarget` (default: its own, 2/3 of the threshold). */
  compactTarget?: number;
  /** How the model writes a call, read from its chat template (`BackendSession.callFormat`). */
  callFormat?: TemplateCallFormat;
  /** The stronger client of a config with `escalation` (required then). */
  escalationClient?: LLMClient;
}

/**
 * The escalation tier of a config that has one: the stronger client, whose calls the recorder
 * labels with the tier's name. Throws when the config needs one and none was given.
 */
function escalationOf(config: LoopConfig, stronger: LLMClient | undefined): EscalationTier | undefined {
  if (!config.escalation) return undefined;
  if (!stronger) {
    throw new Error(
      `config ${config.name} escalates to a stronger client, and this backend offers none (the sim-model does: profile ${config.escalation.profile})`,
    );
  }
  const name = `sim/${config.escalation.profile}`;
  return { after: config.escalation.after, client: stronger, name };
}

/** The compaction strategy a config names. */
export function createStrategy(name: CompactStrategyName): CompactStrategy {
  if (name === "tiered") return new TieredCompact();
  if (name === "sliding") return new SlidingWindowCompact({ keepRecent: 2 });
  return new NoCompact();
}

/** Run a scenario once through the workflow machine and measure it. */
export async function runForge(input: ForgeRunInput): Promise<RunOutcome> {
  const { scenario, config } = input;
  const instance = scenario.build();
  const { workflow } = instance;
  const limit = input.tokenizer
    ? await resolveRunLimit(input.tokenizer, workflow, scenario.userMessage, scenario.budgetTokens)
    : null;
  const startedAt = performance.now();
  const since = () => Math.round(performance.now() - startedAt);
  const limited =
    limit && input.tokenizer
      ? new ContextLimitedClient(input.client, input.tokenizer, limit.promptLimit)
      : null;
  const client = limited ?? input.client;
  const escalation = escalationOf(config, input.escalationClient);
  const recorder = createExchangeRecorder(startedAt, escalation?.name ? [escalation.name] : []);
  const compactions: TimedCompaction[] = [];
  const appended: RunTrace["messages"] = [];
  const runner = new WorkflowRunner({
    client,
    contextManager: new ContextManager({
      strategy: createStrategy(config.compaction),
      budgetTokens: limit?.budgetTokens ?? scenario.budgetTokens,
      ...(limit && { estimateTokens: charRatioEstimator(limit.charsPerToken) }),
      ...(input.compactTarget !== undefined && { compactTarget: input.compactTarget }),
      onCompact: (event: CompactEvent) => compactions.push({ ...event, at: since() }),
    }),
    maxIterations: scenario.maxIterations,
    maxRetriesPerStep: config.maxRetriesPerStep,
    maxToolErrors: config.maxToolErrors ?? 2,
    rescueEnabled: config.rescueEnabled,
    ...(input.callFormat && { callFormat: input.callFormat }),
    stepEnforcement: config.stepEnforcement,
    stream: input.stream ?? false,
    onMessage: (message: Message) => appended.push({ at: since(), message }),
    ...(config.toolSubsets && { toolSubsets: config.toolSubsets }),
    ...(config.earlyCalls && { earlyCalls: config.earlyCalls }),
    ...(config.forceToolChoiceOnRetry !== undefined && {
      forceToolChoiceOnRetry: config.forceToolChoiceOnRetry,
    }),
    ...(escalation && { escalation }),
  });

  let initialSnapshot: unknown = null;
  if (input.initialSnapshot !== undefined && input.initialSnapshot !== null) {
    initialSnapshot = input.initialSnapshot;
    await restoreToolState(workflow, snapshotMessages(initialSnapshot));
  } else if (scenario.startAfterSteps > 0) {
    initialSnapshot = await createStartSnapshot(scenario, workflow, runner.configFor(workflow), input.runId);
  }
  appended.length = 0;

  let actorError: unknown;
  const machine = runner.machineFor(workflow, {
    onActorError: (error) => (actorError = error),
    observers: [recorder],
  });
  const input_ = initialSnapshot
    ? { snapshot: withConfig(initialSnapshot, runner.configFor(workflow)) as Snapshot<unknown> }
    : { input: runner.inputFor(workflow, scenario.userMessage, { runId: input.runId }) };
  const startMessages = initialSnapshot
    ? snapshotMessages(initialSnapshot)
    : appended.splice(0).map((entry) => entry.message);
  const actor = createActor(machine, input_ as never);
  const transitions: RunTrace["transitions"] = [];
  actor.subscribe({
    next: (snapshot: WorkflowSnapshot) => {
      const state = String(snapshot.value);
      if (transitions.at(-1)?.state !== state)
        transitions.push({ at: since(), state, iteration: snapshot.context.iteration });
    },
    error: () => {},
  });

  let output: WorkflowOutput | null = null;
  let harnessError: unknown = null;
  try {
    actor.start();
    output = (await toPromise(actor)) as WorkflowOutput;
  } catch (error) {
    harnessError = error;
  }
  // Plain JSON already (the context holds only data); it is serialized with the trace.
  const finalSnapshot = output ? actor.getPersistedSnapshot() : null;
  const wallMs = performance.now() - startedAt;

  const runMessages = appended.map((entry) => entry.message);
  const terminal = output?.status === "done" ? terminalCallOf(output.messages, workflow.terminalTools) : null;
  const completed = terminal !== null;
  const answerProblem = terminal ? scenario.checkAnswer(terminal) : null;
  const stateProblem = completed ? (instance.checkState?.() ?? null) : null;
  const failure = describeFailure(output, actorError ?? harnessError);
  // One LLM call = one iteration; a run restored from a snapshot counts only its own calls.
  const iterations = recorder.exchanges.length;
  return {
    measurement: {
      status: completed ? RunStatus.DONE : failure.backend ? RunStatus.ERROR : RunStatus.FAILED,
      completed,
      accurate: completed && answerProblem === null && stateProblem === null,
      answerProblem,
      stateProblem,
      failureKind: completed ? null : failure.kind,
      errorName: completed ? null : failure.name,
      errorMessage: completed ? null : failure.message,
      terminal,
      iterations,
      idealIterations: scenario.idealIterations,
      ...efficiencyOf(iterations, scenario.idealIterations, completed),
      toolCalls: countToolCalls(runMessages),
      toolErrors: countToolErrors(runMessages),
      textResponses: recorder.exchanges.filter(
        (exchange) => exchange.response && !Array.isArray(exchange.response),
      ).length,
      rescues: countRescues(recorder.exchanges, Object.keys(workflow.tools), config.rescueEnabled),
      nudges: countNudges(runMessages),
      forcedRetries: recorder.exchanges.filter((exchange) => exchange.toolChoice === "required").length,
      ...(escalation && {
        escalations: output?.escalation ? escalationCount(output.escalation) : 0,
        escalatedCalls: recorder.exchanges.filter((exchange) => exchange.client !== undefined).length,
      }),
      ...summarizeCompactions(compactions),
      ...tokenTotals(recorder.exchanges),
      wallMs: Math.round(wallMs * 10) / 10,
      startedFromSnapshot: initialSnapshot !== null,
    },
    trace: {
      key: input.key,
      scenario: scenario.id,
      config,
      runId: input.runId,
      initialSnapshot,
      startMessages,
      messages: appended,
      exchanges: recorder.exchanges,
      compactions,
      transitions,
      finalSnapshot,
      ...(limit && { contextLimit: { ...limit, promptTokens: limited?.promptTokens ?? [] } }),
    },
  };
}

interface FailureDescription {
  kind: string | null;
  name: string | null;
  message: string | null;
  /** The backend (or the harness) failed, not the model. */
  backend: boolean;
}

function describeFailure(output: WorkflowOutput | null, error: unknown): FailureDescription {
  const failure = output?.failure;
  if (!output) {
    return { kind: "harness_error", name: errorName(error), message: errorMessage(error), backend: true };
  }
  if (!failure)
    return {
      kind: output.status === "done" ? "no_terminal_call" : output.status,
      name: null,
      message: null,
      backend: false,
    };
  if (failure.kind === "actor_error" && (isContextOverflow(error) || isContextOverflow(failure))) {
    return { kind: CONTEXT_EXCEEDED, name: errorName(error), message: errorMessage(error), backend: false };
  }
  if (failure.kind === "actor_error") {
    const backend = failure.source === "inference";
    return {
      kind: backend ? "backend_error" : "tool_crash",
      name: errorName(error) ?? failure.name,
      message: errorMessage(error) ?? failure.message,
      backend,
    };
  }
  const messages: Record<string, string> = {
    max_iterations: `no terminal call within ${"iterations" in failure ? failure.iterations : "?"} iterations`,
    retries_exhausted: "retries exhausted: consecutive responses without a valid tool call",
    step_enforcement: `terminal tool called before the required steps (${"attempts" in failure ? failure.attempts : "?"} attempts)`,
    prerequisite: "prerequisites violated too often",
    tool_execution: `tool error budget exhausted (${"errorName" in failure ? failure.errorName : ""})`,
  };
  return { kind: failure.kind, name: null, message: messages[failure.kind] ?? failure.kind, backend: false };
}

function errorName(error: unknown): string | null {
  return error instanceof Error ? error.name : error === undefined || error === null ? null : "Error";
}

function errorMessage(error: unknown): string | null {
  return error instanceof Error
    ? error.message
    : error === undefined || error === null
      ? null
      : String(error);
}

function snapshotMessages(snapshot: unknown): Message[] {
  return ((snapshot as { context?: { messages?: Message[] } }).context?.messages ?? []).slice();
}

/** The snapshot with this run's limits (the ablation's), so a stored snapshot runs under any config. */
function withConfig(snapshot: unknown, config: unknown): unknown {
  const typed = snapshot as { context: Record<string, unknown> };
  return { ...typed, context: { ...typed.context, config } };
}
