/**
 * LlamaCppClient: a GGUF model run in-process by node-llama-cpp, with native grammar-constrained
 * function calling or free generation whose tool calls are rescued from the text.
 */
import { statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { basename } from "node:path";
import type {
  ChatModelFunctions,
  ChatWrapper,
  LLamaChatGenerateResponseOptions,
  LlamaContext,
  LlamaContextSequence,
  LlamaModel,
} from "node-llama-cpp";
import type { ToolSpec } from "../../core/tools.ts";
import {
  ChunkType,
  type LLMClient,
  type LLMResponse,
  type SamplingOverrides,
  type SendOptions,
  type StreamChunk,
  type ToolChoice,
} from "../../core/types.ts";
import { withSamplingOverrides } from "../call-sampling.ts";
import { resolveSampling, type SamplingParams } from "../sampling.ts";
import {
  acquireModel,
  assertModelFile,
  defaultChatWrapper,
  engineError,
  importNodeLlamaCpp,
  type NodeLlamaCpp,
  releaseModel,
} from "./engine.ts";
import { toChatHistory } from "./history.ts";
import { callsPerAnswer, DEFAULT_MAX_TOKENS, endsRepeating } from "./limits.ts";
import { type LlamaCppMode, toLLMResponse } from "./response.ts";
import { toChatModelFunctions } from "./schema.ts";
import { describeFunctions, forceFunctionCall } from "./wrapper.ts";

export { ModelNotFoundError } from "./engine.ts";
export type { LlamaCppMode } from "./response.ts";

/** Options of `LlamaCppClient`; the penalties map to node-llama-cpp's `repeatPenalty.penalty` and `.presencePenalty`. */
export interface LlamaCppClientOptions extends SamplingOverrides {
  /** The GGUF file to run. A missing file throws `ModelNotFoundError` at construction. */
  modelPath: string;
  /** Context size in tokens. Default: the model's training context, at most 8192. */
  contextSize?: number;
  /** Threads for evaluation. Default: the machine's core count (`os.availableParallelism()`). */
  threads?: number;
  /**
   * `"functions"` (default): node-llama-cpp's grammar-constrained function calling in the model's
   * own call format, so a call can only name a known tool with arguments that fit its schema.
   * `"free"`: no grammar; the tools are described in the prompt and calls are rescued from the text.
   */
  mode?: LlamaCppMode;
  /**
   * Functions mode only. `"auto"` (default): the model chooses between text and a call (a call
   * starts when it writes the call prefix of its format). `"required"`: every answer is a call.
   * A call's `SendOptions.toolChoice` wins over it: `"required"` and `{ name }` (that tool alone)
   * force a call through the chat wrapper, `"none"` offers no tools. Free mode cannot force (no
   * grammar): there the choice is ignored.
   */
  toolChoice?: "auto" | "required";
  /**
   * Functions mode only: the most calls in one answer. Default: one, unless a call asks for
   * parallel calls (`SendOptions.parallelToolCalls: true`, which the loop sets when
   * `toolConcurrency` is above 1): then no limit but the token cap. `parallelToolCalls: false` is
   * always one. (node-llama-cpp, left unbounded, starts another call after each call unless the
   * model ends its turn at once, so a small model can repeat one call until the context is full.)
   */
  maxParallelToolCalls?: number;
  /** The chat wrapper; default `"auto"`: node-llama-cpp picks one from the model's metadata and template. */
  chatWrapper?: "auto" | ChatWrapper;
  /** The model's name for the sampling map; default: the GGUF file name without extension. */
  model?: string;
  /** Apply the model card's sampling (see `getSamplingDefaults`); explicit values still win. */
  recommendedSampling?: boolean;
  /** Where informational lines go (the sampling hint). Default `console.info`. */
  logger?: (line: string) => void;
}

/** What `load()` reports about the running engine. */
export interface LlamaCppModelInfo {
  modelPath: string;
  /** Size of the GGUF file in bytes. */
  fileBytes: number;
  parameters: number;
  architecture: string;
  trainContextSize: number;
  contextSize: number;
  threads: number;
  /** The chat wrapper node-llama-cpp chose (or was given), e.g. `"JinjaTemplate"`. */
  chatWrapper: string;
}

/** Token counts and timings of the calls so far (input tokens count only those not reused from the KV cache). */
export interface LlamaCppUsage {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  generationMs: number;
  /** Per call, milliseconds until the first generated token (`null` when none came). */
  timeToFirstTokenMs: (number | null)[];
}

interface Engine {
  module: NodeLlamaCpp;
  model: LlamaModel;
  context: LlamaContext;
  sequence: LlamaContextSequence;
  chatWrapper: ChatWrapper;
  info: LlamaCppModelInfo;
}

interface Listeners {
  onText?: (text: string) => void;
  onToolCallDelta?: (text: string) => void;
}

/**
 * An `LLMClient` that runs a GGUF model in this process through node-llama-cpp (CPU prebuilt
 * binary, one shared model per path). The model loads on first use, or on `load()`; `dispose()`
 * frees it. Each call builds a fresh chat history from `messages` (nothing is remembered between
 * calls) on one context sequence, so a history that grows by appending reuses the KV cache. Calls
 * on one client run one at a time. An answer is bounded: at most `maxTokens` tokens (default
 * 1024), in functions mode one call unless parallel calls are asked for (`maxParallelToolCalls`),
 * and text that repeats one stretch four times in a row is stopped there (`endsRepeating`).
 *
 * Errors: engine failures are `BackendError(500)`; an aborted `signal` rejects with its reason.
 * @example
 * const client = new LlamaCppClient({ modelPath: "models/forge-tiny.gguf", maxTokens: 256 });
 * const runner = new WorkflowRunner({ client, contextManager });
 * await runner.run(workflow, "Weather in Paris?");
 * await client.dispose();
 */
export class LlamaCppClient implements LLMClient {
  readonly apiFormat = "openai" as const;
  readonly modelPath: string;
  readonly mode: LlamaCppMode;
  /** The sampling used for every call, after `recommendedSampling` was applied. */
  readonly sampling: Readonly<SamplingParams>;
  readonly #options: LlamaCppClientOptions;
  #engine: Promise<Engine> | undefined;
  #tail: Promise<unknown> = Promise.resolve();
  readonly #usage: LlamaCppUsage = {
    calls: 0,
    inputTokens: 0,
    outputTokens: 0,
    generationMs: 0,
    timeToFirstTokenMs: [],
  };

  constructor(options: LlamaCppClientOptions) {
    this.#options = options;
    this.modelPath = assertModelFile(options.modelPath);
    this.mode = options.mode ?? "functions";
    this.sampling = resolveSampling({
      model: options.model ?? basename(this.modelPath).replace(/\.gguf$/i, ""),
      recommendedSampling: options.recommendedSampling ?? false,
      explicit: options,
      logger: options.logger ?? ((line) => console.info(line)),
    });
  }

  /** Load the model and create the context now (otherwise the first call does); resolves to what runs. */
  async load(): Promise<LlamaCppModelInfo> {
    return (await this.#load()).info;
  }

  /** Free the context and, when no other client uses it, the model. A later call loads again. */
  async dispose(): Promise<void> {
    const engine = this.#engine;
    this.#engine = undefined;
    if (!engine) return;
    await this.#tail.catch(() => undefined);
    const loaded = await engine.catch(() => null);
    if (!loaded) return;
    await loaded.context.dispose();
    await releaseModel(this.modelPath);
  }

  /** Token counts and timings so far. */
  get usage(): LlamaCppUsage {
    return { ...this.#usage, timeToFirstTokenMs: [...this.#usage.timeToFirstTokenMs] };
  }

  send(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options: SendOptions = {},
  ): Promise<LLMResponse> {
    return this.#generate(messages, tools, options, {});
  }

  async *sendStream(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options: SendOptions = {},
  ): AsyncIterable<StreamChunk> {
    // Our own controller stops the generation when the consumer stops reading early.
    const stop = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
    const pending: StreamChunk[] = [];
    let wake: (() => void) | undefined;
    let settled = false;
    const push = (chunk: StreamChunk): void => {
      pending.push(chunk);
      wake?.();
    };
    const generation = this.#generate(
      messages,
      tools,
      { ...options, signal },
      {
        onText: (text) => push({ type: ChunkType.TEXT_DELTA, content: text }),
        onToolCallDelta: (text) => push({ type: ChunkType.TOOL_CALL_DELTA, content: text }),
      },
    ).finally(() => {
      settled = true;
      wake?.();
    });
    generation.catch(() => undefined);
    try {
      for (;;) {
        const chunk = pending.shift();
        if (chunk) {
          yield chunk;
          continue;
        }
        if (settled) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
      yield { type: ChunkType.FINAL, response: await generation };
    } finally {
      if (!settled) {
        stop.abort(new Error("The stream's consumer stopped reading"));
        await generation.catch(() => undefined);
      }
    }
  }

  /** The context size in use (loads the model when needed). */
  async getContextLength(): Promise<number | null> {
    return (await this.#load()).info.contextSize;
  }

  #load(): Promise<Engine> {
    if (!this.#engine) {
      this.#engine = createEngine(this.modelPath, this.#options);
      this.#engine.catch(() => {
        this.#engine = undefined;
      });
    }
    return this.#engine;
  }

  /** Run `task` after the calls queued before it; a signal aborted while waiting rejects at once. */
  #enqueue<T>(task: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    const run = this.#tail.then(() => {
      signal?.throwIfAborted();
      return task();
    });
    this.#tail = run.catch(() => undefined);
    if (!signal) return run;
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      run.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  }

  #generate(
    messages: Record<string, unknown>[],
    tools: ToolSpec[],
    options: SendOptions,
    listeners: Listeners,
  ): Promise<LLMResponse> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return this.#enqueue(async () => {
      const engine = await this.#load();
      signal?.throwIfAborted();
      const choice = this.#choiceFor(tools, options.toolChoice);
      const functions = choice.offered.length > 0 ? toChatModelFunctions(choice.offered) : undefined;
      const chat = new engine.module.LlamaChat({
        contextSequence: engine.sequence,
        chatWrapper: this.#chatWrapperFor(engine, functions, choice.force),
      });
      const meter = engine.sequence.tokenMeter.getState();
      const started = performance.now();
      let firstToken: number | null = null;
      const markFirstToken = (): void => {
        firstToken ??= performance.now() - started;
      };
      // A text answer that repeats itself is stopped and returned as it is (see endsRepeating).
      const repeating = new AbortController();
      let text = "";
      const watched: Listeners = {
        ...listeners,
        onText: (chunk) => {
          text += chunk;
          if (endsRepeating(text)) repeating.abort(new Error("The answer repeats itself"));
          listeners.onText?.(chunk);
        },
      };
      try {
        const result = await chat.generateResponse(toChatHistory(messages), {
          ...this.#generationOptions(functions, watched, markFirstToken, options),
          signal: signal ? AbortSignal.any([signal, repeating.signal]) : repeating.signal,
          stopOnAbortSignal: true,
        });
        // Stopped by the caller's signal: reject with its reason, not with the text so far.
        signal?.throwIfAborted();
        return toLLMResponse(result, tools, this.mode);
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        throw engineError("node-llama-cpp generation failed", error);
      } finally {
        chat.dispose({ disposeSequence: false });
        const used = engine.sequence.tokenMeter.diff(meter);
        this.#usage.calls += 1;
        this.#usage.inputTokens += used.usedInputTokens;
        this.#usage.outputTokens += used.usedOutputTokens;
        this.#usage.generationMs += performance.now() - started;
        this.#usage.timeToFirstTokenMs.push(firstToken);
      }
    }, signal);
  }

  /**
   * The tools a call offers and whether it forces a call. Functions mode: `"required"` forces a
   * call of any tool, `{ name }` offers that tool alone and forces it, `"none"` offers none. Free
   * mode has no grammar to force with: every tool is described and the choice is ignored.
   */
  #choiceFor(tools: ToolSpec[], toolChoice: ToolChoice | undefined): { offered: ToolSpec[]; force: boolean } {
    const choice = toolChoice ?? this.#options.toolChoice ?? "auto";
    if (this.mode === "free" || tools.length === 0 || choice === "auto")
      return { offered: tools, force: false };
    if (choice === "none") return { offered: [], force: false };
    if (choice === "required") return { offered: tools, force: true };
    const named = tools.filter((tool) => tool.name === choice.name);
    return named.length > 0 ? { offered: named, force: true } : { offered: tools, force: true };
  }

  #chatWrapperFor(engine: Engine, functions: ChatModelFunctions | undefined, force: boolean): ChatWrapper {
    if (!functions) return engine.chatWrapper;
    if (this.mode === "free") return describeFunctions(engine.chatWrapper, functions);
    if (force) return forceFunctionCall(engine.chatWrapper, engine.module.LlamaText);
    return engine.chatWrapper;
  }

  #generationOptions(
    functions: ChatModelFunctions | undefined,
    listeners: Listeners,
    markFirstToken: () => void,
    options: SendOptions,
  ): LLamaChatGenerateResponseOptions<ChatModelFunctions> {
    const { repeatPenalty, presencePenalty, maxTokens, seed, ...basic } = withSamplingOverrides(
      { ...this.sampling, maxTokens: this.#options.maxTokens, seed: this.#options.seed },
      options.sampling,
    );
    const penalties = repeatPenalty !== undefined || presencePenalty !== undefined;
    const sampling = {
      ...basic,
      ...(penalties && {
        repeatPenalty: {
          penalty: repeatPenalty ?? 1,
          ...(presencePenalty !== undefined && { presencePenalty }),
        },
      }),
      // Never unbounded: node-llama-cpp's default generates until the context is full.
      maxTokens: maxTokens ?? DEFAULT_MAX_TOKENS,
      ...(seed !== undefined && { seed }),
      onToken: markFirstToken,
      onTextChunk: (text: string) => {
        markFirstToken();
        if (text.length > 0) listeners.onText?.(text);
      },
    };
    if (!functions || this.mode === "free") return sampling;
    const maxCalls = callsPerAnswer(this.#options.maxParallelToolCalls, options.parallelToolCalls);
    return {
      ...sampling,
      functions,
      documentFunctionParams: true,
      ...(maxCalls !== undefined && { maxParallelFunctionCalls: maxCalls }),
      onFunctionCallParamsChunk: (chunk) => {
        markFirstToken();
        if (chunk.paramsChunk.length > 0) listeners.onToolCallDelta?.(chunk.paramsChunk);
      },
    };
  }
}

async function createEngine(modelPath: string, options: LlamaCppClientOptions): Promise<Engine> {
  const module = await importNodeLlamaCpp();
  const model = await acquireModel(modelPath);
  try {
    const threads = options.threads ?? availableParallelism();
    const context = await model.createContext({
      contextSize: options.contextSize ?? { max: Math.min(model.trainContextSize, 8192) },
      threads,
      sequences: 1,
    });
    const chatWrapper =
      options.chatWrapper === undefined || options.chatWrapper === "auto"
        ? defaultChatWrapper(module, model)
        : options.chatWrapper;
    const info: LlamaCppModelInfo = {
      modelPath,
      fileBytes: statSync(modelPath).size,
      parameters: model.fileInsights.totalParameters,
      architecture: String(model.fileInfo.metadata.general.architecture),
      trainContextSize: model.trainContextSize,
      contextSize: context.contextSize,
      threads: context.idealThreads,
      chatWrapper: chatWrapper.wrapperName,
    };
    return { module, model, context, sequence: context.getSequence(), chatWrapper, info };
  } catch (error) {
    await releaseModel(modelPath);
    throw engineError(`node-llama-cpp could not create a context for ${modelPath}`, error);
  }
}
