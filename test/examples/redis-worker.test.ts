import { describe, expect, it } from "vitest";
import { main } from "../../examples/redis-worker.ts";

describe("examples/redis-worker", () => {
  it("works an enqueued run with the registry's workflow (an embedded queue without FORGE_QUEUE)", async () => {
    const lines: string[] = [];
    expect(await main((line) => lines.push(line), {})).toBe("Lisbon: 22°C and sunny");
    expect(lines).toEqual([expect.stringMatching(/^weather-[0-9a-z]+: "Lisbon: 22°C and sunny"$/)]);
  });
});
