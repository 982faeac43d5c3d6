/** Test doubles for code built on forge-guardrails. */
export {
  hangUntilAborted,
  type RecordedCall,
  ScriptedClient,
  ScriptedClientError,
  type ScriptedClientOptions,
  type ScriptStep,
  text,
  toolCall,
} from "./scripted-client.ts";
