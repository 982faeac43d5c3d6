/**
 * The ideal run's client: each request still goes to the backend, which evaluates its prompt (and
 * generates one token), but the answer is the scenario's next reference call. The run's token
 * counts are then what a perfect model would have cost on that backend, KV cache included.
 */
import { z } from "zod";
import type { ToolSpec } from "../../src/core/tools.ts";
import type { LLMClient, LLMResponse, SendOptions, StreamChunk } from "../../src/core/types.ts";
import { ChunkType } from "../../src/core/types.ts";
import type { EvalScenario } from "../scenarios/scenario.ts";
import { locateInReference } from "../sim-model/position.ts";
import { wireMessageSchema } from "../sim-model/wire.ts";

const historySchema = z.array(wireMessageSchema);

/** The loop asked for more answers than the scenario's reference has calls. */
export class ReferenceExhaustedError extends Error {
  override readonly name = "ReferenceExhaustedError";
}

/**
 * An `LLMClient` that plays `scenario.reference`, one call per request: the step after the last
 * one the history shows done with success, as the sim-model's perfect turn would (a step whose
 * tool failed once is played again). Each request first goes to `inner` with `maxTokens: 1`, so
 * the backend evaluates its prompt and reports it through `SendOptions.onUsage` as usual; the
 * backend's own answer is dropped. OpenAI-shaped histories only (`apiFormat` `openai`).
 * @example
 * const outcome = await runForge({ ...input, client: new ReferenceClient(client, scenario) });
 * // outcome.measurement.evaluatedTokens: what the ideal run cost the backend
 */
export class ReferenceClient implements LLMClient {
  readonly apiFormat: LLMClient["apiFormat"];
  readonly #inner: LLMClient;
  readonly #scenario: EvalScenario;

  constructor(inner: LLMClient, scenario: EvalScenario) {
    this.apiFormat = inner.apiFormat;
    this.#inner = inner;
    this.#scenario = scenario;
  }

  async send(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options: SendOptions = {},
  ): Promise<LLMResponse> {
    const call = this.#nextCall(messages);
    await this.#inner.send(messages, tools, {
      ...options,
      sampling: { ...options.sampling, maxTokens: 1 },
    });
    return [call];
  }

  async *sendStream(
    messages: Record<string, unknown>[],
    tools: ToolSpec[] = [],
    options: SendOptions = {},
  ): AsyncIterable<StreamChunk> {
    yield { type: ChunkType.FINAL, response: await this.send(messages, tools, options) };
  }

  getContextLength(): Promise<number | null> {
    return this.#inner.getContextLength();
  }

  #nextCall(messages: Record<string, unknown>[]): { tool: string; args: Record<string, unknown> } {
    const { reference, id } = this.#scenario;
    const { next } = locateInReference(historySchema.parse(messages), reference);
    const step = reference[next];
    if (!step) {
      throw new ReferenceExhaustedError(
        `${id}: the history already holds all ${reference.length} reference calls and the loop asked for another; the reference does not complete the workflow`,
      );
    }
    return { tool: step.tool, args: step.args };
  }
}
