import { describe, expect, it } from "vitest";
import { main } from "../../examples/sdk-through-proxy.ts";

describe("examples/sdk-through-proxy", () => {
  it("gives the OpenAI SDK a clean tool call rescued from the scripted model's text", async () => {
    const calls = await main(() => {}, {});
    expect(calls).toEqual([
      expect.objectContaining({
        type: "function",
        function: { name: "get_weather", arguments: '{"city":"Paris"}' },
      }),
    ]);
  });
});
