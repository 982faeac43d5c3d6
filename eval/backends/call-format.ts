/** The call format of the model behind an OpenAI-compatible server, for the eval's runs (ADR 035). */
import { callFormatOfServer } from "../../src/clients/llama-server/call-format.ts";
import { ContextDiscoveryError } from "../../src/core/errors.ts";
import type { TemplateCallFormat } from "../../src/prompts/chat-template.ts";

/**
 * The call format a llama-server's chat template shows (`callFormatOfServer`), as `forge proxy
 * --chat-template auto` reads it; `null` from a server without `/props` (vLLM, LM Studio) or a
 * template whose calls are not JSON between markers.
 */
export async function serverCallFormat(baseUrl: string, apiKey?: string): Promise<TemplateCallFormat | null> {
  try {
    return await callFormatOfServer(baseUrl, { apiKey: apiKey ?? null });
  } catch (error) {
    if (error instanceof ContextDiscoveryError) return null;
    throw error;
  }
}
