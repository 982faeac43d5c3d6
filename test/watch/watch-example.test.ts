/** examples/inspect.ts: its offline mode (the run reported to a local watch server) and its loopback Stately bridge. */
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { main, startLoopbackInspectorBridge } from "../../examples/inspect.ts";
import { createWatchReporter, startWatchServer } from "../../src/watch/index.ts";

describe("examples/inspect with a watch reporter", () => {
  it("records the run on the watch server: its states, its retry nudge and its result", async () => {
    const watch = await startWatchServer({
      port: 0,
      dir: mkdtempSync(join(tmpdir(), "forge-watch-example-")),
    });
    try {
      const reporter = createWatchReporter({ url: watch.tokenUrl, name: "inspect-example" });
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

describe("examples/inspect's Stately bridge", () => {
  it("listens on 127.0.0.1 only, on the port asked for", async () => {
    const bridge = startLoopbackInspectorBridge({ port: 0, autoOpen: false });
    try {
      await vi.waitFor(() => expect(bridge.address()).not.toBeNull());
      expect(bridge.address()?.address).toBe("127.0.0.1");
      const port = bridge.address()?.port as number;
      await expect(fetch(`http://127.0.0.1:${port}/`).then((response) => response.status)).resolves.toBe(200);
      // The patch is gone: a server started afterwards binds as Node would by default.
      const other = createServer();
      await new Promise<void>((resolve) => other.listen(0, resolve));
      expect((other.address() as AddressInfo).address).not.toBe("127.0.0.1");
      other.close();
    } finally {
      bridge.stop();
    }
  });
});
