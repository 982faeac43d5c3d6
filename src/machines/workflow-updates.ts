/**
 * The workflow machine's context updates: pure functions from the context (and an event's data)
 * to the fields that change. The machine's actions are one-line `assign`s of these; what to do
 * is decided by the decision core (guardrails/decisions.ts), these only apply it.
 */

import type { ThresholdEvent } from "../context/context-manager.ts";
import { appendMessages } from "../core/history.ts";
import { createMessage, type Message, MessageRole, MessageType } from "../core/messages.ts";
import type { ToolResultEvent } from "../core/run-observer.ts";
import type { ToolDef, ToolSpec } from "../core/tools.ts";
import type { LLMResponse, ToolCall } from "../core/types.ts";
import {
  batchFailed,
  countersAfter,
  countersAfterBatch,
  type Decision,
  decideBatch,
  decideEnforcement,
  decideResponse,
  type GuardCounters,
  type HeldCall,
  runnableCalls,
} from "../guardrails/decisions.ts";
import { createEscalationRecord, escalateFor } from "../guardrails/escalation.ts";
import { type ComparedCall, isSameCall, repeatedCallNote } from "../guardrails/repeated-call.ts";
import { heldReplies, type RejectDecision, rejectionReplies } from "../guardrails/replies.ts";
import { argMatchedTools, pendingSteps, recordStep, type StepProgress } from "../guardrails/step-state.ts";
import { type ActiveTools, chooseActiveTools, toolsOutsideSteps } from "../guardrails/tool-subset.ts";
import { contextWarningNudge } from "../prompts/nudges.ts";
import { type ApprovalScreenRequest, deniedOutcomes, mayNeedApproval } from "./approval-screen.ts";
import type { ToolExecutionRequest } from "./workflow-actors.ts";
import type { ToolOutcome, WorkflowContext, WorkflowFailure } from "./workflow-context.ts";
import * as build from "./workflow-messages.ts";

/** The fields an update changes. */
export type ContextUpdate = Partial<WorkflowContext>;

/** The iteration (0-based) the messages of this pass belong to. */
export function stepOf(context: WorkflowContext): number {
  return Math.max(0, context.iteration - 1);
}

/** The calls the current decision carries (empty when it carries none). */
export function decidedCalls(context: WorkflowContext): ToolCall[] {
  const decision = context.decision;
  return decision !== null && "calls" in decision ? decision.calls : [];
}

/** The calls the current `execute` decision holds back (ADR 039), if any. */
function heldCalls(context: WorkflowContext): HeldCall[] | undefined {
  const decision = context.decision;
  return decision?.kind === "execute" ? decision.held : undefined;
}

/** The notice for the highest warning that fired this pass, or null when none did. */
export function contextWarningOf(warnings: readonly ThresholdEvent[]): string | null {
  const highest = warnings.reduce<ThresholdEvent | null>(
    (top, event) => (top === null || event.fraction > top.fraction ? event : top),
    null,
  );
  return highest === null
    ? null
    : contextWarningNudge(highest.fraction, highest.tokens, highest.budgetTokens);
}

/**
 * The tools and the client of the pass that starts (LLM call `context.iteration + 1`): the tool
 * subset (`toolSubsets`, the user's `activeTools`) and the escalation tier, from the step progress
 * and the failure counters as the last pass left them.
 */
export function chooseToolsAndClient(
  context: WorkflowContext,
  activeTools: ActiveTools | undefined,
): ContextUpdate {
  const { config } = context;
  const iteration = context.iteration + 1;
  const chosen = chooseActiveTools(config, context.progress, iteration, activeTools);
  const rules = config.escalation;
  return {
    ...((chosen !== null || context.activeTools != null) && { activeTools: chosen }),
    ...(rules !== undefined &&
      rules.length > 0 && {
        escalation: escalateFor(context.escalation ?? createEscalationRecord(), rules, context, iteration),
      }),
  };
}

/** The tools this pass offers and validates against: the subset, or every tool. */
export function offeredToolNames(context: WorkflowContext): readonly string[] {
  return context.activeTools ?? context.config.toolNames;
}

/**
 * What a request carries: the context's history, plus this pass's transient context warning,
 * `toolChoice: "required"` when it retries after a prose answer or follows a premature terminal
 * call (`forceToolChoiceOnRetry`), the tool subset (`tools`), the tools to leave out after a
 * repeated call or a premature terminal call (`withoutTools`), and the escalation tier that serves
 * it (`client`).
 */
export function inferenceRequest(context: WorkflowContext): {
  messages: Message[];
  transient?: Message[];
  toolChoice?: "required";
  tools?: string[];
  withoutTools?: string[];
  client?: number;
} {
  const focus = inPrematureStreak(context);
  const force =
    (context.decision?.kind === "retry" || focus) && context.config.forceToolChoiceOnRetry !== false;
  const withoutTools = [
    ...new Set([
      ...repeatedTools(context),
      ...(focus ? toolsOutsideSteps(context.config, context.progress, offeredToolNames(context)) : []),
    ]),
  ];
  const tier = context.escalation?.tier ?? 0;
  const request = {
    messages: context.messages,
    ...(force && { toolChoice: "required" as const }),
    ...(context.activeTools != null && { tools: context.activeTools }),
    ...(withoutTools.length > 0 && { withoutTools }),
    ...(tier > 0 && { client: tier }),
  };
  if (context.contextWarning === null) return request;
  const warning = createMessage(MessageRole.USER, context.contextWarning, {
    type: MessageType.CONTEXT_WARNING,
    stepIndex: stepOf(context),
  });
  return { ...request, transient: [warning] };
}

/**
 * The tools the last batch called again with the same arguments as the batch before (both run,
 * the second with a `[RepeatedCall]` note): the next request offers the model every other tool,
 * so a grammar-constrained model cannot take the same call a third time in a row.
 */
function repeatedTools(context: WorkflowContext): string[] {
  if (!context.config.stepEnforcement) return [];
  const last = build.succeededBatchCalls(context.messages, 1).map(comparedCall);
  if (last.length === 0) return [];
  const previous = build.succeededBatchCalls(context.messages, 2).map(comparedCall);
  const repeated = last.filter(
    (call) =>
      !context.config.terminalTools.includes(call.tool) &&
      previous.some((before) => isSameCall(before, call)),
  );
  return [...new Set(repeated.map((call) => call.tool))];
}

/**
 * Whether the model called a terminal tool early and has not run a clean batch since: the request
 * then offers only the pending steps' tools (the others go to `withoutTools`; a call to one is
 * still judged as before) and asks for a call, so a model that writes the terminal call as text
 * is made to call a step (docs/decisions/025).
 */
function inPrematureStreak(context: WorkflowContext): boolean {
  return context.config.stepEnforcement && context.prematureAttempts > 0;
}

function comparedCall(call: { name: string; args: Record<string, unknown> }): ComparedCall {
  return { tool: call.name, args: call.args };
}

/** Decide what the response leads to, and count the failure it may be. */
export function decideOnResponse(
  context: WorkflowContext,
  response: LLMResponse,
  tools?: readonly ToolSpec[],
): ContextUpdate {
  const rules = { ...context.config, toolNames: offeredToolNames(context) };
  return withDecision(context, decideResponse(response, rules, context, tools));
}

/** Decide whether the accepted batch runs, and count the violation it may be. */
export function decideOnEnforcement(context: WorkflowContext): ContextUpdate {
  return withDecision(context, decideEnforcement(decidedCalls(context), context.config, context));
}

function withDecision(context: WorkflowContext, decision: Decision): ContextUpdate {
  return { ...countersOf(countersAfter(context, decision)), decision };
}

/** Just the counters (the decision functions spread whatever they are given). */
function countersOf(counters: GuardCounters): GuardCounters {
  const { consecutiveRetries, consecutiveToolErrors, prematureAttempts, prereqViolations } = counters;
  return { consecutiveRetries, consecutiveToolErrors, prematureAttempts, prereqViolations };
}

/** Append messages; `appended` tells `reportAppended` how many to report. */
function append(context: WorkflowContext, added: Message[]): ContextUpdate {
  return { messages: appendMessages(context.messages, added), appended: added.length };
}

/**
 * Whether the accepted batch goes through the `approve` step: some call names a tool that
 * declares `needsApproval`. Left out of the context until a batch of the run needs it.
 */
export function noteScreening(
  context: WorkflowContext,
  tools: Readonly<Record<string, ToolDef>> | undefined,
): ContextUpdate {
  const screen = mayNeedApproval(
    runnableCalls(decidedCalls(context), heldCalls(context)).map((call) => call.tool),
    tools,
  );
  return screen || context.needsScreening ? { needsScreening: screen } : {};
}

/** What the approval screen is asked about: the batch just appended, in its run. */
export function screenRequest(context: WorkflowContext): ApprovalScreenRequest {
  return { runId: context.runId, messages: context.messages, calls: build.openCalls(context.messages) };
}

/**
 * The tools worker's request for the batch just appended: the calls and what the worker needs of
 * the run. The calls already answered (finished before a restart, or denied by a person) come
 * with their outcomes, and a restarted batch with how often each call started.
 */
export function toolRequest(context: WorkflowContext): ToolExecutionRequest {
  const { config, outcomes, started } = context;
  const denied = deniedOutcomes(context.approval).filter(
    (outcome) => !outcomes.some((kept) => kept.callId === outcome.callId),
  );
  const answered = [...outcomes, ...denied];
  return {
    calls: build.openCalls(context.messages),
    runId: context.runId,
    iteration: context.iteration,
    ...(config.toolConcurrency !== undefined && { concurrency: config.toolConcurrency }),
    ...(config.toolTimeoutMs !== undefined && { timeoutMs: config.toolTimeoutMs }),
    ...(answered.length > 0 && { answered }),
    ...(Object.keys(started).length > 0 && { started }),
  };
}

/** What observers are told of the calls a person denied (`onToolResult`, status `denied`). */
export function deniedToolResults(context: WorkflowContext): ToolResultEvent[] {
  return deniedOutcomes(context.approval).map((outcome) => ({
    runId: context.runId,
    callId: outcome.callId,
    tool: outcome.tool,
    args: outcome.args,
    attempt: 1,
    status: "denied",
    content: outcome.content,
    durationMs: 0,
  }));
}

/** Text that was not a usable call: the text, then the retry nudge (user channel). */
export function appendRetry(context: WorkflowContext, nudge: string): ContextUpdate {
  const raw = context.decision?.kind === "retry" ? context.decision.raw : "";
  return append(context, build.retryMessages(raw, nudge, stepOf(context)));
}

/**
 * A rejected batch: its TOOL_CALL message and one tool-channel reply per call (a premature
 * terminal call's reply writes out the pending step's call, from `tools`).
 */
export function appendRejection(context: WorkflowContext, tools: readonly ToolSpec[] = []): ContextUpdate {
  const decision = context.decision as RejectDecision;
  const replies = rejectionReplies(decision, offeredToolNames(context), tools);
  return append(
    context,
    build.rejectedBatchMessages(decision.calls, replies, decision.kind, context.runId, stepOf(context)),
  );
}

/**
 * The accepted batch's TOOL_CALL message (after its REASONING, if any), then the step notes that
 * answer its held terminal calls (ADR 039), so only the calls that run are left open.
 */
export function appendToolCall(context: WorkflowContext): ContextUpdate {
  const calls = decidedCalls(context);
  const { runId } = context;
  const step = stepOf(context);
  const held = heldCalls(context);
  return append(context, [
    ...build.toolCallMessages(calls, runId, step),
    ...(held ? build.heldCallMessages(calls, held, heldReplies(calls, held), runId, step) : []),
  ]);
}

/** One call of the batch in flight is starting (again, after a restart: `attempt` counts it). */
export function markStarted(context: WorkflowContext, callId: string): ContextUpdate {
  return { started: { ...context.started, [callId]: (context.started[callId] ?? 0) + 1 } };
}

/** One call of the batch in flight finished (a restarted batch replaces earlier outcomes). */
export function keepOutcome(context: WorkflowContext, outcome: ToolOutcome): ContextUpdate {
  return { outcomes: [...context.outcomes.filter((kept) => kept.callId !== outcome.callId), outcome] };
}

/**
 * An executed batch: its results, the steps that succeeded, the counters, and what it leads to
 * (finish, continue, or an exhausted tool-error budget).
 */
export function recordBatch(context: WorkflowContext, outcomes: readonly ToolOutcome[]): ContextUpdate {
  const counters = countersOf(countersAfterBatch(context, batchFailed(outcomes)));
  const decision = decideBatch(outcomes, context.config, counters);
  const progress = recordSucceeded(context, outcomes);
  return {
    ...append(
      context,
      build.toolResultMessages(withRepeatedCallNotes(context, outcomes, progress), stepOf(context)),
    ),
    ...counters,
    progress,
    decision,
    outcomes: [],
    started: {},
    result: decision.kind === "finish" ? decision.result : null,
  };
}

/**
 * Results of calls that repeat a call of the previous batch with the same arguments carry a note
 * naming what to call instead (`repeatedCallNote`); off with step enforcement (the ablation).
 */
function withRepeatedCallNotes(
  context: WorkflowContext,
  outcomes: readonly ToolOutcome[],
  progress: StepProgress,
): readonly ToolOutcome[] {
  if (!context.config.stepEnforcement) return outcomes;
  // The batch in flight has no results yet: the one before it is the second last TOOL_CALL.
  const previous = build.succeededBatchCalls(context.messages, 2).map(comparedCall);
  if (previous.length === 0) return outcomes;
  const pending = pendingSteps(context.config.requiredSteps, progress);
  return outcomes.map((outcome) => {
    const note =
      outcome.status === "ok" ? repeatedCallNote(outcome, previous, context.config, pending) : null;
    return note === null ? outcome : { ...outcome, content: `${outcome.content}\n\n${note}` };
  });
}

function recordSucceeded(context: WorkflowContext, outcomes: readonly ToolOutcome[]): StepProgress {
  const keepArgsOf = argMatchedTools(context.config.prerequisites);
  return outcomes
    .filter((outcome) => outcome.status === "ok")
    .reduce(
      (progress, outcome) => recordStep(progress, outcome.tool, outcome.args, keepArgsOf.has(outcome.tool)),
      context.progress,
    );
}

/**
 * A cancelled run keeps what happened: calls of the batch in flight that finished get their real
 * results (and count as steps), the rest a `[Cancelled]` result, so every call keeps an answer.
 */
export function closeOpenCalls(context: WorkflowContext): ContextUpdate {
  const open = build.openCalls(context.messages);
  const step = stepOf(context);
  const outcomeOf = (callId: string) => context.outcomes.find((kept) => kept.callId === callId);
  const finished = open.flatMap((call) => outcomeOf(call.callId) ?? []);
  // In batch order, whatever order the calls finished in (they may run concurrently).
  const answers = open.flatMap((call) => {
    const outcome = outcomeOf(call.callId);
    return outcome ? build.toolResultMessages([outcome], step) : build.cancelledResultMessages([call], step);
  });
  return {
    ...append(context, answers),
    progress: recordSucceeded(context, finished),
    outcomes: [],
  };
}

/** The failure an exhausting decision ends the run with (and the messages it still appends). */
export function failWith(context: WorkflowContext): ContextUpdate {
  const decision = context.decision;
  switch (decision?.kind) {
    case "retries_exhausted": {
      const added = decision.wasText
        ? build.retryMessages(decision.raw, "", stepOf(context)).slice(0, 1)
        : [];
      return {
        ...append(context, added),
        failure: { kind: "retries_exhausted", rawResponse: decision.raw, attempts: decision.attempts },
      };
    }
    case "malformed_args_exhausted": {
      const [first] = decision.malformed;
      return {
        ...appendRejection(context),
        failure: {
          kind: "tool_execution",
          toolName: first?.tool ?? "",
          errorName: "ToolArgumentError",
          errorMessage: `arguments are not a JSON object (${first?.reason ?? ""})`,
        },
      };
    }
    case "premature_exhausted":
      return {
        failure: {
          kind: "step_enforcement",
          terminalTool: decision.terminalTool,
          attempts: decision.attempts,
          pendingSteps: decision.pending,
        },
      };
    case "prerequisite_exhausted": {
      const [first] = decision.violations;
      return {
        failure: {
          kind: "prerequisite",
          toolName: first?.toolName ?? "",
          violations: decision.attempts,
          missingPrereqs: first?.missing ?? [],
        },
      };
    }
    case "tool_errors_exhausted": {
      const { toolName, errorName, errorMessage, callId } = decision;
      return {
        failure: { kind: "tool_execution", toolName, errorName, errorMessage, ...(callId && { callId }) },
      };
    }
    default:
      throw new Error(`failWith: decision '${decision?.kind}' does not end a run`);
  }
}

/** `maxIterations` LLM calls were made without finishing. */
export function failMaxIterations(context: WorkflowContext): ContextUpdate {
  return {
    failure: {
      kind: "max_iterations",
      iterations: context.iteration,
      completedSteps: context.progress.completedSteps,
      pendingSteps: pendingSteps(context.config.requiredSteps, context.progress),
    },
  };
}

/** Why an invoked actor (the client or the tools) failed the run, as JSON. */
export function describeActorError(error: unknown, source: "inference" | "tools"): WorkflowFailure {
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
