/** Port checks before spawning a server: is a port free, which one is, and who holds a taken one. */
import { createServer } from "node:net";

/** Whether nothing listens on `host:port` (tries to listen there for a moment). */
export function isPortFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port on `host` that was free a moment ago (the kernel's pick). */
export function findFreePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A short description of what answers on a taken port: a llama-server (with its model) when its
 * `/props` answers, else `null`.
 */
export async function describePortOccupant(baseUrl: string): Promise<string | null> {
  try {
    const response = await fetch(`${baseUrl}/props`, { signal: AbortSignal.timeout(1_000) });
    if (!response.ok) return null;
    const props = (await response.json()) as { model_path?: unknown };
    return typeof props.model_path === "string" ? `a llama-server running ${props.model_path}` : null;
  } catch {
    return null;
  }
}
