/** The call format of the model a running llama-server serves, read from its chat template. */
import { callFormatFromTemplate, type TemplateCallFormat } from "../../prompts/chat-template.ts";
import { fetchServerProps } from "./props.ts";

/**
 * How the model behind a running llama-server writes a tool call: its `/props` chat template,
 * read by `callFormatFromTemplate`. `null` when the server reports no template or the template's
 * calls are not JSON between markers (the built-in rescue formats still apply).
 * @throws {ContextDiscoveryError} when `/props` does not answer (not a llama-server, or not up).
 * @example
 * const callFormat = await callFormatOfServer("http://127.0.0.1:8080");
 * const runner = new WorkflowRunner({ client, contextManager, callFormat });
 */
export async function callFormatOfServer(
  baseUrl: string,
  options: { apiKey?: string | null; signal?: AbortSignal } = {},
): Promise<TemplateCallFormat | null> {
  const props = await fetchServerProps(
    baseUrl.replace(/\/v1\/?$/, "").replace(/\/$/, ""),
    options.signal,
    options.apiKey,
  );
  return props.chatTemplate == null ? null : callFormatFromTemplate(props.chatTemplate);
}
