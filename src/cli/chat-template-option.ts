/**
 * `--chat-template <source>`: where `forge proxy` reads how the backend's model writes a tool call
 * (docs/decisions/035-call-format-from-the-chat-template.md). `auto` (default) asks an
 * OpenAI-format backend's `/props` (llama-server) and goes without when it has none; `off` never
 * reads one; anything else is the path of a Jinja template file, which must show a call.
 */
import { readFileSync } from "node:fs";
import { ForgeError } from "../core/errors.ts";
import { callFormatFromTemplate, type TemplateCallFormat } from "../prompts/chat-template.ts";
import type { ProxyBackend } from "../proxy/backend/index.ts";

/** `--chat-template` names a file that cannot be read or whose template shows no call to read. */
export class ChatTemplateError extends ForgeError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * The call format `--chat-template <source>` gives for `backend`: `null` when `off`, or when
 * `auto` finds no llama-server `/props` template (another server, or a template whose calls are
 * not JSON between markers).
 * @throws {ChatTemplateError} when a named file is unreadable or shows no call format.
 */
export async function callFormatFor(
  source: string,
  backend: Pick<ProxyBackend, "chatTemplate">,
): Promise<TemplateCallFormat | null> {
  if (source === "off") return null;
  if (source === "auto") {
    const template = (await backend.chatTemplate?.()) ?? null;
    return template === null ? null : callFormatFromTemplate(template);
  }
  let template: string;
  try {
    template = readFileSync(source, "utf8");
  } catch (error) {
    throw new ChatTemplateError(
      `--chat-template ${source}: not auto, off, or a readable file; give the path of a Jinja chat template`,
      { cause: error },
    );
  }
  const format = callFormatFromTemplate(template);
  if (format === null) {
    throw new ChatTemplateError(
      `--chat-template ${source}: the template does not show a tool call as JSON between markers (a pythonic or XML family, or no tool support); drop the flag to use the built-in rescue formats`,
    );
  }
  return format;
}

/** A call format in a few words, for the proxy's listening line. */
export function describeCallFormat(format: TemplateCallFormat): string {
  const object = format.doubledBraces ? "{{…}}" : "{…}";
  return `${format.open}${object}${format.close}`;
}
