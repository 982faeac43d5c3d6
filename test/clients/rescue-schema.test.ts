/**
 * OpenAICompatibleClient hands rescue the offered tools' specs, so Qwen-Coder values written as
 * text are converted by their JSON Schemas: in prompt mode and on llama-server's parse failure.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OpenAICompatibleClient } from "../../src/clients/openai/compatible-client.ts";
import { toolSpecFromJsonSchema } from "../../src/core/tools.ts";
import { CHAT, completion, errorBody } from "./helpers/openai-shapes.ts";
import { json, ReplayServer } from "./helpers/replay-server.ts";

let server: ReplayServer;

beforeEach(async () => {
  server = await ReplayServer.start();
});

afterEach(async () => {
  await server.close();
});

const lookup = toolSpecFromJsonSchema("lookup", "Look up a postal code", {
  type: "object",
  properties: { zip: { type: "string" }, limit: { type: "integer" } },
  required: ["zip", "limit"],
});
const history = [{ role: "user", content: "Look up 02134" }];
const QWEN_CODER =
  "<tool_call>\n<function=lookup>\n<parameter=zip>\n02134\n</parameter>\n<parameter=limit>\n10\n</parameter>\n</function>\n</tool_call>";
const expected = [{ tool: "lookup", args: { zip: "02134", limit: 10 } }];

function client(mode: "native" | "prompt") {
  return new OpenAICompatibleClient({ baseUrl: `${server.url}/v1`, mode, retries: 0, logger: () => {} });
}

describe("Qwen-Coder values by the tools' schemas", () => {
  it("in prompt mode", async () => {
    server.reply(CHAT, json(completion({ content: QWEN_CODER })));
    expect(await client("prompt").send(history, [lookup])).toEqual(expected);
  });

  it("in a llama-server 'Failed to parse input' answer", async () => {
    server.reply(
      CHAT,
      json(errorBody(500, `Failed to parse input at pos 0: ${QWEN_CODER}`), { status: 500 }),
    );
    expect(await client("native").send(history, [lookup])).toEqual(expected);
  });
});
