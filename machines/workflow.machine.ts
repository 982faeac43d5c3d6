/**
 * The guarded agentic loop as a statechart: compact → infer → validate → enforce → execute,
 * looping until a terminal tool succeeds, with final states done / failed / cancelled
 * (and responded, for the proxy's inference-only front half).
 */
import { type ActorRefFrom, assign, enqueueActions, type SnapshotFrom, setup } from "xstate";
import { type Message, serializeHistory } from "../src/core/messages.ts";
import type { ToolDef, ToolSpec } from "../src/core/tools.ts";
import type { LLMClient, StreamChunk, ToolCall } from "../src/core/types.ts";
import { buildRetryNudge, type RetryNudge } from "../src/guardrails/response-validator.ts";
import {
  argMatchedTools,
  findPrematureTerminal,
  findPrerequisiteViolations,
  recordStep,
  stepSummaryHint,
} from "../src/guardrails/step-state.ts";
import { validateResponse } from "../src/guardrails/validate-response.ts";
import { createInferenceLogic, createToolExecutionLogic } from "./workflow-actors.ts";
import {
  createWorkflowContext,
  type ToolOutcome,
  type WorkflowContext,
  type WorkflowFailure,
  type WorkflowInput,
  type WorkflowStatus,
} from "./workflow-context.ts";
import * as guards from "./workflow-guards.ts";
import * as build from "./workflow-messages.ts";

/** Anything that compacts a history once per iteration (a `ContextManager`). */
export interface HistoryCompactor {
  maybeCompact(messages: Message[], stepIndex?: number, stepHint?: string): Message[];
}

/** Behaviour the machine is built with: clients, tools and callbacks never enter the context. */
export interface WorkflowMachineDeps {
  client: LLMClient;
  contextManager: HistoryCompactor;
  /** The tools the model is offered. */
  toolSpecs: readonly ToolSpec[];
  /** Implementations by name; not needed for an inference-only machine. */
  tools?: Readonly<Record<string, ToolDef>>;
  stream?: boolean;
  onChunk?: (chunk: StreamChunk) => Promise<void> | void;
  onMessage?: (message: Message) => void;
  retryNudge?: RetryNudge;
  /** Receives the original error when an invoked actor (client or tools) fails the run. */
  onActorError?: (error: unknown) => void;
}

/** Events the workflow actor accepts. */
export type WorkflowEvent = { type: "workflow.cancel" };

/** What a finished workflow actor reports. */
export interface WorkflowOutput {
  status: WorkflowStatus;
  result: unknown;
  failure: WorkflowFailure | null;
  messages: Message[];
  iteration: number;
  completedSteps: string[];
  /** The accepted batch of an inference-only run. */
  toolCalls: ToolCall[] | null;
}

/**
 * Build the workflow statechart for a client, a context manager and a tool set.
 * @example
 * const actor = createActor(createWorkflowMachine(deps), { input: { config, messages } });
 * actor.start();
 * const output = await toPromise(actor);
 */
export function createWorkflowMachine(deps: WorkflowMachineDeps) {
  const emit = (messages: readonly Message[]) => {
    for (const message of messages) deps.onMessage?.(message);
  };
  return setup({
    types: {
      context: {} as WorkflowContext,
      input: {} as WorkflowInput,
      events: {} as WorkflowEvent,
      output: {} as WorkflowOutput,
    },
    actors: {
      inference: createInferenceLogic({
        client: deps.client,
        toolSpecs: deps.toolSpecs,
        stream: deps.stream ?? false,
        ...(deps.onChunk && { onChunk: deps.onChunk }),
      }),
      executeTools: createToolExecutionLogic({ tools: deps.tools ?? {} }),
    },
    guards: {
      iterationsExhausted: ({ context }) => guards.iterationsExhausted(context),
      retriesExhausted: ({ context }) => guards.retriesExhausted(context),
      isTextResponse: ({ context }) => guards.isTextResponse(context),
      hasUnknownTools: ({ context }) => guards.hasUnknownTools(context),
      isInferenceOnly: ({ context }) => guards.isInferenceOnly(context),
      prematureExhausted: ({ context }) => guards.prematureExhausted(context),
      isPremature: ({ context }) => guards.isPremature(context),
      prerequisitesExhausted: ({ context }) => guards.prerequisitesExhausted(context),
      violatesPrerequisites: ({ context }) => guards.violatesPrerequisites(context),
      toolErrorsExhausted: ({ context, event }) => guards.toolErrorsExhausted(context, outcomesOf(event)),
      terminalSucceeded: ({ context, event }) =>
        guards.terminalOutcome(context, outcomesOf(event)) !== undefined,
    },
    actions: {
      compactHistory: assign({
        messages: ({ context }) =>
          deps.contextManager.maybeCompact(
            context.messages,
            context.iteration,
            stepSummaryHint(context.progress),
          ),
      }),
      countIteration: assign({ iteration: ({ context }) => context.iteration + 1 }),
      storeResponse: assign(({ context, event }) => {
        const response = (event as unknown as { output: WorkflowContext["response"] }).output ?? null;
        return {
          response,
          verdict:
            response === null
              ? null
              : validateResponse(response, {
                  toolNames: context.config.toolNames,
                  rescueEnabled: context.config.rescueEnabled,
                }),
        };
      }),
      nudgeRetry: enqueueActions(({ context, enqueue }) => {
        const raw = context.verdict?.kind === "text" ? context.verdict.raw : "";
        const added = build.retryMessages(
          raw,
          buildRetryNudge(raw, deps.retryNudge, context.config.toolNames),
          stepOf(context),
        );
        enqueue.assign({
          messages: [...context.messages, ...added],
          consecutiveRetries: context.consecutiveRetries + 1,
        });
        enqueue(() => emit(added));
      }),
      nudgeUnknownTool: enqueueActions(({ context, enqueue }) => {
        if (context.verdict?.kind !== "unknown_tools") return;
        const { calls, unknown } = context.verdict;
        const added = build.unknownToolMessages(
          calls,
          unknown,
          context.config.toolNames,
          context.runId,
          stepOf(context),
        );
        enqueue.assign({
          messages: [...context.messages, ...added],
          consecutiveRetries: context.consecutiveRetries + 1,
        });
        enqueue(() => emit(added));
      }),
      acceptCalls: assign({ consecutiveRetries: 0 }),
      nudgeStep: enqueueActions(({ context, enqueue }) => {
        const calls = guards.acceptedCalls(context);
        const { config } = context;
        const premature = findPrematureTerminal(
          calls,
          config.terminalTools,
          config.requiredSteps,
          context.progress,
        );
        if (!premature) return;
        const tier = Math.min(context.prematureAttempts + 1, 3);
        const added = build.stepNudgeMessages(
          calls,
          premature.terminalTool,
          premature.pending,
          tier,
          context.runId,
          stepOf(context),
        );
        enqueue.assign({
          messages: [...context.messages, ...added],
          prematureAttempts: context.prematureAttempts + 1,
        });
        enqueue(() => emit(added));
      }),
      nudgePrerequisite: enqueueActions(({ context, enqueue }) => {
        const calls = guards.acceptedCalls(context);
        const violations = findPrerequisiteViolations(calls, context.config.prerequisites, context.progress);
        const added = build.prerequisiteMessages(calls, violations, context.runId, stepOf(context));
        enqueue.assign({
          messages: [...context.messages, ...added],
          prereqViolations: context.prereqViolations + 1,
        });
        enqueue(() => emit(added));
      }),
      appendToolCall: enqueueActions(({ context, enqueue }) => {
        const added = build.toolCallMessages(guards.acceptedCalls(context), context.runId, stepOf(context));
        enqueue.assign({ messages: [...context.messages, ...added] });
        enqueue(() => emit(added));
      }),
      appendResults: enqueueActions(({ context, event, enqueue }) => {
        const added = build.toolResultMessages(outcomesOf(event), stepOf(context));
        enqueue.assign({ messages: [...context.messages, ...added] });
        enqueue(() => emit(added));
      }),
      recordBatch: assign(({ context, event }) => {
        const outcomes = outcomesOf(event);
        const keepArgsOf = argMatchedTools(context.config.prerequisites);
        const progress = outcomes
          .filter((outcome) => outcome.status === "ok")
          .reduce(
            (current, outcome) =>
              recordStep(current, outcome.tool, outcome.args, keepArgsOf.has(outcome.tool)),
            context.progress,
          );
        const terminal = guards.terminalOutcome(context, outcomes);
        if (guards.batchFailed(outcomes)) {
          return {
            progress,
            consecutiveToolErrors: context.consecutiveToolErrors + 1,
            result: terminal?.value ?? null,
          };
        }
        return {
          progress,
          consecutiveToolErrors: 0,
          prematureAttempts: 0,
          prereqViolations: 0,
          result: terminal?.value ?? null,
        };
      }),
      closeOpenCalls: enqueueActions(({ context, enqueue }) => {
        const added = build.cancelledResultMessages(build.openCalls(context.messages), stepOf(context));
        if (added.length === 0) return;
        enqueue.assign({ messages: [...context.messages, ...added] });
        enqueue(() => emit(added));
      }),
      failMaxIterations: assign({
        failure: ({ context }) => ({
          kind: "max_iterations" as const,
          iterations: context.iteration,
          completedSteps: context.progress.completedSteps,
          pendingSteps: context.config.requiredSteps.filter(
            (step) => !context.progress.completedSteps.includes(step),
          ),
        }),
      }),
      failRetriesExhausted: enqueueActions(({ context, enqueue }) => {
        const verdict = context.verdict;
        const raw = verdict && verdict.kind !== "calls" ? verdict.raw : "";
        const added =
          verdict?.kind === "text" ? [build.retryMessages(raw, "", stepOf(context))[0] as Message] : [];
        enqueue.assign({
          messages: [...context.messages, ...added],
          consecutiveRetries: context.consecutiveRetries + 1,
          failure: { kind: "retries_exhausted", rawResponse: raw, attempts: context.consecutiveRetries + 1 },
        });
        enqueue(() => emit(added));
      }),
      failStepEnforcement: assign({
        failure: ({ context }) => {
          const { config } = context;
          const premature = findPrematureTerminal(
            guards.acceptedCalls(context),
            config.terminalTools,
            config.requiredSteps,
            context.progress,
          );
          return {
            kind: "step_enforcement" as const,
            terminalTool: premature?.terminalTool ?? "",
            attempts: context.prematureAttempts + 1,
            pendingSteps: premature?.pending ?? [],
          };
        },
      }),
      failPrerequisite: assign({
        failure: ({ context }) => {
          const [first] = findPrerequisiteViolations(
            guards.acceptedCalls(context),
            context.config.prerequisites,
            context.progress,
          );
          return {
            kind: "prerequisite" as const,
            toolName: first?.toolName ?? "",
            violations: context.prereqViolations + 1,
            missingPrereqs: first?.missing ?? [],
          };
        },
      }),
      failToolExecution: assign(({ context, event }) => {
        const failed = outcomesOf(event).find((outcome) => outcome.status === "error");
        return {
          consecutiveToolErrors: context.consecutiveToolErrors + 1,
          failure: {
            kind: "tool_execution" as const,
            toolName: failed?.tool ?? "",
            errorName: failed?.errorName ?? "Error",
            errorMessage: failed?.errorMessage ?? "",
          },
        };
      }),
      failFromActor: enqueueActions(({ event, enqueue }, params: { source: "inference" | "tools" }) => {
        const error = (event as unknown as { error: unknown }).error;
        enqueue.assign({ failure: describeActorError(error, params.source) });
        enqueue(() => deps.onActorError?.(error));
      }),
      markStatus: assign((_, params: { status: WorkflowStatus }) => ({ status: params.status })),
    },
  }).createMachine({
    id: "workflow",
    context: ({ input }) => createWorkflowContext(input),
    initial: "compact",
    on: { "workflow.cancel": { target: ".cancelled", actions: "closeOpenCalls" } },
    states: {
      compact: {
        always: [
          { guard: "iterationsExhausted", target: "failed", actions: "failMaxIterations" },
          { target: "infer", actions: "compactHistory" },
        ],
      },
      infer: {
        entry: "countIteration",
        invoke: {
          id: "inference",
          src: "inference",
          input: ({ context }) => ({ messages: serializeHistory(context.messages, deps.client.apiFormat) }),
          onDone: { target: "validate", actions: "storeResponse" },
          onError: { target: "failed", actions: { type: "failFromActor", params: { source: "inference" } } },
        },
      },
      validate: {
        always: [
          { guard: "retriesExhausted", target: "failed", actions: "failRetriesExhausted" },
          { guard: "isTextResponse", target: "compact", actions: "nudgeRetry" },
          { guard: "hasUnknownTools", target: "compact", actions: "nudgeUnknownTool" },
          { guard: "isInferenceOnly", target: "responded", actions: "acceptCalls" },
          { target: "enforce", actions: "acceptCalls" },
        ],
      },
      enforce: {
        always: [
          { guard: "prematureExhausted", target: "failed", actions: "failStepEnforcement" },
          { guard: "isPremature", target: "compact", actions: "nudgeStep" },
          { guard: "prerequisitesExhausted", target: "failed", actions: "failPrerequisite" },
          { guard: "violatesPrerequisites", target: "compact", actions: "nudgePrerequisite" },
          { target: "execute", actions: "appendToolCall" },
        ],
      },
      execute: {
        invoke: {
          id: "executeTools",
          src: "executeTools",
          input: ({ context }) => ({ calls: build.openCalls(context.messages) }),
          onDone: [
            {
              guard: "toolErrorsExhausted",
              target: "failed",
              actions: ["appendResults", "failToolExecution"],
            },
            { guard: "terminalSucceeded", target: "done", actions: ["appendResults", "recordBatch"] },
            { target: "compact", actions: ["appendResults", "recordBatch"] },
          ],
          onError: { target: "failed", actions: { type: "failFromActor", params: { source: "tools" } } },
        },
      },
      done: { type: "final", entry: { type: "markStatus", params: { status: "done" } } },
      failed: { type: "final", entry: { type: "markStatus", params: { status: "failed" } } },
      cancelled: { type: "final", entry: { type: "markStatus", params: { status: "cancelled" } } },
      responded: { type: "final", entry: { type: "markStatus", params: { status: "responded" } } },
    },
    output: ({ context }) => ({
      status: context.status,
      result: context.result,
      failure: context.failure,
      messages: context.messages,
      iteration: context.iteration,
      completedSteps: context.progress.completedSteps,
      toolCalls: context.status === "responded" ? guards.acceptedCalls(context) : null,
    }),
  });
}

/** The workflow machine type. */
export type WorkflowMachine = ReturnType<typeof createWorkflowMachine>;
/** A running workflow actor. */
export type WorkflowActor = ActorRefFrom<WorkflowMachine>;
/** A workflow actor's snapshot. */
export type WorkflowSnapshot = SnapshotFrom<WorkflowMachine>;

function stepOf(context: WorkflowContext): number {
  return Math.max(0, context.iteration - 1);
}

function outcomesOf(event: unknown): ToolOutcome[] {
  return ((event as { output?: ToolOutcome[] }).output ?? []) as ToolOutcome[];
}

function describeActorError(error: unknown, source: "inference" | "tools"): WorkflowFailure {
  const details: Record<string, unknown> = {};
  if (typeof error === "object" && error !== null) {
    for (const [key, value] of Object.entries(error)) {
      if (key === "messages" || key === "cause") continue;
      try {
        JSON.stringify(value);
        details[key] = value;
      } catch {
        details[key] = String(value);
      }
    }
  }
  return {
    kind: "actor_error",
    source,
    name: error instanceof Error ? error.name : "Error",
    message: error instanceof Error ? error.message : String(error),
    details,
  };
}
