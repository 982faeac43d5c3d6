/**
 * An in-process `ProxyBackend` for `app.request()` tests: a `ScriptedClient` answers the guarded
 * path, and forwarded requests get canned responses. Nothing touches the network.
 */
import type { BackendCall, ForwardRequest, ProxyBackend } from "../../../src/proxy/backend/backend.ts";
import { ScriptedClient, type ScriptStep } from "../../../src/testing/index.ts";

/** A fake backend plus what it saw. */
export interface FakeBackend extends ProxyBackend {
  scripted: ScriptedClient;
  calls: BackendCall[];
  forwarded: ForwardRequest[];
}

/** Build one; `forward` answers with `forwardReply` (default: a chat completion saying "forwarded"). */
export function createFakeBackend(
  script: ScriptStep[],
  options: { forwardReply?: (request: ForwardRequest) => Response; contextLength?: number | null } = {},
): FakeBackend {
  const scripted = new ScriptedClient(script);
  const calls: BackendCall[] = [];
  const forwarded: ForwardRequest[] = [];
  return {
    format: "openai",
    url: "fake://backend",
    scripted,
    calls,
    forwarded,
    client(call) {
      calls.push(call);
      return scripted;
    },
    async forward(request) {
      forwarded.push(request);
      return (
        options.forwardReply?.(request) ??
        Response.json({
          id: "chatcmpl-forwarded",
          object: "chat.completion",
          choices: [
            { index: 0, message: { role: "assistant", content: "forwarded" }, finish_reason: "stop" },
          ],
        })
      );
    },
    contextLength: async () => options.contextLength ?? null,
    health: async () => ({ status: "ok", url: "fake://backend", format: "openai" }),
  };
}
