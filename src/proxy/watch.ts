/**
 * `forge proxy --watch <url>`: each guarded request reported to a watch server as a run — the
 * client's messages, the nudges and accepted calls the loop appends, compactions, each backend call
 * with its timing, and the answer (with its rescues, retries and nudges) or the error.
 */
import { estimateTokensByChars } from "../context/index.ts";
import type { Message } from "../core/messages.ts";
import { createWatchTransport, openWatchRun, type WatchTransport } from "../watch/report/index.ts";
import type { ChatService } from "./chat-service.ts";
import { createRequestStats, type RequestObserver, retriesOf } from "./request-stats.ts";

/** Where `forge proxy --watch` reports. */
export interface ProxyWatchOptions {
  /** The watch server's base URL, e.g. `http://127.0.0.1:4141` (`forge watch`). */
  url: string;
}

const tokensOf = (messages: readonly Message[]) =>
  messages.reduce((sum, message) => sum + estimateTokensByChars(message), 0);

/** Rough tokens of a JSON value: its length over 4, as the watch page labels it (estimated). */
const jsonTokens = (value: unknown) => Math.ceil(JSON.stringify(value ?? "").length / 4);

/**
 * A chat service that reports each request to a watch server, then answers exactly as `service`
 * does: a watch server that is down costs a line on stderr, never an answer.
 */
export function watchChatService(
  service: ChatService,
  options: ProxyWatchOptions,
  transport: WatchTransport = createWatchTransport({ url: options.url }),
): ChatService {
  return {
    async answer(request, signal, stats = createRequestStats()) {
      const run = openWatchRun(transport, {
        name: `${request.tools.length > 0 ? "tools" : "chat"} · ${request.model ?? "default model"}`,
        source: "proxy",
      });
      run.messages(request.messages);
      const observer: RequestObserver = {
        onMessage: (message) => run.message(message),
        onCompaction: (before, after, stepIndex) =>
          run.compaction({
            stepIndex,
            tokensBefore: tokensOf(before),
            tokensAfter: tokensOf(after),
            // The proxy's compactor does not say its budget or phase: 0 stands for unknown.
            budgetTokens: 0,
            messagesBefore: before.length,
            messagesAfter: after.length,
            phaseReached: 0,
          }),
        onBackendCall: ({ startedAt, messages, response, error }) =>
          run.exchange(startedAt, {
            durationMs: Math.round((performance.now() - startedAt) * 10) / 10,
            promptTokens: jsonTokens(messages),
            completionTokens: response ? jsonTokens(response) : 0,
            response,
            error:
              error === null
                ? null
                : {
                    name: (error as Error).name ?? "Error",
                    message: (error as Error).message ?? String(error),
                  },
          }),
      };
      stats.observer = observer;
      try {
        const answer = await service.answer(request, signal, stats);
        run.finish("done", {
          result: {
            content: answer.content,
            toolCalls: answer.toolCalls,
            rescues: stats.rescues,
            retries: retriesOf(stats),
            nudges: stats.nudges,
            compactions: stats.compactions,
          },
        });
        return answer;
      } catch (error) {
        run.finish(signal.aborted ? "cancelled" : "failed", { error });
        throw error;
      } finally {
        stats.observer = undefined;
      }
    },
  };
}
