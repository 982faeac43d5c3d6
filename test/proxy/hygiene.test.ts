/**
 * Error hygiene and the DNS-rebinding guard, against a local backend on 127.0.0.1 that misbehaves
 * on purpose: a 401/403 that echoes the proxy's backend key never reaches the client, a 429's
 * `Retry-After` does, a `Host` that is not a loopback name (or an allowed one) is refused, and a
 * cross-origin browser POST (`text/plain`, no preflight) is refused when no API key is set.
 */
import { createServer, request as httpRequest, type OutgoingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { isAllowedHost, isAllowedOrigin } from "../../src/proxy/http/host-guard.ts";
import type { RunningProxy } from "../../src/proxy/server.ts";
import {
  type Behaviour,
  type MisbehavingBackend,
  reply,
  startMisbehavingBackend,
} from "./helpers/misbehaving-backend.ts";
import { startTestProxy, weatherToolOpenAI } from "./helpers/proxy-fixture.ts";
import { textCompletion } from "./helpers/scripted-backend.ts";

const BACKEND_KEY = "backend-secret-4f9a2c";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

async function proxyInFrontOf(
  script: Behaviour[],
  options: { apiKey?: string; allowedHosts?: string[] } = {},
): Promise<{ proxy: RunningProxy; backend: MisbehavingBackend }> {
  const backend = await startMisbehavingBackend(script);
  const proxy = await startTestProxy({
    backendUrl: backend.url,
    backend: { apiKey: BACKEND_KEY },
    ...options,
  });
  cleanups.push(async () => {
    await proxy.close();
    await backend.close();
  });
  return { proxy, backend };
}

/** Answers with `status` and a body that echoes the credential it was sent, as some servers do. */
function echoCredential(status: number): Behaviour {
  return (incoming, outgoing) => {
    outgoing.writeHead(status, { "content-type": "application/json" });
    outgoing.end(
      JSON.stringify({ error: { message: `Invalid credential: ${incoming.headers.authorization}` } }),
    );
  };
}

function rateLimited(retryAfter: string): Behaviour {
  return (_incoming, outgoing) => {
    outgoing.writeHead(429, { "content-type": "application/json", "retry-after": retryAfter });
    outgoing.end(JSON.stringify({ error: { message: "slow down", type: "rate_limit_error" } }));
  };
}

const chatWithTools = {
  model: "m",
  messages: [{ role: "user", content: "Weather in Paris?" }],
  tools: [weatherToolOpenAI],
};
const chatWithoutTools = { model: "m", messages: [{ role: "user", content: "Hi" }] };
const anthropicMessage = { model: "m", max_tokens: 50, messages: [{ role: "user", content: "Hi" }] };

function post(proxy: RunningProxy, path: string, body: unknown): Promise<Response> {
  return fetch(`${proxy.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** A raw request with headers fetch would not let a test set (`Host`). */
function rawRequest(
  proxy: RunningProxy,
  options: { method?: string; path: string; headers: OutgoingHttpHeaders; body?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: "127.0.0.1",
        port: proxy.port,
        method: options.method ?? "GET",
        path: options.path,
        headers: options.headers,
        agent: false,
      },
      (incoming) => {
        let body = "";
        incoming.setEncoding("utf8");
        incoming.on("data", (chunk: string) => (body += chunk));
        incoming.on("end", () => resolve({ status: incoming.statusCode ?? 0, body }));
      },
    );
    outgoing.on("error", reject);
    outgoing.end(options.body);
  });
}

describe("backend 401/403", () => {
  for (const status of [401, 403]) {
    it(`a ${status} that echoes the backend key reaches no client, on any route`, async () => {
      const { proxy, backend } = await proxyInFrontOf([
        echoCredential(status),
        echoCredential(status),
        echoCredential(status),
      ]);
      const answers = [
        await post(proxy, "/v1/chat/completions", chatWithTools),
        await post(proxy, "/v1/chat/completions", chatWithoutTools),
        await post(proxy, "/v1/messages", { ...anthropicMessage, tools: [] }),
      ];
      expect(backend.chatRequests).toBe(3);
      for (const answer of answers) {
        const text = await answer.text();
        expect(answer.status).toBe(502);
        expect(text).not.toContain(BACKEND_KEY);
        answer.headers.forEach((value) => {
          expect(value).not.toContain(BACKEND_KEY);
        });
        expect(text).toContain(`refused the proxy's credential (HTTP ${status})`);
      }
    });
  }
});

describe("backend 429", () => {
  it("passes Retry-After through on the forwarded, guarded and Anthropic paths", async () => {
    const { proxy } = await proxyInFrontOf([rateLimited("7"), rateLimited("7"), rateLimited("7")]);
    const forwarded = await post(proxy, "/v1/chat/completions", chatWithoutTools);
    expect(forwarded.status).toBe(429);
    expect(forwarded.headers.get("retry-after")).toBe("7");
    const guarded = await post(proxy, "/v1/chat/completions", chatWithTools);
    expect(guarded.status).toBe(429);
    expect(guarded.headers.get("retry-after")).toBe("7");
    expect((await guarded.json()) as unknown).toMatchObject({
      error: { message: expect.stringContaining("slow down") },
    });
    const anthropic = await post(proxy, "/v1/messages", anthropicMessage);
    expect(anthropic.status).toBe(429);
    expect(anthropic.headers.get("retry-after")).toBe("7");
  });

  it("turns an HTTP-date Retry-After into seconds on the guarded path", async () => {
    const later = new Date(Date.now() + 120_000).toUTCString();
    const { proxy } = await proxyInFrontOf([rateLimited(later)]);
    const guarded = await post(proxy, "/v1/chat/completions", chatWithTools);
    expect(guarded.status).toBe(429);
    const seconds = Number(guarded.headers.get("retry-after"));
    expect(seconds).toBeGreaterThan(100);
    expect(seconds).toBeLessThanOrEqual(120);
  });
});

describe("backend 429 from Ollama and Anthropic-shaped backends", () => {
  for (const format of ["ollama", "anthropic"] as const) {
    it(`passes Retry-After through from a ${format} backend on the guarded path, without retrying`, async () => {
      let posts = 0;
      const server = createServer(async (incoming, outgoing) => {
        for await (const _chunk of incoming) {
          // Drained: every POST is rate limited.
        }
        if (incoming.method !== "POST") {
          outgoing.writeHead(200, { "content-type": "application/json" }).end("{}");
          return;
        }
        posts += 1;
        outgoing.writeHead(429, { "content-type": "application/json", "retry-after": "11" });
        outgoing.end(
          JSON.stringify({ type: "error", error: { type: "rate_limit_error", message: "slow down" } }),
        );
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const proxy = await startTestProxy({ backendUrl: url, backend: { format, defaultModel: "m" } });
      cleanups.push(async () => {
        await proxy.close();
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      });
      const answer = await post(proxy, "/v1/chat/completions", chatWithTools);
      expect(answer.status).toBe(429);
      expect(answer.headers.get("retry-after")).toBe("11");
      // The proxy's clients never retry: the caller's own client decides (docs/proxy.md).
      expect(posts).toBe(1);
    });
  }
});

describe("Host allow-list", () => {
  it("refuses a Host that is not a loopback name with 421, before the backend or health is reached", async () => {
    const { proxy, backend } = await proxyInFrontOf([reply(textCompletion("never"))]);
    for (const path of ["/health", "/forge/health", "/v1/models"]) {
      const answer = await rawRequest(proxy, { path, headers: { host: `attacker.example:${proxy.port}` } });
      expect(answer.status).toBe(421);
      expect(answer.body).toContain("--allow-host");
    }
    const chat = await rawRequest(proxy, {
      method: "POST",
      path: "/v1/chat/completions",
      headers: { host: "attacker.example", "content-type": "application/json" },
      body: JSON.stringify(chatWithoutTools),
    });
    expect(chat.status).toBe(421);
    expect(backend.chatRequests).toBe(0);
  });

  it("serves localhost, 127.0.0.1 and [::1] with the port", async () => {
    const { proxy } = await proxyInFrontOf([]);
    for (const host of [
      `localhost:${proxy.port}`,
      `127.0.0.1:${proxy.port}`,
      `[::1]:${proxy.port}`,
      "LOCALHOST",
    ]) {
      expect((await rawRequest(proxy, { path: "/v1/models", headers: { host } })).status).toBe(200);
    }
  });

  it("serves the names given with --allow-host, by name or by name and port", async () => {
    const { proxy } = await proxyInFrontOf([], { allowedHosts: ["proxy.lan", "other.lan:1"] });
    const status = async (host: string) =>
      (await rawRequest(proxy, { path: "/v1/models", headers: { host } })).status;
    expect(await status(`proxy.lan:${proxy.port}`)).toBe(200);
    expect(await status(`other.lan:${proxy.port}`)).toBe(421);
    expect(await status("other.lan:1")).toBe(200);
    expect(await status("evil.proxy.lan")).toBe(421);
  });
});

describe("Origin check without --api-key", () => {
  const textPlainPost = (proxy: RunningProxy, origin: string | undefined) =>
    rawRequest(proxy, {
      method: "POST",
      path: "/v1/chat/completions",
      headers: {
        host: `127.0.0.1:${proxy.port}`,
        "content-type": "text/plain",
        ...(origin !== undefined && { origin }),
      },
      body: JSON.stringify(chatWithoutTools),
    });

  it("refuses a cross-origin text/plain POST with 403 before it reaches the backend", async () => {
    const { proxy, backend } = await proxyInFrontOf([]);
    for (const origin of ["https://attacker.example", "null", `http://localhost:${proxy.port + 1}`]) {
      const answer = await textPlainPost(proxy, origin);
      expect(answer.status).toBe(403);
      expect(answer.body).toContain("Cross-origin request");
    }
    expect(backend.chatRequests).toBe(0);
  });

  it("serves a same-origin request and a request without Origin", async () => {
    const { proxy, backend } = await proxyInFrontOf([
      reply(textCompletion("one")),
      reply(textCompletion("two")),
    ]);
    expect((await textPlainPost(proxy, `http://127.0.0.1:${proxy.port}`)).status).toBe(200);
    expect((await textPlainPost(proxy, undefined)).status).toBe(200);
    expect(backend.chatRequests).toBe(2);
  });

  it("leaves browsers to the API key when one is set", async () => {
    const { proxy } = await proxyInFrontOf([reply(textCompletion("keyed"))], { apiKey: "proxy-key" });
    const headers = { host: `127.0.0.1:${proxy.port}`, origin: "https://app.example" };
    expect((await rawRequest(proxy, { path: "/v1/models", headers })).status).toBe(401);
    const keyed = await rawRequest(proxy, {
      path: "/v1/models",
      headers: { ...headers, "x-api-key": "proxy-key" },
    });
    expect(keyed.status).toBe(200);
  });
});

describe("isAllowedHost / isAllowedOrigin", () => {
  it("accepts loopback names with or without a port and nothing that merely contains one", () => {
    expect(isAllowedHost("localhost", [])).toBe(true);
    expect(isAllowedHost("127.0.0.1:8081", [])).toBe(true);
    expect(isAllowedHost("[::1]:8081", [])).toBe(true);
    for (const host of ["localhost.attacker.example", "127.0.0.1.nip.io", "attacker.example", "", "a:b:c"]) {
      expect(isAllowedHost(host, [])).toBe(false);
    }
    expect(isAllowedHost("anything.example", ["*"])).toBe(true);
  });

  it("accepts an origin that is the request's own, or an allowed host's", () => {
    expect(isAllowedOrigin("http://127.0.0.1:8081", "127.0.0.1:8081", [])).toBe(true);
    expect(isAllowedOrigin("http://localhost:3000", "127.0.0.1:8081", [])).toBe(false);
    expect(isAllowedOrigin("http://localhost:3000", "127.0.0.1:8081", ["localhost:3000"])).toBe(true);
    expect(isAllowedOrigin("null", "127.0.0.1:8081", [])).toBe(false);
    expect(isAllowedOrigin("file://", "127.0.0.1:8081", [])).toBe(false);
  });
});
