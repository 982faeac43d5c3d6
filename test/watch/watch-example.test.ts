/** examples/inspect.ts's offline mode: the run reported to a local watch server. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../../examples/inspect.ts";
import { createWatchReporter, startWatchServer } from "../../src/watch/index.ts";

describe("examples/inspect with a watch reporter", () => {
  it("records the run on the watch server: its states, its retry nudge and its result", async () => {
    const watch = await startWatchServer({
      port: 0,
      dir: mkdtempSync(join(tmpdir(), "forge-watch-example-")),
    });
    try {
      const reporter = createWatchReporter({ url: watch.url, name: "inspect-example" });
      await main({ watch: reporter, log: () => {} });
      await reporter.flush();
      const [run] = watch.store.list();
      expect(run?.name).toBe("inspect-example #1");
      expect(run?.runId).toBe(reporter.runId);
      expect(run?.finished).toMatchObject({ outcome: "done", result: "Oslo: 18°C and cloudy" });
      expect(run?.trace.transitions.map((transition) => transition.state)).toEqual(
        expect.arrayContaining(["infer", "validate", "compact", "execute", "review", "done"]),
      );
      expect(run?.trace.messages.map((entry) => entry.message.metadata.type)).toContain("retry_nudge");
      expect(run?.trace.exchanges).toHaveLength(3);
    } finally {
      await watch.close();
    }
  });
});
