/** The `RunQueue` contract on BullMQ over a real redis-server on 127.0.0.1, started by the test. */
import { createBullmqQueue } from "../../../src/queue/index.ts";
import { startTestRedisServer } from "../../helpers/redis-server.ts";
import { describeBullmqContract } from "./bullmq-engine.ts";

describeBullmqContract("Redis", startTestRedisServer, (url, options) =>
  createBullmqQueue({ connection: { url }, ...options }),
);
