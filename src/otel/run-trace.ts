/**
 * The spans of one run: its `invoke_agent` span, a `chat` span per LLM call and an
 * `execute_tool` span per tool call under it, and the guardrails' `forge.*` events on it. What it
 * hears comes from the run's observer; it keeps only what it needs to read the next thing.
 */
import {
  type Attributes,
  type Context,
  type Counter,
  context as contextApi,
  type Histogram,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { ApprovalDecision } from "../core/approval.ts";
import type { Message } from "../core/messages.ts";
import type {
  CompactionEvent,
  LLMCallEndEvent,
  LLMCallStartEvent,
  RunEndEvent,
  ToolCallEvent,
  ToolResultEvent,
} from "../core/run-observer.ts";
import { finishReasonsOf, hasRepeatedCallNote, isRescuedCalls, nudgeKindOf } from "./guardrail-events.ts";
import { Forge, ForgeEvent, GenAi, OpenInference, Operation } from "./names.ts";

/** What every run's spans share: where they go and what they record. */
export interface TraceSettings {
  tracer: Tracer;
  recordContent: boolean;
  /** `gen_ai.request.model` of the chat spans, when known. */
  model: string | undefined;
  /** `gen_ai.provider.name`, when known. */
  provider: string | undefined;
  tokenUsage: Histogram;
  operationDuration: Histogram;
  guardrailEvents: Counter;
}

/** How a run's span starts. */
export interface RunTraceStart {
  runId: string;
  /** `gen_ai.agent.name`: the workflow's name, or `proxy`. */
  agent: string;
  resumed: boolean;
  /** The context the run's span is a child of (a parked run's earlier attempt, a caller's). */
  parent: Context;
  /** The model of this run's calls, over `TraceSettings.model` (a proxy request's). */
  model?: string | undefined;
  attributes?: Attributes;
}

// performance.now() readings as epoch milliseconds, for span times.
const epochOf = (monotonic: number) => performance.timeOrigin + monotonic;

/** One run's spans. */
export class RunTrace {
  readonly span: Span;
  readonly #settings: TraceSettings;
  readonly #model: string | undefined;
  readonly #context: Context;
  #chat: Span | undefined;
  readonly #tools = new Map<string, { span: Span; content?: string }>();
  readonly #results = new Map<string, string>();
  // The text of the last answer, while no calls were accepted after it.
  #lastText: string | null = null;
  #rescues = 0;
  #ended = false;

  constructor(settings: TraceSettings, start: RunTraceStart) {
    this.#settings = settings;
    this.#model = start.model ?? settings.model;
    this.span = settings.tracer.startSpan(
      `${Operation.INVOKE_AGENT} ${start.agent}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [GenAi.OPERATION_NAME]: Operation.INVOKE_AGENT,
          [GenAi.AGENT_NAME]: start.agent,
          [GenAi.CONVERSATION_ID]: start.runId,
          [Forge.RUN_ID]: start.runId,
          [Forge.RUN_RESUMED]: start.resumed,
          [OpenInference.SPAN_KIND]: "AGENT",
          ...(settings.provider !== undefined && { [GenAi.PROVIDER_NAME]: settings.provider }),
          ...start.attributes,
        },
      },
      start.parent,
    );
    this.#context = trace.setSpan(start.parent, this.span);
  }

  get ended(): boolean {
    return this.#ended;
  }

  llmStart(event: LLMCallStartEvent): void {
    const { provider, recordContent } = this.#settings;
    const model = this.#model;
    // The history grows each call: serialize it once for both attributes.
    const messages = recordContent ? JSON.stringify(event.messages) : undefined;
    this.#chat = this.#settings.tracer.startSpan(
      model === undefined ? Operation.CHAT : `${Operation.CHAT} ${model}`,
      {
        kind: SpanKind.CLIENT,
        startTime: epochOf(event.startedAt),
        attributes: {
          [GenAi.OPERATION_NAME]: Operation.CHAT,
          [Forge.ITERATION]: event.iteration,
          [OpenInference.SPAN_KIND]: "LLM",
          ...(model !== undefined && {
            [GenAi.REQUEST_MODEL]: model,
            [OpenInference.LLM_MODEL_NAME]: model,
          }),
          ...(provider !== undefined && { [GenAi.PROVIDER_NAME]: provider }),
          ...(event.escalationTier !== undefined && { [Forge.ESCALATION_TIER]: event.escalationTier }),
          ...(messages !== undefined && {
            [GenAi.INPUT_MESSAGES]: messages,
            [OpenInference.INPUT_VALUE]: messages,
          }),
        },
      },
      this.#context,
    );
  }

  llmEnd(event: LLMCallEndEvent): void {
    const span = this.#chat;
    this.#chat = undefined;
    if (span === undefined) return;
    const { response, usage, error } = event;
    const attributes: Attributes = {
      [GenAi.RESPONSE_FINISH_REASONS]: finishReasonsOf(response),
    };
    if (usage !== null) {
      attributes[GenAi.USAGE_INPUT_TOKENS] = usage.promptTokens;
      attributes[OpenInference.TOKEN_COUNT_PROMPT] = usage.promptTokens;
      if (usage.completionTokens !== undefined) {
        attributes[GenAi.USAGE_OUTPUT_TOKENS] = usage.completionTokens;
        attributes[OpenInference.TOKEN_COUNT_COMPLETION] = usage.completionTokens;
      }
      if (usage.cachedTokens !== undefined)
        attributes[GenAi.USAGE_CACHE_READ_INPUT_TOKENS] = usage.cachedTokens;
    }
    if (this.#settings.recordContent && response !== null) {
      const output = JSON.stringify(response);
      attributes[GenAi.OUTPUT_MESSAGES] = output;
      attributes[OpenInference.OUTPUT_VALUE] = output;
    }
    span.setAttributes(attributes);
    if (error !== null) failSpan(span, error);
    span.end(epochOf(event.startedAt + event.durationMs));
    this.#lastText = response !== null && !Array.isArray(response) ? response.content : null;
    this.#recordCallMetrics(event);
  }

  toolCall(event: ToolCallEvent): void {
    const args = this.#settings.recordContent ? JSON.stringify(event.args) : undefined;
    const span = this.#settings.tracer.startSpan(
      `${Operation.EXECUTE_TOOL} ${event.tool}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [GenAi.OPERATION_NAME]: Operation.EXECUTE_TOOL,
          [GenAi.TOOL_NAME]: event.tool,
          [GenAi.TOOL_CALL_ID]: event.callId,
          [GenAi.TOOL_TYPE]: "function",
          [Forge.TOOL_ATTEMPT]: event.attempt,
          [OpenInference.SPAN_KIND]: "TOOL",
          [OpenInference.TOOL_NAME]: event.tool,
          ...(args !== undefined && {
            [GenAi.TOOL_CALL_ARGUMENTS]: args,
            [OpenInference.INPUT_VALUE]: args,
          }),
        },
      },
      this.#context,
    );
    this.#tools.set(event.callId, { span });
  }

  toolResult(event: ToolResultEvent): void {
    // A denied call never ran, so no toolCall opened its span: it gets one here, ended at once.
    if (event.status === "denied" && !this.#tools.has(event.callId)) this.toolCall(event);
    const open = this.#tools.get(event.callId);
    this.#tools.delete(event.callId);
    this.#results.set(event.callId, event.content);
    if (open === undefined) return;
    const { span } = open;
    span.setAttribute(Forge.TOOL_STATUS, event.status);
    if (this.#settings.recordContent) {
      span.setAttributes({
        [GenAi.TOOL_CALL_RESULT]: event.content,
        [OpenInference.OUTPUT_VALUE]: event.content,
      });
    }
    // A denial is a person's decision, not a failure of the tool: its span is not an error.
    if (event.status !== "ok" && event.status !== "denied") {
      span.setStatus({ code: SpanStatusCode.ERROR, message: event.content.slice(0, 200) });
      span.setAttribute(GenAi.ERROR_TYPE, event.status);
    }
    span.end();
  }

  message(message: Message, iteration: number | undefined): void {
    const at = iteration === undefined ? {} : { [Forge.ITERATION]: iteration };
    const nudge = nudgeKindOf(message);
    if (nudge !== undefined) this.#event(ForgeEvent.NUDGE, { ...at, [Forge.NUDGE_KIND]: nudge });
    if (isRescuedCalls(message, this.#lastText)) this.rescued(at);
    if (message.toolCalls !== undefined) this.#lastText = null;
    const callId = message.toolCallId;
    const content = callId === undefined ? undefined : this.#results.get(callId);
    if (callId !== undefined && content !== undefined) {
      this.#results.delete(callId);
      if (hasRepeatedCallNote(message, content)) {
        this.#event(ForgeEvent.REPEATED_CALL_NOTE, {
          ...at,
          [GenAi.TOOL_CALL_ID]: callId,
          ...(message.toolName !== undefined && { [GenAi.TOOL_NAME]: message.toolName }),
        });
      }
    }
  }

  compaction(event: CompactionEvent): void {
    const { measure } = event;
    this.#event(ForgeEvent.COMPACTION, {
      [Forge.ITERATION]: event.iteration,
      [Forge.MESSAGES_BEFORE]: event.before.length,
      [Forge.MESSAGES_AFTER]: event.after.length,
      ...(measure !== undefined && {
        [Forge.TOKENS_BEFORE]: measure.tokensBefore,
        [Forge.TOKENS_AFTER]: measure.tokensAfter,
        [Forge.PHASE]: measure.phaseReached,
      }),
    });
  }

  parked(iteration: number): void {
    this.#event(ForgeEvent.APPROVAL_PARKED, { [Forge.ITERATION]: iteration });
  }

  decided(decisions: readonly ApprovalDecision[]): void {
    const approved = decisions.filter((decision) => decision.approved).length;
    this.#event(ForgeEvent.APPROVAL_DECIDED, {
      [Forge.APPROVED]: approved,
      [Forge.DENIED]: decisions.length - approved,
    });
  }

  /** End the run's span (and any call span a failed run left open). */
  /** A call rescued from text: a `forge.rescue` event. */
  rescued(attributes: Attributes = {}): void {
    this.#rescues++;
    this.#event(ForgeEvent.RESCUE, attributes);
  }

  /** How many `forge.rescue` events the run's span holds. */
  get rescues(): number {
    return this.#rescues;
  }

  end(status: RunEndEvent["status"], error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const { span } of this.#tools.values()) span.end();
    this.#tools.clear();
    this.#chat?.end();
    this.span.setAttribute(Forge.RUN_STATUS, status);
    if (error !== null && status !== "awaiting_approval") failSpan(this.span, error);
    this.span.end();
  }

  #event(name: ForgeEvent, attributes: Attributes): void {
    this.span.addEvent(name, attributes);
    this.#settings.guardrailEvents.add(1, {
      [Forge.EVENT]: name,
      ...(typeof attributes[Forge.NUDGE_KIND] === "string" && {
        [Forge.NUDGE_KIND]: attributes[Forge.NUDGE_KIND],
      }),
    });
  }

  #recordCallMetrics(event: LLMCallEndEvent): void {
    const { provider } = this.#settings;
    const model = this.#model;
    const common: Attributes = {
      [GenAi.OPERATION_NAME]: Operation.CHAT,
      ...(model !== undefined && { [GenAi.REQUEST_MODEL]: model }),
      ...(provider !== undefined && { [GenAi.PROVIDER_NAME]: provider }),
    };
    const withError =
      event.error === null ? common : { ...common, [GenAi.ERROR_TYPE]: errorTypeOf(event.error) };
    this.#settings.operationDuration.record(event.durationMs / 1000, withError);
    const { usage } = event;
    if (usage === null) return;
    this.#settings.tokenUsage.record(usage.promptTokens, { ...common, [GenAi.TOKEN_TYPE]: "input" });
    if (usage.completionTokens !== undefined)
      this.#settings.tokenUsage.record(usage.completionTokens, { ...common, [GenAi.TOKEN_TYPE]: "output" });
  }
}

/** `error.type`: the error's class name. */
function errorTypeOf(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

function failSpan(span: Span, error: unknown): void {
  span.setAttribute(GenAi.ERROR_TYPE, errorTypeOf(error));
  if (error instanceof Error) span.recordException(error);
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
}

/** The active context, for a run that has no parent of its own. */
export function activeContext(): Context {
  return contextApi.active();
}
