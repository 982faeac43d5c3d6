/** Prompts: nudge builders, the prompt-injected tool prompt and rescue parsing. */

// `callFormatFromTemplate` is exported from `forge-guardrails/clients`: it loads a Jinja renderer,
// which the root entry stays free of.
export type { TemplateCallFormat } from "./chat-template.ts";
export { notRunNudge, prerequisiteNudge, retryNudge, stepNudge, unknownToolNudge } from "./nudges.ts";
export {
  detectToolCalls,
  type RescueContext,
  type RescuedCalls,
  type RescueOptions,
  type RescueOutcome,
  type RescueParser,
  rescueToolCall,
} from "./rescue/index.ts";
export { readThinkCall } from "./rescue/think-call.ts";
export { buildToolPrompt, extractToolCall } from "./tool-prompt.ts";
