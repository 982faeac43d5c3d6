/**
 * One scenario run through the loop a TypeScript user would otherwise write: the Vercel AI SDK's
 * `generateText` with the scenario's tools and `stopWhen: [stepCountIs(n), hasToolCall(terminal)]`,
 * against the same backend. Measured and traced like a forge run.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import {
  generateText,
  hasToolCall,
  type ModelMessage,
  type StepResult,
  stepCountIs,
  type ToolSet,
  tool,
} from "ai";
import { createMessage, type Message, MessageRole, MessageType } from "../../src/core/messages.ts";
import { renderSystemPrompt } from "../../src/core/workflow.ts";
import { WorkflowRunner } from "../../src/loop/runner.ts";
import { ScriptedClient } from "../../src/testing/index.ts";
import { AI_SDK_CONFIG } from "../ablation.ts";
import type { EvalSampling } from "../backends/registry.ts";
import { efficiencyOf, emptyNudges, tokenTotals } from "../metrics/run-metrics.ts";
import type { EvalScenario, TerminalCall } from "../scenarios/scenario.ts";
import { CONTEXT_EXCEEDED, isContextOverflow } from "./context-limit.ts";
import { describeError, type RecordedExchange } from "./recording-client.ts";
import { createStartSnapshot } from "./start-snapshot.ts";
import { type RunOutcome, RunStatus, type RunTrace } from "./types.ts";

/**
 * Where the peer loop sends its requests (an OpenAI-compatible base URL and model id) and how it
 * samples: the same sampling and request seed the forge loop's client sends.
 */
export interface PeerEndpoint {
  baseURL: string;
  modelId: string;
  apiKey?: string;
  sampling?: EvalSampling;
  /** Sent as the request's `seed`. */
  seed?: number;
}

/** Inputs of one peer run. */
export interface PeerRunInput {
  key: string;
  scenario: EvalScenario;
  endpoint: PeerEndpoint;
  runId: string;
}

type AnyStep = StepResult<ToolSet>;

/** The `generateText` settings `peerSampling` fills. */
export type PeerSamplingSettings = Pick<
  Parameters<typeof generateText>[0],
  "temperature" | "topP" | "seed" | "providerOptions"
>;

/** The provider's name, which is also its key in `providerOptions`. */
const PROVIDER_NAME = "eval";

/** Run a scenario once through `generateText` and measure it. */
export async function runPeer(input: PeerRunInput): Promise<RunOutcome> {
  const { scenario, endpoint } = input;
  const startedAt = performance.now();
  const since = () => Math.round(performance.now() - startedAt);
  const instance = scenario.build();
  const { workflow } = instance;
  const provider = createOpenAICompatible({
    name: PROVIDER_NAME,
    baseURL: endpoint.baseURL,
    ...(endpoint.apiKey && { apiKey: endpoint.apiKey }),
    includeUsage: true,
  });
  const tools: ToolSet = Object.fromEntries(
    Object.values(workflow.tools).map((definition) => [
      definition.spec.name,
      tool({
        description: definition.spec.description,
        inputSchema: definition.spec.parameters,
        execute: async (args: Record<string, unknown>) => definition.execute(args),
      }),
    ]),
  );
  const system = renderSystemPrompt(workflow.systemPrompt);
  let startMessages: Message[] = [
    createMessage(MessageRole.SYSTEM, system, { type: MessageType.SYSTEM_PROMPT }),
    createMessage(MessageRole.USER, scenario.userMessage, { type: MessageType.USER_INPUT }),
  ];
  let initialSnapshot: unknown = null;
  if (scenario.startAfterSteps > 0) {
    const runner = new WorkflowRunner({
      client: new ScriptedClient([]),
      contextManager: { maybeCompact: (m) => m },
    });
    initialSnapshot = await createStartSnapshot(scenario, workflow, runner.configFor(workflow), input.runId);
    startMessages = (initialSnapshot as { context: { messages: Message[] } }).context.messages;
  }
  const stepTimes: number[] = [];
  // Collected as they finish, so a run that fails mid-way keeps the steps it made.
  const steps: AnyStep[] = [];
  let failure: RecordedExchange["error"] = null;
  let overflow = false;
  try {
    const result = await generateText({
      model: provider.chatModel(endpoint.modelId),
      system,
      messages: toModelMessages(startMessages),
      tools,
      stopWhen: [
        stepCountIs(scenario.maxIterations),
        ...workflow.terminalTools.map((name) => hasToolCall(name)),
      ],
      maxRetries: 0,
      ...peerSampling(endpoint),
      onStepFinish: (step) => {
        steps.push(step as AnyStep);
        stepTimes.push(since());
      },
    });
    if (result.steps.length !== steps.length) steps.splice(0, steps.length, ...(result.steps as AnyStep[]));
  } catch (error) {
    failure = describeError(error);
    overflow = isContextOverflow(error);
  }
  const wallMs = performance.now() - startedAt;
  const messages = stepsToMessages(steps, stepTimes);
  const terminal = terminalOf(steps, workflow.terminalTools);
  const completed = terminal !== null;
  const answerProblem = terminal ? scenario.checkAnswer(terminal) : null;
  const stateProblem = completed ? (instance.checkState?.() ?? null) : null;
  const iterations = steps.length + (failure ? 1 : 0);
  const lastStep = steps.at(-1);
  const failureKind = completed
    ? null
    : overflow
      ? CONTEXT_EXCEEDED
      : failure
        ? "backend_error"
        : steps.length >= scenario.maxIterations
          ? "max_iterations"
          : lastStep && lastStep.toolCalls.length === 0
            ? "text_response"
            : lastStep?.toolCalls.some((call) => workflow.terminalTools.includes(call.toolName))
              ? "terminal_call_failed"
              : "no_terminal_call";
  const exchanges: RecordedExchange[] = steps.map((step, index) => ({
    at: stepTimes[index - 1] ?? 0,
    durationMs: (stepTimes[index] ?? 0) - (stepTimes[index - 1] ?? 0),
    promptTokens: step.usage.inputTokens ?? 0,
    completionTokens: step.usage.outputTokens ?? 0,
    // The AI SDK hands over the backend's usage; a missing count is 0, not an estimate.
    tokenSource: "backend" as const,
    ...(step.usage.cachedInputTokens !== undefined && { cachedTokens: step.usage.cachedInputTokens }),
    response:
      step.toolCalls.length > 0
        ? step.toolCalls.map((call) => ({
            tool: call.toolName,
            args: (call.input ?? {}) as Record<string, unknown>,
          }))
        : { content: step.text },
    error: null,
  }));
  if (failure)
    exchanges.push({
      at: stepTimes.at(-1) ?? 0,
      durationMs: 0,
      promptTokens: 0,
      completionTokens: 0,
      response: null,
      error: failure,
    });
  const toolErrors = steps.reduce(
    (sum, step) => sum + step.content.filter((part) => part.type === "tool-error").length,
    0,
  );
  return {
    measurement: {
      status: completed ? RunStatus.DONE : failure && !overflow ? RunStatus.ERROR : RunStatus.FAILED,
      completed,
      accurate: completed && answerProblem === null && stateProblem === null,
      answerProblem,
      stateProblem,
      failureKind,
      errorName: completed ? null : (failure?.name ?? null),
      errorMessage: completed ? null : (failure?.message ?? failureMessage(failureKind, lastStep)),
      terminal,
      iterations,
      idealIterations: scenario.idealIterations,
      ...efficiencyOf(iterations, scenario.idealIterations, completed),
      toolCalls: steps.reduce((sum, step) => sum + step.toolResults.length, 0),
      toolErrors,
      textResponses: steps.filter((step) => step.toolCalls.length === 0).length,
      rescues: 0,
      nudges: emptyNudges(),
      forcedRetries: 0,
      compactions: 0,
      maxPhase: 0,
      ...tokenTotals(exchanges.filter((exchange) => exchange.error === null)),
      wallMs: Math.round(wallMs * 10) / 10,
      startedFromSnapshot: initialSnapshot !== null,
    },
    trace: {
      key: input.key,
      scenario: scenario.id,
      config: AI_SDK_CONFIG,
      runId: input.runId,
      initialSnapshot,
      startMessages,
      messages,
      exchanges,
      compactions: [],
      transitions: [],
      finalSnapshot: null,
    } satisfies RunTrace,
  };
}

/** The endpoint's sampling and seed as `generateText` settings. */
export function peerSampling(endpoint: PeerEndpoint): PeerSamplingSettings {
  const { sampling = {}, seed } = endpoint;
  return {
    ...(sampling.temperature !== undefined && { temperature: sampling.temperature }),
    ...(sampling.topP !== undefined && { topP: sampling.topP }),
    ...(seed !== undefined && { seed }),
    // The OpenAI-compatible provider drops `topK` (with a warning): send it as llama-server's body field.
    ...(sampling.topK !== undefined && { providerOptions: { [PROVIDER_NAME]: { top_k: sampling.topK } } }),
  };
}

function failureMessage(kind: string | null, lastStep: AnyStep | undefined): string | null {
  if (kind === "text_response")
    return `the model answered in text, which ends the loop: ${lastStep?.text.slice(0, 160) ?? ""}`;
  if (kind === "max_iterations") return "step limit reached without a terminal call";
  if (kind === "terminal_call_failed") {
    return "hasToolCall(terminal) stopped the loop on a terminal call whose tool failed (invalid input or a throw)";
  }
  return kind;
}

/** The last successful call of a terminal tool. */
function terminalOf(steps: readonly AnyStep[], terminalTools: readonly string[]): TerminalCall | null {
  for (const step of [...steps].reverse()) {
    for (const result of [...step.toolResults].reverse()) {
      if (terminalTools.includes(result.toolName)) {
        return { tool: result.toolName, args: (result.input ?? {}) as Record<string, unknown> };
      }
    }
  }
  return null;
}

/** This library's history as AI SDK model messages (the system prompt goes separately). */
export function toModelMessages(messages: readonly Message[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  let reasoning: string[] = [];
  for (const message of messages) {
    const type = message.metadata.type;
    if (type === MessageType.SYSTEM_PROMPT) continue;
    if (type === MessageType.REASONING) {
      reasoning.push(message.content);
    } else if (type === MessageType.TOOL_CALL) {
      const text = [...reasoning, message.content].filter((part) => part.length > 0).join("\n\n");
      reasoning = [];
      out.push({
        role: "assistant",
        content: [
          ...(text ? [{ type: "text" as const, text }] : []),
          ...(message.toolCalls ?? []).map((call) => ({
            type: "tool-call" as const,
            toolCallId: call.callId,
            toolName: call.name,
            input: call.args,
          })),
        ],
      });
    } else if (message.role === MessageRole.TOOL) {
      out.push({
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: message.toolCallId ?? "",
            toolName: message.toolName ?? "",
            output: { type: "text", value: message.content },
          },
        ],
      });
    } else if (message.role === MessageRole.ASSISTANT) {
      out.push({ role: "assistant", content: message.content });
    } else {
      out.push({ role: "user", content: message.content });
    }
  }
  return out;
}

/** The peer's steps as messages of this library's shape, for the same timeline. */
function stepsToMessages(steps: readonly AnyStep[], stepTimes: readonly number[]): RunTrace["messages"] {
  const out: RunTrace["messages"] = [];
  steps.forEach((step, index) => {
    const at = stepTimes[index] ?? 0;
    const meta = { stepIndex: index };
    if (step.toolCalls.length === 0) {
      out.push({
        at,
        message: createMessage(MessageRole.ASSISTANT, step.text, {
          type: MessageType.TEXT_RESPONSE,
          ...meta,
        }),
      });
      return;
    }
    if (step.text.trim()) {
      out.push({
        at,
        message: createMessage(MessageRole.ASSISTANT, step.text, { type: MessageType.REASONING, ...meta }),
      });
    }
    out.push({
      at,
      message: createMessage(
        MessageRole.ASSISTANT,
        "",
        { type: MessageType.TOOL_CALL, ...meta },
        {
          toolCalls: step.toolCalls.map((call) => ({
            name: call.toolName,
            args: (call.input ?? {}) as Record<string, unknown>,
            callId: call.toolCallId,
          })),
        },
      ),
    });
    for (const part of step.content) {
      if (part.type !== "tool-result" && part.type !== "tool-error") continue;
      const content =
        part.type === "tool-result"
          ? typeof part.output === "string"
            ? part.output
            : JSON.stringify(part.output)
          : `[ToolError] ${part.error instanceof Error ? part.error.message : String(part.error)}`;
      out.push({
        at,
        message: createMessage(
          MessageRole.TOOL,
          content,
          { type: MessageType.TOOL_RESULT, ...meta },
          {
            toolName: part.toolName,
            toolCallId: part.toolCallId,
          },
        ),
      });
    }
  });
  return out;
}
