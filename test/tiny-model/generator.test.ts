/**
 * forge-tiny's Python generator (tools/tiny-model/forge_gen.py) renders a conversation byte for
 * byte as each backend shows it to the model: the "library" variant as llama-server's
 * `/apply-template` renders the OpenAI request the library sends, the "llamacpp" variant as the
 * repo's LlamaCppClient path renders it through node-llama-cpp (the GGUF's own Jinja template, the
 * tools converted by `toChatModelFunctions`, the history by `toChatHistory`). Both run against the
 * tokenizer fixture, which carries forge-tiny's chat template.
 */
import type { ChatHistoryItem, LlamaModel } from "node-llama-cpp";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  acquireModel,
  defaultChatWrapper,
  importNodeLlamaCpp,
  releaseModel,
} from "../../src/clients/llama-cpp/engine.ts";
import { toChatHistory } from "../../src/clients/llama-cpp/history.ts";
import { toChatModelFunctions } from "../../src/clients/llama-cpp/schema.ts";
import { defineTool, type ToolSpec, toOpenAITool } from "../../src/core/tools.ts";
import { beforeAllOrFail } from "../helpers/before-all-or-fail.ts";
import { type Sample, type SampleTool, sampleConversations } from "../helpers/forge-gen.ts";
import { startTestLlamaServer, type TestLlamaServer } from "../helpers/llama-server-process.ts";
import { ensureForgeTinyFixture } from "../helpers/test-model.ts";

const LIBRARY_CONVERSATIONS = 200;
const LLAMACPP_CONVERSATIONS = 30;
/** Appended as a last user message and cut off again, so the template closes every turn. */
const END_MARKER = "END-OF-SYNTHETIC-CONVERSATION";
const END_TURN = `<|im_start|>user\n${END_MARKER}`;
/** The generation prompt after the last turn. */
const ASSISTANT_PROMPT = "<|im_start|>assistant\n";

/** The library-form parameters the generator writes: strings, enums and integers, some optional. */
const LibraryParametersSchema = z.strictObject({
  type: z.literal("object"),
  properties: z.record(
    z.string(),
    z.union([
      z.strictObject({ type: z.literal("string"), description: z.string().optional() }),
      z.strictObject({ type: z.literal("string"), enum: z.array(z.string()).nonempty() }),
      z.strictObject({ type: z.literal("integer"), minimum: z.number(), maximum: z.number() }),
    ]),
  ),
  required: z.array(z.string()),
});

/**
 * The zod tool a library user would write for a generated tool: the node-llama-cpp side is built
 * from it the way LlamaCppClient builds it, not from the generator's own llamacpp-form JSON.
 */
function toolSpecOf(tool: SampleTool): ToolSpec {
  const parameters = LibraryParametersSchema.parse(tool.function.parameters);
  const shape: Record<string, z.ZodType> = {};
  for (const [key, property] of Object.entries(parameters.properties)) {
    let field: z.ZodType;
    if ("enum" in property) field = z.enum(property.enum);
    else if (property.type === "integer") field = z.number().int();
    else field = property.description === undefined ? z.string() : z.string().describe(property.description);
    shape[key] = parameters.required.includes(key) ? field : field.optional();
  }
  return defineTool({
    name: tool.function.name,
    description: tool.function.description,
    parameters: z.object(shape),
    execute: () => "",
  }).spec;
}

/** The messages with the end marker after them, and a render cut back at the marker. */
function withEndMarker(messages: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  return [...messages, { role: "user", content: END_MARKER }];
}

function cutAtEndMarker(rendered: string): string {
  const cut = rendered.lastIndexOf(END_TURN);
  if (cut < 0) throw new Error(`end marker not in the render: ${rendered.slice(-200)}`);
  return rendered.slice(0, cut);
}

let modelPath = "";
let library: Sample[] = [];
let llamacpp: Sample[] = [];

beforeAllOrFail(async () => {
  [modelPath, library, llamacpp] = await Promise.all([
    ensureForgeTinyFixture(),
    sampleConversations({ count: LIBRARY_CONVERSATIONS, seed: 31_337, variant: "library" }),
    sampleConversations({ count: LLAMACPP_CONVERSATIONS, seed: 4_242, variant: "llamacpp" }),
  ]);
}, 900_000);

describe("forge_gen.py's library variant", () => {
  let server: TestLlamaServer | undefined;
  beforeAllOrFail(async () => {
    server = await startTestLlamaServer({ modelPath, threads: 1, ctx: 512 });
  }, 900_000);
  afterAll(() => server?.stop());

  async function applyTemplate(sample: Sample): Promise<string> {
    const response = await fetch(`${server?.baseUrl}/apply-template`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: withEndMarker(sample.messages ?? []), tools: sample.tools }),
    });
    if (!response.ok) throw new Error(`/apply-template: ${response.status} ${await response.text()}`);
    return cutAtEndMarker(((await response.json()) as { prompt: string }).prompt);
  }

  it("writes each tool as the library's toOpenAITool writes the same zod tool, key order included", () => {
    const tools = library.flatMap((sample) => sample.tools ?? []);
    expect(tools.length).toBeGreaterThan(LIBRARY_CONVERSATIONS);
    for (const tool of tools) {
      expect(JSON.stringify(toOpenAITool(toolSpecOf(tool)))).toBe(JSON.stringify(tool));
    }
  });

  it(`renders ${LIBRARY_CONVERSATIONS} conversations as llama-server's /apply-template does`, async () => {
    const different: { conversation: number; at: number; python: string; llamaServer: string }[] = [];
    for (const [index, sample] of library.entries()) {
      const expected = await applyTemplate(sample);
      const actual = sample.text ?? "";
      if (actual === expected) continue;
      let at = 0;
      while (actual[at] === expected[at]) at++;
      different.push({
        conversation: index,
        at,
        python: actual.slice(Math.max(0, at - 60), at + 60),
        llamaServer: expected.slice(Math.max(0, at - 60), at + 60),
      });
    }
    expect(different).toEqual([]);
    // The samples exercise what the template has to get right.
    const texts = library.map((sample) => sample.text ?? "");
    expect(texts.some((text) => text.includes("<tool_response>\n[ToolError]"))).toBe(true);
    expect(texts.some((text) => text.includes('{"type": "string", "enum": ['))).toBe(true);
    expect(texts.some((text) => /[^ -~\s]/.test(text))).toBe(true); // non-ASCII kept as UTF-8
  }, 120_000);
});

describe("forge_gen.py's llamacpp variant", () => {
  let model: LlamaModel | undefined;
  beforeAllOrFail(async () => {
    model = await acquireModel(modelPath);
  }, 120_000);
  afterAll(() => releaseModel(modelPath));

  /**
   * The context LlamaChat.generateResponse renders for the conversation's messages and tools.
   * A conversation that ends in tool results is the prompt of the model's next turn, as the
   * client sends it (node-llama-cpp adds the generation prompt); one that ends in a text answer
   * gets the end marker after it, so the answer's turn is closed.
   */
  async function renderWithNodeLlamaCpp(sample: Sample): Promise<string> {
    const module = await importNodeLlamaCpp();
    const wrapper = defaultChatWrapper(module, model as LlamaModel);
    const specs = (sample.libraryTools ?? []).map(toolSpecOf);
    const messages = sample.messages ?? [];
    const midTurn = messages.at(-1)?.role === "tool";
    const history: ChatHistoryItem[] = toChatHistory(midTurn ? messages : withEndMarker(messages));
    // LlamaChat's ensureLastHistoryItemIsModel.
    if (history.at(-1)?.type !== "model") history.push({ type: "model", response: [] });
    const state = wrapper.generateContextState({
      chatHistory: history,
      availableFunctions: toChatModelFunctions(specs),
      documentFunctionParams: true,
    });
    const rendered = state.contextText.toString();
    if (!midTurn) return cutAtEndMarker(rendered);
    if (!rendered.endsWith(ASSISTANT_PROMPT))
      throw new Error(`no generation prompt: ${rendered.slice(-200)}`);
    return rendered.slice(0, -ASSISTANT_PROMPT.length);
  }

  it("renders through node-llama-cpp's own template (the wrapper LlamaCppClient picks)", async () => {
    const module = await importNodeLlamaCpp();
    expect(defaultChatWrapper(module, model as LlamaModel).wrapperName).toBe("JinjaTemplate");
  });

  it(`renders ${LLAMACPP_CONVERSATIONS} conversations as node-llama-cpp does for LlamaCppClient`, async () => {
    const different: { conversation: number; at: number; python: string; nodeLlamaCpp: string }[] = [];
    for (const [index, sample] of llamacpp.entries()) {
      const expected = await renderWithNodeLlamaCpp(sample);
      const actual = sample.text ?? "";
      if (actual === expected) continue;
      let at = 0;
      while (actual[at] === expected[at]) at++;
      different.push({
        conversation: index,
        at,
        python: actual.slice(Math.max(0, at - 60), at + 60),
        nodeLlamaCpp: expected.slice(Math.max(0, at - 60), at + 60),
      });
    }
    expect(different).toEqual([]);
    const texts = llamacpp.map((sample) => sample.text ?? "");
    expect(texts.every((text) => text.includes('"additionalProperties": false'))).toBe(true);
    expect(texts.some((text) => text.includes('{"enum": ['))).toBe(true);
    // Both endings: a closed text answer and a turn that stops after tool results.
    expect(llamacpp.some((sample) => sample.messages?.at(-1)?.role === "tool")).toBe(true);
    expect(llamacpp.some((sample) => sample.messages?.at(-1)?.role === "assistant")).toBe(true);
  }, 120_000);
});
