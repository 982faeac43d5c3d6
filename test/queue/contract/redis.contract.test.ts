/** The `RunQueue` contract on BullMQ over a real redis-server on 127.0.0.1, started by the test. */
import { afterAll } from "vitest";
import { createBullmqQueue } from "../../../src/queue/index.ts";
import { beforeAllOrFail } from "../../helpers/before-all-or-fail.ts";
import { startTestRedisServer, type TestRedisServer } from "../../helpers/redis-server.ts";
import { bullmqContractEngine } from "./bullmq-engine.ts";
import { describeRunQueueContract } from "./run-queue-contract.ts";

let redis: TestRedisServer | undefined;
beforeAllOrFail(async () => {
  redis = await startTestRedisServer();
}, 60_000);
afterAll(async () => {
  await redis?.stop();
});

describeRunQueueContract(
  "Redis",
  bullmqContractEngine((options) => {
    if (!redis) throw new Error("redis-server was not started");
    return createBullmqQueue({ connection: { url: redis.url }, ...options });
  }),
);
