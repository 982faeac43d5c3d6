/**
 * The in-process node-llama-cpp engine, shared: one `Llama` per process and one loaded model per
 * GGUF path however many clients use it. node-llama-cpp is imported on first use, so importing
 * the library stays cheap for callers that never run a model in-process.
 */
import { existsSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import type { ChatWrapper, Llama, LlamaModel } from "node-llama-cpp";
import { BackendError, ForgeError } from "../../core/errors.ts";
import { importPeers, type OptionalPeer, OptionalPeerMissingError } from "../../core/optional-peer.ts";

/** The node-llama-cpp module, as loaded on first use. */
export type NodeLlamaCpp = typeof import("node-llama-cpp");

/** The GGUF file a client was given does not exist (or is not a file). */
export class ModelNotFoundError extends ForgeError {
  readonly modelPath: string;
  constructor(modelPath: string) {
    super(
      `Model file not found: ${modelPath}. Pass the path of a GGUF file (for example models/forge-tiny.gguf) as modelPath.`,
    );
    this.modelPath = modelPath;
  }
}

/** Throws `ModelNotFoundError` unless `modelPath` names an existing file; returns its absolute path. */
export function assertModelFile(modelPath: string): string {
  const absolute = resolve(modelPath);
  if (!existsSync(absolute) || !statSync(absolute).isFile()) throw new ModelNotFoundError(modelPath);
  return absolute;
}

let modulePromise: Promise<NodeLlamaCpp> | undefined;
let llamaPromise: Promise<Llama> | undefined;
const models = new Map<string, { model: Promise<LlamaModel>; users: number }>();

/** node-llama-cpp, an optional peer. */
const NODE_LLAMA_CPP: OptionalPeer = { name: "node-llama-cpp", major: 3 };

/**
 * Thrown when node-llama-cpp, an optional peer dependency that only `forge-guardrails/llama-cpp`
 * needs, is not installed.
 */
export class NodeLlamaCppMissingError extends OptionalPeerMissingError {
  constructor(options?: ErrorOptions) {
    super(
      [NODE_LLAMA_CPP],
      [NODE_LLAMA_CPP.name],
      "LlamaCppClient runs GGUF models in process with it",
      options,
    );
  }
}

/**
 * The node-llama-cpp module (imported once; a failed import is retried on the next call).
 *
 * @throws {NodeLlamaCppMissingError} when the package is not installed.
 */
export function importNodeLlamaCpp(
  importModule: () => Promise<NodeLlamaCpp> = () => import("node-llama-cpp"),
): Promise<NodeLlamaCpp> {
  modulePromise ??= importPeers(
    [{ ...NODE_LLAMA_CPP, load: importModule }],
    (_missing, cause) => new NodeLlamaCppMissingError({ cause }),
  ).then(
    ([module]) => module,
    (error: unknown) => {
      modulePromise = undefined;
      throw error;
    },
  );
  return modulePromise;
}

/**
 * The process's `Llama`: the prebuilt CPU binary (never compiled from source here), with as many
 * threads as the machine has cores; llama.cpp's own logging limited to errors.
 */
export function getSharedLlama(): Promise<Llama> {
  llamaPromise ??= importNodeLlamaCpp().then((module) =>
    module.getLlama({
      gpu: false,
      build: "never",
      maxThreads: availableParallelism(),
      logLevel: module.LlamaLogLevel.error,
    }),
  );
  llamaPromise.catch(() => {
    llamaPromise = undefined;
  });
  return llamaPromise;
}

/**
 * The loaded model at `modelPath` (absolute), loading it when no client holds it. Every call must
 * be matched by one `releaseModel`. Load failures are `BackendError(500)` with the engine's message.
 */
export function acquireModel(modelPath: string): Promise<LlamaModel> {
  let entry = models.get(modelPath);
  if (!entry) {
    const model = getSharedLlama()
      .then((llama) => llama.loadModel({ modelPath }))
      .catch((error: unknown) => {
        models.delete(modelPath);
        throw engineError(`node-llama-cpp could not load ${modelPath}`, error);
      });
    entry = { model, users: 0 };
    models.set(modelPath, entry);
  }
  entry.users += 1;
  return entry.model;
}

/** Give back a model taken with `acquireModel`; the last user's release unloads it. */
export async function releaseModel(modelPath: string): Promise<void> {
  const entry = models.get(modelPath);
  if (!entry) return;
  entry.users -= 1;
  if (entry.users > 0) return;
  models.delete(modelPath);
  const model = await entry.model.catch(() => null);
  await model?.dispose();
}

const chatWrappers = new WeakMap<LlamaModel, ChatWrapper>();

/**
 * The chat wrapper node-llama-cpp picks for `model` from its metadata and chat template, worked out
 * once per loaded model: checking a Jinja template against the built-in wrappers takes seconds.
 */
export function defaultChatWrapper(module: NodeLlamaCpp, model: LlamaModel): ChatWrapper {
  let wrapper = chatWrappers.get(model);
  if (!wrapper) {
    wrapper = module.resolveChatWrapper(model);
    chatWrappers.set(model, wrapper);
  }
  return wrapper;
}

/** An engine failure as a `BackendError(500)` whose body is the engine's message. */
export function engineError(context: string, error: unknown): BackendError {
  if (error instanceof BackendError) return error;
  const detail = error instanceof Error ? error.message : String(error);
  return new BackendError(500, detail, `${context}: ${detail}`, { cause: error });
}
