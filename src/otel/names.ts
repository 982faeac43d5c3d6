/**
 * The attribute, event and metric names the OpenTelemetry observer writes: the GenAI semantic
 * conventions' names where they exist, `forge.*` where they do not, and the OpenInference span
 * kind Phoenix draws its trees with (docs/decisions/032-opentelemetry.md).
 */

/** GenAI semantic-convention attributes (`gen_ai.*`, Development status). */
export const GenAi = {
  OPERATION_NAME: "gen_ai.operation.name",
  PROVIDER_NAME: "gen_ai.provider.name",
  AGENT_NAME: "gen_ai.agent.name",
  CONVERSATION_ID: "gen_ai.conversation.id",
  REQUEST_MODEL: "gen_ai.request.model",
  RESPONSE_FINISH_REASONS: "gen_ai.response.finish_reasons",
  USAGE_INPUT_TOKENS: "gen_ai.usage.input_tokens",
  USAGE_OUTPUT_TOKENS: "gen_ai.usage.output_tokens",
  USAGE_CACHE_READ_INPUT_TOKENS: "gen_ai.usage.cache_read.input_tokens",
  TOOL_NAME: "gen_ai.tool.name",
  TOOL_CALL_ID: "gen_ai.tool.call.id",
  TOOL_TYPE: "gen_ai.tool.type",
  TOOL_CALL_ARGUMENTS: "gen_ai.tool.call.arguments",
  TOOL_CALL_RESULT: "gen_ai.tool.call.result",
  INPUT_MESSAGES: "gen_ai.input.messages",
  OUTPUT_MESSAGES: "gen_ai.output.messages",
  TOKEN_TYPE: "gen_ai.token.type",
  ERROR_TYPE: "error.type",
} as const;

/** `gen_ai.operation.name` values. */
export const Operation = {
  INVOKE_AGENT: "invoke_agent",
  CHAT: "chat",
  EXECUTE_TOOL: "execute_tool",
} as const;

/** forge's own attributes. */
export const Forge = {
  RUN_ID: "forge.run.id",
  RUN_STATUS: "forge.run.status",
  RUN_RESUMED: "forge.run.resumed",
  ITERATION: "forge.iteration",
  ESCALATION_TIER: "forge.escalation.tier",
  TOOL_ATTEMPT: "forge.tool.attempt",
  TOOL_STATUS: "forge.tool.status",
  NUDGE_KIND: "forge.nudge.kind",
  EVENT: "forge.event",
  REQUEST_ID: "forge.request.id",
  /** A proxy request's guardrail counts (`forge.proxy.rescues`, `…prose_answers`, …): see `ProxyGuardrailCounts`. */
  PROXY: "forge.proxy",
  APPROVED: "forge.approval.approved",
  DENIED: "forge.approval.denied",
  TOKENS_BEFORE: "forge.compaction.tokens_before",
  TOKENS_AFTER: "forge.compaction.tokens_after",
  MESSAGES_BEFORE: "forge.compaction.messages_before",
  MESSAGES_AFTER: "forge.compaction.messages_after",
  PHASE: "forge.compaction.phase",
} as const;

/** The guardrail span events, named `forge.*`. */
export const ForgeEvent = {
  NUDGE: "forge.nudge",
  RESCUE: "forge.rescue",
  COMPACTION: "forge.compaction",
  REPEATED_CALL_NOTE: "forge.repeated_call_note",
  APPROVAL_PARKED: "forge.approval.parked",
  APPROVAL_DECIDED: "forge.approval.decided",
} as const;
export type ForgeEvent = (typeof ForgeEvent)[keyof typeof ForgeEvent];

/** The OpenInference attributes Phoenix reads to draw a span as an agent, an LLM call or a tool. */
export const OpenInference = {
  SPAN_KIND: "openinference.span.kind",
  LLM_MODEL_NAME: "llm.model_name",
  TOKEN_COUNT_PROMPT: "llm.token_count.prompt",
  TOKEN_COUNT_COMPLETION: "llm.token_count.completion",
  TOOL_NAME: "tool.name",
  INPUT_VALUE: "input.value",
  OUTPUT_VALUE: "output.value",
} as const;

/** Metric names: the GenAI client histograms and forge's guardrail counter. */
export const Metric = {
  TOKEN_USAGE: "gen_ai.client.token.usage",
  OPERATION_DURATION: "gen_ai.client.operation.duration",
  GUARDRAIL_EVENTS: "forge.guardrail.events",
} as const;

/** Bucket boundaries the conventions advise for `gen_ai.client.token.usage`. */
export const TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];

/** Bucket boundaries the conventions advise for `gen_ai.client.operation.duration` (seconds). */
export const DURATION_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
