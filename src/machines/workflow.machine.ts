/**
 * The guarded agentic loop as a statechart: compact → infer → validate → enforce → execute,
 * looping until a terminal tool succeeds, with final states done / failed / cancelled
 * (and responded, for the proxy's inference-only front half).
 */
import { type ActorRefFrom, type AnyActorRef, assign, type SnapshotFrom, sendTo, setup } from "xstate";
import { appendMessages } from "../core/history.ts";
import type { Message } from "../core/messages.ts";
import type { ToolDef, ToolSpec } from "../core/tools.ts";
import type { LLMClient, LLMResponse, StreamChunk, ToolCall } from "../core/types.ts";
import { buildRetryNudge, type RetryNudge } from "../guardrails/response-validator.ts";
import {
  argMatchedTools,
  findPrematureTerminal,
  findPrerequisiteViolations,
  recordStep,
  stepSummaryHint,
} from "../guardrails/step-state.ts";
import { validateResponse } from "../guardrails/validate-response.ts";
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

/**
 * Finds a workflow actor's deps, for a machine built once and run by many actors with different
 * clients and callbacks (the proxy): the deps stay out of the JSON context and snapshot.
 */
export type WorkflowDepsLookup = (workflow: AnyActorRef) => WorkflowMachineDeps;

/**
 * Events the workflow actor accepts: `workflow.cancel` from outside, and the answers of its two
 * request workers (`inference.*`, `tools.*`), which only those workers send.
 */
export type WorkflowEvent =
  | { type: "workflow.cancel" }
  | { type: "inference.done"; output: LLMResponse }
  | { type: "inference.error"; error: unknown }
  | { type: "tools.done"; output: ToolOutcome[] }
  | { type: "tools.error"; error: unknown };

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
 * Build the workflow statechart for a client, a context manager and a tool set, or, given a
 * lookup, once for many actors that each find their own deps (the same statechart either way).
 * @example
 * const actor = createActor(createWorkflowMachine(deps), { input: { config, messages } });
 * actor.start();
 * const output = await toPromise(actor);
 */
export function createWorkflowMachine(deps: WorkflowMachineDeps | WorkflowDepsLookup) {
  const depsOf: WorkflowDepsLookup = typeof deps === "function" ? deps : () => deps;
  return setup({
    types: {
      context: {} as WorkflowContext,
      input: {} as WorkflowInput,
      events: {} as WorkflowEvent,
      output: {} as WorkflowOutput,
    },
    actors: {
      inference: createInferenceLogic((workflow) => {
        const { client, toolSpecs, stream, onChunk } = depsOf(workflow);
        return { client, toolSpecs, stream: stream ?? false, ...(onChunk && { onChunk }) };
      }),
      executeTools: createToolExecutionLogic((workflow) => ({ tools: depsOf(workflow).tools ?? {} })),
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
      // Compact the history, then count the LLM call about to be made.
      startIteration: assign(({ context, self }) => ({
        // A compacted history is a new array; frozen like every history in the context.
        messages: Object.freeze(
          depsOf(self).contextManager.maybeCompact(
            context.messages,
            context.iteration,
            stepSummaryHint(context.progress),
          ),
        ) as Message[],
        iteration: context.iteration + 1,
      })),
      requestInference: sendTo("inference", ({ context }) => ({
        type: "request" as const,
        request: { messages: context.messages },
      })),
      requestTools: sendTo("executeTools", ({ context }) => ({
        type: "request" as const,
        request: { calls: build.openCalls(context.messages) },
      })),
      // Validate the response; a batch of known tools resets the consecutive-retry count.
      storeResponse: assign(({ context, event }) => {
        const response = event.type === "inference.done" ? event.output : null;
        const verdict =
          response === null
            ? null
            : validateResponse(response, {
                toolNames: context.config.toolNames,
                rescueEnabled: context.config.rescueEnabled,
              });
        return {
          response,
          verdict,
          consecutiveRetries: verdict?.kind === "calls" ? 0 : context.consecutiveRetries,
        };
      }),
      nudgeRetry: assign(({ context, self }) => {
        const raw = context.verdict?.kind === "text" ? context.verdict.raw : "";
        const added = build.retryMessages(
          raw,
          buildRetryNudge(raw, depsOf(self).retryNudge, context.config.toolNames),
          stepOf(context),
        );
        return {
          messages: appendMessages(context.messages, added),
          appended: added.length,
          consecutiveRetries: context.consecutiveRetries + 1,
        };
      }),
      nudgeUnknownTool: assign(({ context }) => {
        if (context.verdict?.kind !== "unknown_tools") return { appended: 0 };
        const { calls, unknown } = context.verdict;
        const added = build.unknownToolMessages(
          calls,
          unknown,
          context.config.toolNames,
          context.runId,
          stepOf(context),
        );
        return {
          messages: appendMessages(context.messages, added),
          appended: added.length,
          consecutiveRetries: context.consecutiveRetries + 1,
        };
      }),
      nudgeStep: assign(({ context }) => {
        const calls = guards.acceptedCalls(context);
        const { config } = context;
        const premature = findPrematureTerminal(
          calls,
          config.terminalTools,
          config.requiredSteps,
          context.progress,
        );
        if (!premature) return { appended: 0 };
        const tier = Math.min(context.prematureAttempts + 1, 3);
        const added = build.stepNudgeMessages(
          calls,
          premature.terminalTool,
          premature.pending,
          tier,
          context.runId,
          stepOf(context),
        );
        return {
          messages: appendMessages(context.messages, added),
          appended: added.length,
          prematureAttempts: context.prematureAttempts + 1,
        };
      }),
      nudgePrerequisite: assign(({ context }) => {
        const calls = guards.acceptedCalls(context);
        const violations = findPrerequisiteViolations(calls, context.config.prerequisites, context.progress);
        const added = build.prerequisiteMessages(calls, violations, context.runId, stepOf(context));
        return {
          messages: appendMessages(context.messages, added),
          appended: added.length,
          prereqViolations: context.prereqViolations + 1,
        };
      }),
      appendToolCall: assign(({ context }) => {
        const added = build.toolCallMessages(guards.acceptedCalls(context), context.runId, stepOf(context));
        return { messages: appendMessages(context.messages, added), appended: added.length };
      }),
      appendResults: assign(({ context, event }) => {
        const added = build.toolResultMessages(outcomesOf(event), stepOf(context));
        return { messages: appendMessages(context.messages, added), appended: added.length };
      }),
      // Runs after each appending action: tells `onMessage` about what it appended, in order.
      reportAppended: ({ context, self }) => {
        const { onMessage } = depsOf(self);
        if (!onMessage || context.appended === 0) return;
        for (const message of context.messages.slice(-context.appended)) onMessage(message);
      },
      // Append the batch's results and record its successful steps and counters.
      recordResults: assign(({ context, event }) => {
        const outcomes = outcomesOf(event);
        const added = build.toolResultMessages(outcomes, stepOf(context));
        const messages = appendMessages(context.messages, added);
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
            messages,
            appended: added.length,
            progress,
            consecutiveToolErrors: context.consecutiveToolErrors + 1,
            result: terminal?.value ?? null,
          };
        }
        return {
          messages,
          appended: added.length,
          progress,
          consecutiveToolErrors: 0,
          prematureAttempts: 0,
          prereqViolations: 0,
          result: terminal?.value ?? null,
        };
      }),
      closeOpenCalls: assign(({ context }) => {
        const added = build.cancelledResultMessages(build.openCalls(context.messages), stepOf(context));
        return { messages: appendMessages(context.messages, added), appended: added.length };
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
      failRetriesExhausted: assign(({ context }) => {
        const verdict = context.verdict;
        const raw = verdict && verdict.kind !== "calls" ? verdict.raw : "";
        const added =
          verdict?.kind === "text" ? [build.retryMessages(raw, "", stepOf(context))[0] as Message] : [];
        return {
          messages: appendMessages(context.messages, added),
          appended: added.length,
          consecutiveRetries: context.consecutiveRetries + 1,
          failure: {
            kind: "retries_exhausted" as const,
            rawResponse: raw,
            attempts: context.consecutiveRetries + 1,
          },
        };
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
      failFromActor: assign((_, params: { source: "inference" | "tools"; error: unknown }) => ({
        failure: describeActorError(params.error, params.source),
      })),
      reportActorError: ({ event, self }) => {
        if ("error" in event) depsOf(self).onActorError?.(event.error);
      },
      markStatus: assign((_, params: { status: WorkflowStatus }) => ({ status: params.status })),
    },
  }).createMachine({
    id: "workflow",
    context: ({ input }) => createWorkflowContext(input),
    initial: "compact",
    // Two workers for the whole run; each state that needs one sends it a request.
    invoke: [
      { id: "inference", src: "inference" },
      { id: "executeTools", src: "executeTools" },
    ],
    on: { "workflow.cancel": { target: ".cancelled", actions: ["closeOpenCalls", "reportAppended"] } },
    states: {
      compact: {
        always: [
          { guard: "iterationsExhausted", target: "failed", actions: "failMaxIterations" },
          { target: "infer", actions: "startIteration" },
        ],
      },
      infer: {
        entry: "requestInference",
        on: {
          "inference.done": { target: "validate", actions: "storeResponse" },
          "inference.error": {
            target: "failed",
            actions: [
              {
                type: "failFromActor",
                params: ({ event }) => ({ source: "inference" as const, error: errorOf(event) }),
              },
              "reportActorError",
            ],
          },
        },
      },
      validate: {
        always: [
          {
            guard: "retriesExhausted",
            target: "failed",
            actions: ["failRetriesExhausted", "reportAppended"],
          },
          { guard: "isTextResponse", target: "compact", actions: ["nudgeRetry", "reportAppended"] },
          { guard: "hasUnknownTools", target: "compact", actions: ["nudgeUnknownTool", "reportAppended"] },
          { guard: "isInferenceOnly", target: "responded" },
          { target: "enforce" },
        ],
      },
      enforce: {
        always: [
          { guard: "prematureExhausted", target: "failed", actions: "failStepEnforcement" },
          { guard: "isPremature", target: "compact", actions: ["nudgeStep", "reportAppended"] },
          { guard: "prerequisitesExhausted", target: "failed", actions: "failPrerequisite" },
          {
            guard: "violatesPrerequisites",
            target: "compact",
            actions: ["nudgePrerequisite", "reportAppended"],
          },
          { target: "execute", actions: ["appendToolCall", "reportAppended"] },
        ],
      },
      execute: {
        entry: "requestTools",
        on: {
          "tools.done": [
            {
              guard: "toolErrorsExhausted",
              target: "failed",
              actions: ["appendResults", "reportAppended", "failToolExecution"],
            },
            {
              guard: "terminalSucceeded",
              target: "done",
              actions: ["recordResults", "reportAppended"],
            },
            { target: "compact", actions: ["recordResults", "reportAppended"] },
          ],
          "tools.error": {
            target: "failed",
            actions: [
              {
                type: "failFromActor",
                params: ({ event }) => ({ source: "tools" as const, error: errorOf(event) }),
              },
              "reportActorError",
            ],
          },
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
      // A copy: the context's history is frozen (see appendMessages), the caller's is theirs to edit.
      messages: [...context.messages],
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

function errorOf(event: WorkflowEvent): unknown {
  return "error" in event ? event.error : undefined;
}

function outcomesOf(event: WorkflowEvent): ToolOutcome[] {
  return event.type === "tools.done" ? event.output : [];
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
